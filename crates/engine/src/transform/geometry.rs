//! The ops that move pixels: rotation and elastic deformation (both by sampling the
//! batch through a per-sample grid), horizontal flip, random crop and resize. Each takes
//! its per-sample parameters explicitly and works on a whole float `[B, C, H, W]` batch
//! with libtorch, matching torchvision's tensor transforms.

use tch::Tensor;

use super::blur::{check_reflect_pad, gaussian_kernel, reflect_blur_matrix};
use crate::error::{Error, Result};

/// `grid_sampler`'s interpolation modes.
const BILINEAR: i64 = 0;
const NEAREST: i64 = 1;
/// `grid_sampler`'s padding mode that fills outside the image with zeros.
const ZEROS: i64 = 0;
/// torchvision samples grids with `align_corners=False`: -1 and 1 are the outer edges of
/// the border pixels.
const ALIGN_CORNERS: bool = false;

/// Rotates sample `i` counter-clockwise by `angles_deg[i]` about its centre
/// (torchvision's `rotate`: nearest neighbour, zero fill, same size).
pub(super) fn rotate(x: &Tensor, angles_deg: &[f64]) -> Result<Tensor> {
    let (b, c, h, w) = x.size4()?;
    let theta = Tensor::f_from_slice(&rotation_thetas(angles_deg, h, w))?.f_view([b, 2, 3])?;
    let grid = Tensor::f_affine_grid_generator(&theta, [b, c, h, w], ALIGN_CORNERS)?;
    Ok(x.f_grid_sampler(&grid, NEAREST, ZEROS, ALIGN_CORNERS)?)
}

/// For each angle, the `[2, 3]` matrix that maps an output position to the input position
/// it samples, in the normalized coordinates `affine_grid` uses.
pub(super) fn rotation_thetas(angles_deg: &[f64], h: i64, w: i64) -> Vec<f32> {
    // Normalized coordinates stretch a non-square image into a square, so the rotation's
    // cross terms carry the aspect ratio.
    let aspect = w as f64 / h as f64;
    angles_deg
        .iter()
        .flat_map(|angle| {
            let (sin, cos) = angle.to_radians().sin_cos();
            [cos, -sin / aspect, 0.0, sin * aspect, cos, 0.0]
        })
        .map(|v| v as f32)
        .collect()
}

/// torchvision's `ElasticTransform` with the per-sample `noise` given: `[B, 2, H, W]`
/// values in [-1, 1) (each sample's x noise, then its y noise), smoothed by a Gaussian of
/// `sigma`, scaled by `alpha`, added to the identity grid and sampled bilinearly with
/// zero fill.
pub(super) fn elastic(x: &Tensor, noise: &[f32], alpha: f64, sigma: f64) -> Result<Tensor> {
    let (b, _, h, w) = x.size4()?;
    let noise = Tensor::f_from_slice(noise)?.f_view([b, 2, h, w])?;
    let displacement = displacement_field(&noise, alpha, sigma)?;
    let identity = Tensor::f_from_slice(&identity_grid(h, w))?.f_view([1, h, w, 2])?;
    let grid = displacement.f_add(&identity)?;
    Ok(x.f_grid_sampler(&grid, BILINEAR, ZEROS, ALIGN_CORNERS)?)
}

/// Smooths and scales a `[B, 2, H, W]` noise field into a `[B, H, W, 2]` displacement in
/// normalized coordinates.
pub(super) fn displacement_field(noise: &Tensor, alpha: f64, sigma: f64) -> Result<Tensor> {
    let (_, _, h, w) = noise.size4()?;
    let taps = elastic_kernel_size(sigma);
    // Checked before the kernel is built, as a huge sigma would ask for a huge kernel.
    check_reflect_pad((taps / 2) as i64, h, w)?;
    let kernel = gaussian_kernel(taps, sigma);
    // The kernels are wide (41 taps for sigma 5) and the images small, so blurring as
    // `columns · noise · rowsᵀ` with reflect padding folded into the matrices beats a
    // padded convolution by far.
    let columns = Tensor::f_from_slice(&reflect_blur_matrix(h, &kernel)?)?.f_view([h, h])?;
    let rows = Tensor::f_from_slice(&reflect_blur_matrix(w, &kernel)?)?.f_view([1, w, w])?;
    // torchvision scales dx by alpha / height and dy by alpha / width (sic). Folding the
    // scales into the row matrices saves a pass over the field.
    let scales = Tensor::f_from_slice(&[(alpha / h as f64) as f32, (alpha / w as f64) as f32])?
        .f_view([2, 1, 1])?;
    let rows_t = rows.f_mul(&scales)?.f_transpose(1, 2)?;
    let field = columns.f_matmul(noise)?.f_matmul(&rows_t)?;
    Ok(field.f_permute([0, 2, 3, 1])?)
}

/// torchvision's elastic kernel size: `int(8 * sigma + 1)`, made odd.
pub(super) fn elastic_kernel_size(sigma: f64) -> usize {
    let size = (8.0 * sigma + 1.0) as usize;
    size | 1
}

