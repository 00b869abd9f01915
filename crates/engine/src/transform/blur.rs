//! Gaussian blurring as torchvision does it: 1-D Gaussian kernels, reflect padding and a
//! separable convolution. Per-sample kernels are applied to the whole batch at once with
//! one grouped convolution per axis. The elastic op's wide kernels are cheaper as
//! matrices (padding folded in) multiplied from both sides, so those are built here too.

use tch::Tensor;

use crate::error::{Error, Result};

/// Blurs sample `i` of a float `[B, C, H, W]` batch with a `kernel`-wide Gaussian of
/// sigma `sigmas[i]`, reflect-padded so the output keeps its size.
pub(super) fn gaussian_blur(x: &Tensor, kernel: usize, sigmas: &[f64]) -> Result<Tensor> {
    let (b, c, h, w) = x.size4()?;
    let padded = reflect_pad(x, kernel / 2)?;
    let (_, _, hp, wp) = padded.size4()?;
    // Each (sample, channel) plane becomes its own group, so one convolution applies
    // every sample's kernel.
    let planes = padded.f_reshape([1, b * c, hp, wp])?;
    let weights: Vec<f32> = sigmas
        .iter()
        .flat_map(|&sigma| gaussian_kernel(kernel, sigma).repeat(c as usize))
        .collect();
    let blurred = separable_conv(&planes, &weights, &weights, b * c)?;
    Ok(blurred.f_reshape([b, c, h, w])?)
}

/// torchvision's `_get_gaussian_kernel1d`: `size` taps of a Gaussian of `sigma`, summing
/// to one.
pub(super) fn gaussian_kernel(size: usize, sigma: f64) -> Vec<f32> {
    if size == 1 {
        // A single tap is the identity whatever sigma is (and sigma may be 0).
        return vec![1.0];
    }
    let half = (size as f64 - 1.0) / 2.0;
    let pdf: Vec<f64> = (0..size)
        .map(|i| (-0.5 * ((i as f64 - half) / sigma).powi(2)).exp())
        .collect();
    let sum: f64 = pdf.iter().sum();
    pdf.iter().map(|p| (p / sum) as f32).collect()
}

/// The `size`×`size` matrix that blurs a length-`size` signal with `kernel`, reflect
/// padding included: multiplying by it equals reflect-padding and convolving.
pub(super) fn reflect_blur_matrix(size: i64, kernel: &[f32]) -> Result<Vec<f32>> {
    let pad = kernel.len() as i64 / 2;
    check_reflect_pad(pad, size, size)?;
    let reflect = |i: i64| match i {
        i if i < 0 => -i,
        i if i >= size => 2 * (size - 1) - i,
        i => i,
    };
    let mut matrix = vec![0.0; (size * size) as usize];
    for row in 0..size {
        for (tap, &weight) in kernel.iter().enumerate() {
            let column = reflect(row + tap as i64 - pad);
            matrix[(row * size + column) as usize] += weight;
        }
    }
    Ok(matrix)
}

/// Reflect padding mirrors the image once, so it must be narrower than the image.
pub(super) fn check_reflect_pad(pad: i64, h: i64, w: i64) -> Result<()> {
    if pad < h && pad < w {
        Ok(())
    } else {
        Err(Error::run(format!(
            "a blur that reflect-pads by {pad} pixels needs images larger than \
             {pad}×{pad}, but they are {h}×{w}"
        )))
    }
}

/// Pads the last two dimensions of `x` by `pad` on every side, mirroring the edge.
pub(super) fn reflect_pad(x: &Tensor, pad: usize) -> Result<Tensor> {
    if pad == 0 {
        return Ok(x.shallow_clone());
    }
    let (_, _, h, w) = x.size4()?;
    let p = pad as i64;
    check_reflect_pad(p, h, w)?;
    Ok(x.f_pad([p, p, p, p], "reflect", None)?)
}

