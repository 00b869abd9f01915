//! The fused fast paths: the built-in `light` and `heavy` chains (or custom chains of
//! the same ops) on uint8 CPU batches, done in plain Rust in one pass over the data
//! instead of one libtorch op after another. Light is the unfused ops' f32 arithmetic
//! in the same order, vectorized, so it gives the same values. Heavy is [`Warp`], its
//! samples split over as many threads as libtorch's intra-op setting allows (the caller
//! and the [`helpers`](super::helpers)); each sample's random parameters are drawn up
//! front from the batch's generator, so the batch does not depend on the thread count.
//! Anything else (float batches, other chains, per-sample transforms) runs the unfused
//! ops.

use rand::rngs::StdRng;
use tch::{Device, Kind, Tensor};

use super::blur::gaussian_kernel;
use super::geometry::rotation_thetas;
use super::helpers::run_split;
use super::normalize::ChannelStats;
use super::warp::{SampleParams, Warp};
use super::{Op, random};
use crate::error::Result;

/// A chain the fast paths know.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Fused {
    /// `[Normalize]`.
    Light,
    /// `[Rotate, Elastic, GaussianBlur, Normalize]`.
    Heavy {
        degrees: f64,
        alpha: f64,
        sigma: f64,
        blur_taps: usize,
        blur_sigma: [f64; 2],
    },
}

impl Fused {
    /// The fast path for `ops`, if there is one.
    pub(super) fn recognise(ops: &[Op]) -> Option<Fused> {
        match *ops {
            [Op::Normalize] => Some(Fused::Light),
            [
                Op::Rotate { degrees },
                Op::Elastic { alpha, sigma },
                Op::GaussianBlur {
                    kernel,
                    sigma: blur_sigma,
                },
                Op::Normalize,
            ] => Some(Fused::Heavy {
                degrees,
                alpha,
                sigma,
                blur_taps: kernel,
                blur_sigma,
            }),
            _ => None,
        }
    }

    /// Runs the chain on a `[B, C, H, W]` batch, or returns `None` when the batch is not
    /// a uint8 CPU one (the caller then runs the unfused ops).
    pub(super) fn apply(
        &self,
        batch: &Tensor,
        stats: &ChannelStats,
        rng: &mut StdRng,
    ) -> Result<Option<Tensor>> {
        if batch.f_kind()? != Kind::Uint8 || batch.device() != Device::Cpu {
            return Ok(None);
        }
        let batch = batch.f_contiguous()?;
        let (b, c, h, w) = batch.size4()?;
        let out = Tensor::f_empty([b, c, h, w], (Kind::Float, Device::Cpu))?;
        let dims = [b, c, h, w].map(|d| d as usize);
        if dims.contains(&0) {
            return Ok(Some(out));
        }
        // SAFETY: `batch` is a contiguous uint8 CPU tensor of `numel` (non-zero) elements,
        // kept alive for this call, and nothing writes to it while it is read here.
        let images =
            unsafe { std::slice::from_raw_parts(batch.data_ptr() as *const u8, batch.numel()) };
        // SAFETY: `out` was just allocated as a contiguous float CPU tensor of as many
        // elements; no other handle to it exists until it is returned.
        let floats =
            unsafe { std::slice::from_raw_parts_mut(out.data_ptr() as *mut f32, out.numel()) };
        match *self {
            Fused::Light => light(images, floats, c as usize, (h * w) as usize, stats),
            Fused::Heavy {
                degrees,
                alpha,
                sigma,
                blur_taps,
                blur_sigma,
            } => {
                let warp = Warp::new([dims[1], dims[2], dims[3]], alpha, sigma, blur_taps, |c| {
                    stats.channel(c)
                })?;
                let angles = random::angles(rng, dims[0], degrees);
                let seeds = random::sample_seeds(rng, dims[0]);
                let sigmas = random::sigmas(rng, dims[0], blur_sigma);
                let kernels: Vec<f32> = sigmas
                    .iter()
                    .flat_map(|&s| gaussian_kernel(blur_taps, s))
                    .collect();
                let thetas = rotation_thetas(&angles, h, w);
                let params: Vec<SampleParams> = thetas
                    .chunks_exact(6)
                    .zip(seeds)
                    .zip(kernels.chunks_exact(blur_taps))
                    .map(|((t, noise_seed), blur)| SampleParams {
                        rotation: [t[0], t[1], t[3], t[4]],
                        noise_seed,
                        blur,
                    })
                    .collect();
                heavy(&warp, &params, images, floats, blur_taps);
            }
        }
        Ok(Some(out))
    }
}

/// Each sample through `warp`, the samples split into one contiguous run per intra-op
/// thread (the calling thread takes the first run, the pool's helpers the others).
fn heavy(warp: &Warp, params: &[SampleParams], images: &[u8], out: &mut [f32], blur_taps: usize) {
    let len = warp.sample_len();
    let threads = usize::try_from(tch::get_num_threads())
        .unwrap_or(1)
        .clamp(1, params.len().max(1));
    let per_thread = params.len().div_ceil(threads);
    let run = |params: &[SampleParams], images: &[u8], out: &mut [f32]| {
        let mut scratch = warp.scratch(blur_taps);
        for ((params, image), out) in params
            .iter()
            .zip(images.chunks_exact(len))
            .zip(out.chunks_exact_mut(len))
        {
            warp.sample(params, image, out, &mut scratch);
        }
    };
    let runs: Vec<_> = params
        .chunks(per_thread)
        .zip(images.chunks(per_thread * len))
        .zip(out.chunks_mut(per_thread * len))
        .collect();
    run_split(runs, |((params, images), out)| run(params, images, out));
}

/// uint8 to normalized floats, plane by plane, with the unfused ops' f32 arithmetic in
/// the same order (to float, / 255, - mean, / std), so the values are the same; written
/// as plain arithmetic so that it compiles to vector instructions (a 256-entry table
/// lookup cannot, and took 17 ms of a 26 ms light epoch).
fn light(images: &[u8], out: &mut [f32], channels: usize, plane: usize, stats: &ChannelStats) {
    for (index, (image, out)) in images
        .chunks_exact(plane)
        .zip(out.chunks_exact_mut(plane))
        .enumerate()
    {
        let (mean, std) = stats.channel(index % channels);
        normalize_plane(image, out, mean, std);
    }
}

fn normalize_plane(image: &[u8], out: &mut [f32], mean: f32, std: f32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        unsafe { normalize_plane_avx2(image, out, mean, std) };
        return;
    }
    normalize_plane_portable(image, out, mean, std);
}

/// [`normalize_plane`] compiled for AVX2 (eight floats per instruction).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn normalize_plane_avx2(image: &[u8], out: &mut [f32], mean: f32, std: f32) {
    normalize_plane_portable(image, out, mean, std);
}

#[inline(always)]
fn normalize_plane_portable(image: &[u8], out: &mut [f32], mean: f32, std: f32) {
    for (o, &v) in out.iter_mut().zip(image) {
        *o = (f32::from(v) / 255.0 - mean) / std;
    }
}