/// The grid that samples every pixel at its own centre: `[H, W, 2]` (x, y) pairs in
/// normalized coordinates, as torchvision's `_create_identity_grid`.
fn identity_grid(h: i64, w: i64) -> Vec<f32> {
    let centre = |i: i64, n: i64| ((2 * i + 1 - n) as f64 / n as f64) as f32;
    (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| [centre(x, w), centre(y, h)]))
        .collect()
}

/// Mirrors left to right the samples whose `flips` entry is true.
pub(super) fn flip(x: &Tensor, flips: &[bool]) -> Result<Tensor> {
    if flips.iter().all(|&f| !f) {
        return Ok(x.shallow_clone());
    }
    let mirrored = x.f_flip([3])?;
    if flips.iter().all(|&f| f) {
        return Ok(mirrored);
    }
    let mask = Tensor::f_from_slice(flips)?.f_view([flips.len() as i64, 1, 1, 1])?;
    Ok(mirrored.f_where_self(&mask, x)?)
}

/// How far a `size` crop can move on each axis (`[rows, columns]`) once an `h`×`w` image
/// is zero-padded by `padding`; an error if the crop does not fit.
pub(super) fn crop_room(h: i64, w: i64, size: [usize; 2], padding: usize) -> Result<[usize; 2]> {
    let padded = [h, w].map(|side| (side as usize).saturating_add(padding.saturating_mul(2)));
    match (
        padded[0].checked_sub(size[0]),
        padded[1].checked_sub(size[1]),
    ) {
        (Some(rows), Some(columns)) => Ok([rows, columns]),
        _ => Err(Error::value(format!(
            "crop: size {}×{} is larger than the {}×{} image padded by {padding} ({}×{})",
            size[0], size[1], h, w, padded[0], padded[1]
        ))),
    }
}

/// torchvision's `RandomCrop` with the corners given: zero-pads by `padding`, then cuts
/// a `size` window whose top-left corner in the padded image is `corners[i]`.
pub(super) fn crop(
    x: &Tensor,
    corners: &[[i64; 2]],
    size: [usize; 2],
    padding: usize,
) -> Result<Tensor> {
    let p = padding as i64;
    let padded = if p == 0 {
        x.shallow_clone()
    } else {
        x.f_constant_pad_nd([p, p, p, p])?
    };
    let (b, c, _, padded_w) = padded.size4()?;
    let [height, width] = [size[0] as i64, size[1] as i64];
    // Two gathers with per-sample index ranges: rows first, then columns of those rows.
    let rows = window_indices(corners.iter().map(|c| c[0]), height);
    let rows = Tensor::f_from_slice(&rows)?
        .f_view([b, 1, height, 1])?
        .f_expand([b, c, height, padded_w], false)?;
    let band = padded.f_gather(2, &rows, false)?;
    let columns = window_indices(corners.iter().map(|c| c[1]), width);
    let columns = Tensor::f_from_slice(&columns)?
        .f_view([b, 1, 1, width])?
        .f_expand([b, c, height, width], false)?;
    Ok(band.f_gather(3, &columns, false)?)
}

/// `start..start + len` for each start, one after another.
fn window_indices(starts: impl Iterator<Item = i64>, len: i64) -> Vec<i64> {
    starts.flat_map(|start| start..start + len).collect()
}

