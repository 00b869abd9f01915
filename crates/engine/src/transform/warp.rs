//! The heavy pipeline fused into one pass per sample, in plain Rust: the elastic
//! displacement field (the noise blurred by two matrix products, as the unfused op
//! does), composed with the rotation into one sampling grid, so each image is resampled
//! once (bilinear) instead of twice; then the Gaussian blur with the conversion to [0, 1]
//! and the normalization folded into its last pass. [`Warp`] holds what every sample of
//! a batch shares; [`Warp::sample`] does one sample in caller-owned scratch buffers, so
//! nothing is allocated per sample.

use super::blur::{check_reflect_pad, gaussian_kernel, reflect_blur_matrix};
use super::geometry::elastic_kernel_size;
use super::random::fill_unit_noise;
use crate::error::Result;

/// What every sample of one batch shares.
pub(super) struct Warp {
    channels: usize,
    height: usize,
    width: usize,
    /// The `H×H` elastic blur applied down the columns (reflect padding folded in).
    columns: Vec<f32>,
    /// The `W×W` elastic blur along the rows, transposed, times torchvision's scale:
    /// `alpha / H` for the x field, `alpha / W` for the y field. Rows are
    /// [`padded_width`] apart, as [`matmul`] wants.
    rows_t: [Vec<f32>; 2],
    /// Pixel centres in normalized coordinates (`align_corners=False`).
    centre_x: Vec<f32>,
    centre_y: Vec<f32>,
    /// Per channel, `1 / (255 · std)` and `-mean / std`: uint8 to normalized in one step.
    scale: Vec<f32>,
    shift: Vec<f32>,
}

/// One sample's random parameters.
pub(super) struct SampleParams<'a> {
    /// The rotation's `[2, 2]` part, row-major, in normalized coordinates.
    pub rotation: [f32; 4],
    /// Seeds the elastic noise.
    pub noise_seed: u64,
    /// The blur's 1-D kernel.
    pub blur: &'a [f32],
}

/// One thread's working memory, reused from sample to sample.
pub(super) struct Scratch {
    noise: Vec<f32>,
    product: Vec<f32>,
    field: Vec<f32>,
    warped: Vec<f32>,
    across: Vec<f32>,
    padded_row: Vec<f32>,
}