/// Convolves each of the `groups` channels of a padded `[N, groups, H + k - 1, W + k - 1]`
/// tensor with its own row kernel, then its own column kernel (`k` taps each, laid out
/// group after group), giving `[N, groups, H, W]`.
pub(super) fn separable_conv(
    padded: &Tensor,
    row_kernels: &[f32],
    column_kernels: &[f32],
    groups: i64,
) -> Result<Tensor> {
    let taps = row_kernels.len() as i64 / groups;
    let rows = Tensor::f_from_slice(row_kernels)?.f_view([groups, 1, 1, taps])?;
    let columns = Tensor::f_from_slice(column_kernels)?.f_view([groups, 1, taps, 1])?;
    let across = padded.f_conv2d(&rows, None::<Tensor>, [1, 1], [0, 0], [1, 1], groups)?;
    Ok(across.f_conv2d(&columns, None::<Tensor>, [1, 1], [0, 0], [1, 1], groups)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    fn values(t: &Tensor) -> Vec<f32> {
        Vec::<f32>::try_from(t.flatten(0, -1)).unwrap()
    }

    #[test]
    fn kernels_are_symmetric_and_sum_to_one() {
        let k = gaussian_kernel(5, 1.0);
        assert_eq!(k.len(), 5);
        assert!((k.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert_eq!(k[0], k[4]);
        assert!(k[2] > k[1] && k[1] > k[0]);
        assert_eq!(gaussian_kernel(1, 0.0), vec![1.0]);
    }

    #[test]
    fn matches_torchvision_kernel_values() {
        // torchvision.transforms.functional._get_gaussian_kernel1d(3, 1.0)
        let k = gaussian_kernel(3, 1.0);
        for (got, want) in k.iter().zip([0.274_068_6, 0.451_862_8, 0.274_068_6]) {
            assert!((got - want).abs() < 1e-6, "{k:?}");
        }
    }

    #[test]
    fn a_constant_image_stays_constant() {
        let x = Tensor::full([2, 3, 8, 8], 0.7, (Kind::Float, tch::Device::Cpu));
        let out = gaussian_blur(&x, 5, &[0.5, 2.0]).unwrap();
        assert_eq!(out.size(), vec![2, 3, 8, 8]);
        assert!(values(&out).iter().all(|v| (v - 0.7).abs() < 1e-6));
    }

    #[test]
    fn an_impulse_spreads_by_each_samples_sigma() {
        let x = Tensor::zeros([2, 1, 9, 9], (Kind::Float, tch::Device::Cpu));
        let _ = x.narrow(2, 4, 1).narrow(3, 4, 1).fill_(1.0);
        let out = gaussian_blur(&x, 5, &[0.5, 2.0]).unwrap();
        // Each sample's output is the outer product of its own 1-D kernel.
        for (i, sigma) in [0.5, 2.0].into_iter().enumerate() {
            let k = gaussian_kernel(5, sigma);
            for (dy, dx) in [(0, 0), (0, 1), (1, 2), (2, 2)] {
                let got = out.double_value(&[i as i64, 0, 4 + dy, 4 + dx]);
                let want = f64::from(k[2 + dy as usize] * k[2 + dx as usize]);
                assert!((got - want).abs() < 1e-6, "sigma {sigma} at +{dy},+{dx}");
            }
        }
        // The wider Gaussian leaves less at the centre and more at the kernel's edge.
        assert!(out.double_value(&[1, 0, 4, 4]) < out.double_value(&[0, 0, 4, 4]));
        assert!(out.double_value(&[1, 0, 6, 6]) > out.double_value(&[0, 0, 6, 6]));
        // Away from the border nothing is lost.
        assert!((out.sum(Kind::Double).double_value(&[]) - 2.0).abs() < 1e-5);
    }

    #[test]
    fn a_blur_matrix_equals_padding_and_convolving() {
        let x = Tensor::rand([2, 1, 7, 7], (Kind::Float, tch::Device::Cpu));
        let kernel = gaussian_kernel(9, 1.5);
        let padded = reflect_pad(&x, 4).unwrap();
        let by_conv = separable_conv(&padded, &kernel, &kernel, 1).unwrap();
        let m = Tensor::from_slice(&reflect_blur_matrix(7, &kernel).unwrap()).view([7, 7]);
        let by_matrix = m.matmul(&x).matmul(&m.tr());
        let diff = (by_conv - by_matrix).abs().max().double_value(&[]);
        assert!(diff < 1e-6, "{diff}");
    }

    #[test]
    fn a_blur_matrix_too_wide_for_the_signal_is_an_error() {
        assert!(reflect_blur_matrix(4, &gaussian_kernel(9, 1.0)).is_err());
        assert_eq!(
            reflect_blur_matrix(3, &[1.0]).unwrap(),
            [1., 0., 0., 0., 1., 0., 0., 0., 1.]
        );
    }

    #[test]
    fn padding_wider_than_the_image_is_a_clear_error() {
        let x = Tensor::zeros([1, 1, 4, 4], (Kind::Float, tch::Device::Cpu));
        let err = gaussian_blur(&x, 9, &[1.0]).unwrap_err();
        assert!(err.to_string().contains("larger than 4×4"), "{err}");
    }
}