/// Bilinear resize of the whole batch to `size` `[height, width]` (no antialiasing).
pub(super) fn resize(x: &Tensor, size: [usize; 2]) -> Result<Tensor> {
    let out = [size[0] as i64, size[1] as i64];
    Ok(x.f_upsample_bilinear2d(out, ALIGN_CORNERS, None, None)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    const CPU: (Kind, Device) = (Kind::Float, Device::Cpu);

    fn ramp(b: i64, c: i64, h: i64, w: i64) -> Tensor {
        Tensor::arange(b * c * h * w, CPU).view([b, c, h, w])
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
        (a - b).abs().max().double_value(&[])
    }

    #[test]
    fn rotating_by_90_degrees_is_a_quarter_turn_counter_clockwise() {
        let x = ramp(1, 2, 6, 6);
        let out = rotate(&x, &[90.0]).unwrap();
        assert!(out.equal(&x.rot90(1, [2, 3])));
        // Counter-clockwise: the top edge becomes the left edge, so the pixel just right
        // of the top-left corner lands in the left column, second from the bottom.
        assert_eq!(
            out.double_value(&[0, 0, 4, 0]),
            x.double_value(&[0, 0, 0, 1])
        );
    }

    #[test]
    fn rotation_uses_each_samples_own_angle_and_zero_fills() {
        let x = Tensor::ones([2, 1, 8, 8], CPU);
        let out = rotate(&x, &[0.0, 45.0]).unwrap();
        assert!(out.get(0).equal(&x.get(0)));
        // The corners of the turned square fall outside the image and are filled with 0.
        assert_eq!(out.double_value(&[1, 0, 0, 0]), 0.0);
        assert_eq!(out.double_value(&[1, 0, 4, 4]), 1.0);
    }

    #[test]
    fn rotation_thetas_account_for_the_aspect_ratio() {
        let t = rotation_thetas(&[90.0], 10, 20);
        let want = [0.0, -0.5, 0.0, 2.0, 0.0, 0.0];
        assert!(
            t.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6),
            "{t:?}"
        );
    }

    #[test]
    fn identity_grid_holds_pixel_centres() {
        let g = identity_grid(2, 4);
        assert_eq!(&g[..4], &[-0.75, -0.5, -0.25, -0.5]);
        assert_eq!(&g[g.len() - 2..], &[0.75, 0.5]);
    }

    #[test]
    fn elastic_kernel_sizes_match_torchvision() {
        assert_eq!(elastic_kernel_size(5.0), 41);
        assert_eq!(elastic_kernel_size(0.5), 5);
        assert_eq!(elastic_kernel_size(0.0), 1);
    }

    #[test]
    fn elastic_with_alpha_zero_is_the_identity() {
        let x = ramp(2, 1, 28, 28) / (2.0 * 28.0 * 28.0);
        let noise = vec![0.5f32; 2 * 2 * 28 * 28];
        let out = elastic(&x, &noise, 0.0, 5.0).unwrap();
        assert!(max_diff(&out, &x) < 1e-5);
    }

    #[test]
    fn elastic_with_a_constant_field_shifts_the_image() {
        // Blurring constant noise leaves it constant; noise 1 in x with alpha = h moves x
        // by one normalized unit: half the width, so the left half shows the right half.
        for sigma in [0.0, 0.5] {
            let x = ramp(1, 1, 8, 8);
            let noise = [vec![1.0f32; 64], vec![0.0f32; 64]].concat();
            let out = elastic(&x, &noise, 8.0, sigma).unwrap();
            assert!(
                max_diff(&out.narrow(3, 0, 4), &x.narrow(3, 4, 4)) < 1e-3,
                "{sigma}"
            );
            assert!(out.narrow(3, 4, 4).abs().max().double_value(&[]) < 1e-6);
        }
    }

    #[test]
    fn elastic_scales_x_by_height_and_y_by_width_as_torchvision_does() {
        // On a 4×8 image, noise 1 in y with alpha 2 moves y by alpha / width = 0.25
        // normalized units: half a pixel of 4 rows, which bilinear sampling shows as the
        // mean of two neighbouring rows (scaling by the height would move a whole pixel).
        let x = ramp(1, 1, 4, 8);
        let noise = [vec![0.0f32; 32], vec![1.0f32; 32]].concat();
        let out = elastic(&x, &noise, 2.0, 0.0).unwrap();
        let want = (x.narrow(2, 0, 1) + x.narrow(2, 1, 1)) / 2.0;
        assert!(max_diff(&out.narrow(2, 0, 1), &want) < 1e-4);
    }

    #[test]
    fn flip_mirrors_only_the_chosen_samples() {
        let x = ramp(3, 2, 4, 5);
        assert!(flip(&x, &[false; 3]).unwrap().equal(&x));
        assert!(flip(&x, &[true; 3]).unwrap().equal(&x.flip([3])));
        let out = flip(&x, &[true, false, true]).unwrap();
        assert!(out.get(0).equal(&x.get(0).flip([2])));
        assert!(out.get(1).equal(&x.get(1)));
        assert!(out.get(2).equal(&x.get(2).flip([2])));
    }

    #[test]
    fn crop_cuts_each_samples_window_from_the_padded_image() {
        let x = ramp(2, 2, 4, 5);
        let out = crop(&x, &[[0, 0], [3, 2]], [3, 3], 1).unwrap();
        assert_eq!(out.size(), vec![2, 2, 3, 3]);
        // Sample 0 starts in the padding: its first row and column are zeros.
        assert_eq!(out.double_value(&[0, 1, 0, 1]), 0.0);
        assert_eq!(
            out.double_value(&[0, 1, 1, 1]),
            x.double_value(&[0, 1, 0, 0])
        );
        // Sample 1's window starts at padded (3, 2), which is image (2, 1).
        let want = x.get(1).narrow(1, 2, 2).narrow(2, 1, 3);
        assert!(out.get(1).narrow(1, 0, 2).equal(&want));
        assert_eq!(out.double_value(&[1, 0, 2, 0]), 0.0);
    }

    #[test]
    fn crop_room_is_the_slack_or_a_clear_error() {
        assert_eq!(crop_room(28, 28, [28, 28], 4).unwrap(), [8, 8]);
        assert_eq!(crop_room(28, 30, [28, 28], 0).unwrap(), [0, 2]);
        let err = crop_room(28, 28, [40, 20], 4).unwrap_err();
        assert!(err.to_string().contains("40×20 is larger"), "{err}");
    }

    #[test]
    fn resize_gives_the_requested_size() {
        let x = ramp(2, 3, 28, 28);
        assert_eq!(resize(&x, [14, 20]).unwrap().size(), vec![2, 3, 14, 20]);
    }
}