impl Warp {
    /// Checks the elastic and blur kernels against the image size, as the unfused ops do,
    /// and builds the shared matrices. `stats` gives each channel's mean and std.
    pub(super) fn new(
        [channels, height, width]: [usize; 3],
        alpha: f64,
        sigma: f64,
        blur_taps: usize,
        stats: impl Fn(usize) -> (f32, f32),
    ) -> Result<Warp> {
        let (h, w) = (height as i64, width as i64);
        // Checked before the kernel is built, as a huge sigma would ask for a huge kernel.
        let taps = elastic_kernel_size(sigma);
        check_reflect_pad((taps / 2) as i64, h, w)?;
        check_reflect_pad((blur_taps / 2) as i64, h, w)?;
        let kernel = gaussian_kernel(taps, sigma);
        let columns = reflect_blur_matrix(h, &kernel)?;
        let rows = reflect_blur_matrix(w, &kernel)?;
        let stride = padded_width(width);
        let rows_t = [alpha / height as f64, alpha / width as f64].map(|scale| {
            let mut t = vec![0.0; width * stride];
            for (r, row) in rows.chunks_exact(width).enumerate() {
                for (c, &v) in row.iter().enumerate() {
                    t[c * stride + r] = v * scale as f32;
                }
            }
            t
        });
        let centres = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((2 * i + 1) as f32 - n as f32) / n as f32)
                .collect()
        };
        let (scale, shift) = (0..channels)
            .map(|c| {
                let (mean, std) = stats(c);
                (1.0 / (255.0 * std), -mean / std)
            })
            .unzip();
        Ok(Warp {
            channels,
            height,
            width,
            columns,
            rows_t,
            centre_x: centres(width),
            centre_y: centres(height),
            scale,
            shift,
        })
    }

    /// The floats one sample takes.
    pub(super) fn sample_len(&self) -> usize {
        self.channels * self.height * self.width
    }

    /// Fresh working memory for one thread, for blur kernels of `blur_taps` taps.
    pub(super) fn scratch(&self, blur_taps: usize) -> Scratch {
        let plane = self.height * self.width;
        Scratch {
            noise: vec![0.0; 2 * plane],
            product: vec![0.0; self.height * padded_width(self.width)],
            field: vec![0.0; 2 * plane],
            warped: vec![0.0; self.sample_len()],
            across: vec![0.0; plane],
            padded_row: vec![0.0; self.width + blur_taps - 1],
        }
    }

    /// Transforms one uint8 sample `image` (`[C, H, W]`) into normalized floats in `out`.
    pub(super) fn sample(
        &self,
        params: &SampleParams,
        image: &[u8],
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { self.sample_avx2(params, image, out, scratch) };
            return;
        }
        self.sample_portable(params, image, out, scratch);
    }

    /// [`Warp::sample`] compiled for AVX2: twice the vector width of the baseline x86-64
    /// the crate is built for, and an inlined `floor` (the heavy batch measured a fifth
    /// faster than the baseline build).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn sample_avx2(
        &self,
        params: &SampleParams,
        image: &[u8],
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        self.sample_portable(params, image, out, scratch);
    }

    /// The work of [`Warp::sample`]; it and everything it calls are inlined, so that
    /// [`Warp::sample_avx2`] compiles all of it for AVX2.
    #[inline(always)]
    fn sample_portable(
        &self,
        params: &SampleParams,
        image: &[u8],
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        self.displacement(params.noise_seed, scratch);
        self.resample(params.rotation, image, scratch);
        self.blur_normalize(params.blur, scratch, out);
    }

    /// The elastic field for the noise drawn from `seed`.
    #[inline(always)]
    fn displacement(&self, seed: u64, scratch: &mut Scratch) {
        fill_unit_noise(seed, &mut scratch.noise);
        self.blur_noise(scratch);
    }

    /// The elastic field, x then y, each `columns · noise · (scale · rows)ᵀ`.
    #[inline(always)]
    fn blur_noise(&self, scratch: &mut Scratch) {
        let (h, w) = (self.height, self.width);
        let fields = scratch.field.chunks_exact_mut(h * w);
        for ((noise, field), rows_t) in scratch
            .noise
            .chunks_exact(h * w)
            .zip(fields)
            .zip(&self.rows_t)
        {
            let stride = padded_width(w);
            matmul(noise, rows_t, stride, &mut scratch.product, stride, w);
            matmul(&self.columns, &scratch.product, stride, field, w, w);
        }
    }

    /// Samples `image` bilinearly, with zero fill, at `rotation · (centre + displacement)`
    /// for every output pixel: the rotation then the elastic transform, in one resampling.
    #[inline(always)]
    fn resample(&self, rotation: [f32; 4], image: &[u8], scratch: &mut Scratch) {
        let (h, w) = (self.height, self.width);
        let plane = h * w;
        let (dx, dy) = scratch.field.split_at(plane);
        let [t00, t01, t10, t11] = rotation;
        let (wf, hf) = (w as f32, h as f32);
        for (i, &cy) in self.centre_y.iter().enumerate() {
            for (j, &cx) in self.centre_x.iter().enumerate() {
                let p = i * w + j;
                let (px, py) = (cx + dx[p], cy + dy[p]);
                let (qx, qy) = (t00 * px + t01 * py, t10 * px + t11 * py);
                // grid_sample's unnormalization for align_corners=False.
                let u = ((qx + 1.0) * wf - 1.0) * 0.5;
                let v = ((qy + 1.0) * hf - 1.0) * 0.5;
                let tap = Tap::new(u, v, w, h);
                for (channel, warped) in image
                    .chunks_exact(plane)
                    .zip(scratch.warped.chunks_exact_mut(plane))
                {
                    warped[p] = tap.interpolate(channel, w);
                }
            }
        }
    }

    /// Blurs each channel of the resampled sample with the `blur` kernel (reflect
    /// padding: rows, then columns, as the unfused op does) and writes
    /// `value · scale + shift` to `out`.
    #[inline(always)]
    fn blur_normalize(&self, blur: &[f32], scratch: &mut Scratch, out: &mut [f32]) {
        let (h, w) = (self.height, self.width);
        let plane = h * w;
        let pad = blur.len() / 2;
        let Scratch {
            warped,
            across,
            padded_row,
            ..
        } = scratch;
        for (c, (warped, out)) in warped
            .chunks_exact(plane)
            .zip(out.chunks_exact_mut(plane))
            .enumerate()
        {
            for (row, across) in warped.chunks_exact(w).zip(across.chunks_exact_mut(w)) {
                reflect_into(row, pad, padded_row);
                across.fill(0.0);
                for (t, &k) in blur.iter().enumerate() {
                    for (a, &v) in across.iter_mut().zip(&padded_row[t..t + w]) {
                        *a += k * v;
                    }
                }
            }
            let (scale, shift) = (self.scale[c], self.shift[c]);
            for (i, out_row) in out.chunks_exact_mut(w).enumerate() {
                out_row.fill(0.0);
                for (t, &k) in blur.iter().enumerate() {
                    let source = reflect(i as isize + t as isize - pad as isize, h);
                    let source = &across[source * w..(source + 1) * w];
                    for (o, &v) in out_row.iter_mut().zip(source) {
                        *o += k * v;
                    }
                }
                for o in out_row.iter_mut() {
                    *o = *o * scale + shift;
                }
            }
        }
    }
}

/// Where one sampling point reads: the two rows and two columns around it (clamped into
/// the image) and their bilinear weights, zero for a row or column outside the image
/// (zero fill). Without branches, as the points fall anywhere.
struct Tap {
    rows: [usize; 2],
    columns: [usize; 2],
    row_weights: [f32; 2],
    column_weights: [f32; 2],
}

impl Tap {
    /// The tap at pixel coordinates (`u`, `v`) of a `width`×`height` image.
    #[inline(always)]
    fn new(u: f32, v: f32, width: usize, height: usize) -> Tap {
        let (columns, column_weights) = axis(u, width);
        let (rows, row_weights) = axis(v, height);
        Tap {
            rows,
            columns,
            row_weights,
            column_weights,
        }
    }

    /// The bilinear mix of `plane` (rows `width` apart) at this tap.
    #[inline(always)]
    fn interpolate(&self, plane: &[u8], width: usize) -> f32 {
        let [c0, c1] = self.columns;
        let [wx0, wx1] = self.column_weights;
        let mut sum = 0.0;
        for (row, weight) in self.rows.iter().zip(self.row_weights) {
            let line = &plane[row * width..(row + 1) * width];
            sum += weight * (wx0 * f32::from(line[c0]) + wx1 * f32::from(line[c1]));
        }
        sum
    }
}

/// The two neighbours of `coordinate` on an axis of `n` pixels, clamped into it, and
/// their linear weights, zeroed for a neighbour outside.
#[inline(always)]
fn axis(coordinate: f32, n: usize) -> ([usize; 2], [f32; 2]) {
    let floor = coordinate.floor();
    let fraction = coordinate - floor;
    // Saturating: far outside the image both neighbours are outside.
    let first = floor as isize;
    let second = first.saturating_add(1);
    let inside = |i: isize| {
        if (0..n as isize).contains(&i) {
            1.0
        } else {
            0.0
        }
    };
    let clamp = |i: isize| i.clamp(0, n as isize - 1) as usize;
    (
        [clamp(first), clamp(second)],
        [(1.0 - fraction) * inside(first), fraction * inside(second)],
    )
}

/// Columns per block of [`matmul`]'s output: four AVX2 registers.
const BLOCK: usize = 32;

/// `out = a · b` for a row-major `n×k` matrix `a` and `k×m` matrix `b` whose rows are
/// `b_stride` apart (a multiple of [`BLOCK`]), into `out` with rows `out_stride` apart.
/// Each block of an output row is summed in a local array that stays in registers; the
/// values `b` holds between `m` and `b_stride` only reach sums that are thrown away.
#[inline(always)]
fn matmul(a: &[f32], b: &[f32], b_stride: usize, out: &mut [f32], out_stride: usize, m: usize) {
    let k = b.len() / b_stride;
    for (a_row, out_row) in a.chunks_exact(k).zip(out.chunks_exact_mut(out_stride)) {
        for start in (0..m).step_by(BLOCK) {
            let mut sums = [0.0f32; BLOCK];
            for (&weight, b_row) in a_row.iter().zip(b.chunks_exact(b_stride)) {
                for (sum, &v) in sums.iter_mut().zip(&b_row[start..start + BLOCK]) {
                    *sum += weight * v;
                }
            }
            let len = (m - start).min(BLOCK);
            out_row[start..start + len].copy_from_slice(&sums[..len]);
        }
    }
}

/// `width` rounded up to whole [`BLOCK`]s.
fn padded_width(width: usize) -> usize {
    width.next_multiple_of(BLOCK)
}

/// Writes `row` into `padded` with `pad` mirrored values on each side.
#[inline(always)]
fn reflect_into(row: &[f32], pad: usize, padded: &mut [f32]) {
    let n = row.len();
    padded[pad..pad + n].copy_from_slice(row);
    for t in 0..pad {
        padded[pad - 1 - t] = row[t + 1];
        padded[pad + n + t] = row[n - 2 - t];
    }
}

/// The reflect-padded index `i` of a length-`n` signal (`|i| < n` is checked upstream).
#[inline(always)]
fn reflect(i: isize, n: usize) -> usize {
    let n = n as isize;
    let i = if i < 0 { -i } else { i };
    (if i >= n { 2 * (n - 1) - i } else { i }) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transform::geometry::displacement_field;
    use crate::transform::random::unit_noise;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use tch::Tensor;

    fn elastic_warp() -> Warp {
        Warp::new([1, 28, 28], 50.0, 5.0, 5, |_| (0.0, 1.0)).unwrap()
    }

    #[test]
    fn the_displacement_is_the_unfused_ops_for_the_same_noise() {
        let warp = elastic_warp();
        let mut scratch = warp.scratch(5);
        scratch.noise = unit_noise(&mut StdRng::seed_from_u64(9), 2 * 28 * 28);
        warp.blur_noise(&mut scratch);
        let noise = Tensor::from_slice(&scratch.noise).view([1, 2, 28, 28]);
        let want = displacement_field(&noise, 50.0, 5.0).unwrap();
        let got = Tensor::from_slice(&scratch.field)
            .view([1, 2, 28, 28])
            .permute([0, 2, 3, 1]);
        let diff = (got - &want).abs().max().double_value(&[]);
        assert!(diff < 1e-6, "{diff}");
        assert!(want.abs().max().double_value(&[]) > 0.1);
    }

    #[test]
    fn the_displacement_has_the_variance_and_correlation_its_kernels_give() {
        // With noise of variance 1/3 through `columns · noise · rows_t`, pixel (i, j) has
        // variance Σk columns[i,k]² · Σl rows_t[l,j]² / 3, and its covariance with
        // (i, j+1) has Σl rows_t[l,j] · rows_t[l,j+1] in the second factor.
        let (warp, n, side) = (elastic_warp(), 4000, 28);
        let stride = padded_width(side);
        let mut scratch = warp.scratch(5);
        let mut sum_sq = vec![0.0f64; 2 * side * side];
        let mut sum_next = vec![0.0f64; 2 * side * side];
        let mut sum = vec![0.0f64; 2 * side * side];
        for seed in 0..n {
            warp.displacement(seed, &mut scratch);
            for (p, &d) in scratch.field.iter().enumerate() {
                sum[p] += f64::from(d);
                sum_sq[p] += f64::from(d).powi(2);
                if p % side + 1 < side {
                    sum_next[p] += f64::from(d * scratch.field[p + 1]);
                }
            }
        }
        let column_energy = |i: usize| -> f64 {
            let row = &warp.columns[i * side..(i + 1) * side];
            row.iter().map(|&c| f64::from(c).powi(2)).sum()
        };
        let row_product = |f: usize, j: usize, k: usize| -> f64 {
            let rows_t = &warp.rows_t[f];
            (0..side)
                .map(|l| f64::from(rows_t[l * stride + j] * rows_t[l * stride + k]))
                .sum()
        };
        let (mut worst_variance, mut correlation_error, mut worst_mean) = (0.0f64, 0.0f64, 0.0f64);
        for f in 0..2 {
            for i in 0..side {
                for j in 0..side {
                    let p = f * side * side + i * side + j;
                    let variance = column_energy(i) * row_product(f, j, j) / 3.0;
                    let measured = sum_sq[p] / n as f64;
                    worst_variance = worst_variance.max((measured / variance - 1.0).abs());
                    worst_mean = worst_mean.max((sum[p] / n as f64).abs() / variance.sqrt());
                    if j + 1 < side {
                        let want = row_product(f, j, j + 1)
                            / row_product(f, j, j).sqrt()
                            / row_product(f, j + 1, j + 1).sqrt();
                        let got =
                            sum_next[p] / n as f64 / (measured * sum_sq[p + 1] / n as f64).sqrt();
                        correlation_error = correlation_error.max((got - want).abs());
                    }
                }
            }
        }
        // Measured at 4000 fields: 0.06, 0.02 and 0.001 (the variance's sampling error is
        // about 2% a pixel, and the worst of 1568 pixels is shown).
        println!("variance {worst_variance}, mean {worst_mean}, correlation {correlation_error}");
        assert!(worst_variance < 0.12, "{worst_variance}");
        assert!(worst_mean < 0.08, "{worst_mean}");
        assert!(correlation_error < 0.02, "{correlation_error}");
    }

    #[test]
    fn matmul_multiplies() {
        // [1 2; 3 4] · [5 6 7; 8 9 10], the right-hand rows padded with junk.
        let mut b = vec![99.0; 2 * BLOCK];
        b[..3].copy_from_slice(&[5., 6., 7.]);
        b[BLOCK..BLOCK + 3].copy_from_slice(&[8., 9., 10.]);
        let mut out = vec![0.0; 6];
        matmul(&[1., 2., 3., 4.], &b, BLOCK, &mut out, 3, 3);
        assert_eq!(out, [21., 24., 27., 47., 54., 61.]);
    }

    #[test]
    fn reflection_mirrors_without_repeating_the_edge() {
        let mut padded = vec![0.0; 8];
        reflect_into(&[1., 2., 3., 4.], 2, &mut padded);
        assert_eq!(padded, [3., 2., 1., 2., 3., 4., 3., 2.]);
        assert_eq!(
            [-2, -1, 0, 3, 4, 5].map(|i| reflect(i, 4)),
            [2, 1, 0, 3, 2, 1]
        );
    }

    #[test]
    fn interpolation_mixes_the_neighbours_inside_and_zero_fills() {
        let plane = [10u8, 20, 30, 40];
        let at = |u, v| Tap::new(u, v, 2, 2).interpolate(&plane, 2);
        assert_eq!(at(0.5, 0.5), 25.0);
        assert_eq!(at(1.0, 1.0), 40.0);
        // Only the bottom-right pixel is inside, with a quarter of the weight.
        assert_eq!(at(1.5, 1.5), 10.0);
        assert_eq!(at(-5.0, 0.0), 0.0);
        assert_eq!(at(f32::MAX, 0.0), 0.0);
    }
}
