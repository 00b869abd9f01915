//! Drawing each sample's random parameters from the caller's seeded generator. Every op
//! draws here, never from libtorch's global generator: that one is shared by all worker
//! threads, so batches would depend on thread timing. The ops themselves take the drawn
//! values as plain arguments, which keeps them testable with fixed parameters.

use rand::Rng;
use rand::rngs::StdRng;

use crate::splitmix;

/// One angle per sample, uniform in ±`degrees`.
pub(super) fn angles(rng: &mut StdRng, batch: usize, degrees: f64) -> Vec<f64> {
    // Scaling a unit draw (instead of sampling ±degrees directly) cannot overflow the
    // range's width for huge but finite `degrees`.
    (0..batch)
        .map(|_| rng.random_range(-1.0..=1.0) * degrees.abs())
        .collect()
}

/// One blur sigma per sample, uniform in `[lo, hi]` (checked finite and ordered).
pub(super) fn sigmas(rng: &mut StdRng, batch: usize, [lo, hi]: [f64; 2]) -> Vec<f64> {
    (0..batch).map(|_| rng.random_range(lo..=hi)).collect()
}

/// Whether to flip each sample, each with probability `p` (checked to lie in [0, 1]).
pub(super) fn flips(rng: &mut StdRng, batch: usize, p: f64) -> Vec<bool> {
    (0..batch).map(|_| rng.random_bool(p)).collect()
}

/// One `[top, left]` crop corner per sample, uniform in `0..=room` on each axis.
pub(super) fn crop_corners(rng: &mut StdRng, batch: usize, room: [usize; 2]) -> Vec<[i64; 2]> {
    (0..batch)
        .map(|_| {
            [
                rng.random_range(0..=room[0]) as i64,
                rng.random_range(0..=room[1]) as i64,
            ]
        })
        .collect()
}

/// `len` values uniform in [-1, 1), as torchvision's `torch.rand(..) * 2 - 1`.
pub(super) fn unit_noise(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect()
}

/// One seed per sample, for draws that each sample makes on its own (on whichever
/// thread transforms it), so a batch stays the same whatever the thread count.
pub(super) fn sample_seeds(rng: &mut StdRng, batch: usize) -> Vec<u64> {
    (0..batch).map(|_| rng.random()).collect()
}

/// Fills `out` with values uniform in [-1, 1) drawn from `seed` by SplitMix64: a few
/// cycles per value where the seeded `StdRng` (ChaCha12) costs several times that, which
/// matters for the elastic op's two values per pixel. Each value takes the top 24 bits of
/// a 32-bit half, as `random::<f32>()` and `torch.rand` do.
#[inline(always)]
pub(super) fn fill_unit_noise(seed: u64, out: &mut [f32]) {
    let mut state = seed;
    let unit = |bits: u32| (bits >> 8) as f32 * (2.0 / (1u32 << 24) as f32) - 1.0;
    let mut pairs = out.chunks_exact_mut(2);
    for pair in pairs.by_ref() {
        let bits = splitmix::next(&mut state);
        pair[0] = unit((bits >> 32) as u32);
        pair[1] = unit(bits as u32);
    }
    for last in pairs.into_remainder() {
        *last = unit((splitmix::next(&mut state) >> 32) as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn draws_stay_in_their_ranges() {
        let mut rng = StdRng::seed_from_u64(1);
        assert!(angles(&mut rng, 100, 30.0).iter().all(|a| a.abs() <= 30.0));
        assert!(
            sigmas(&mut rng, 100, [0.1, 2.0])
                .iter()
                .all(|s| (0.1..=2.0).contains(s))
        );
        assert!(
            unit_noise(&mut rng, 1000)
                .iter()
                .all(|v| (-1.0..1.0).contains(v))
        );
        let corners = crop_corners(&mut rng, 100, [2, 0]);
        assert!(
            corners
                .iter()
                .all(|&[top, left]| (0..=2).contains(&top) && left == 0)
        );
    }

    #[test]
    fn fast_noise_is_uniform_in_the_unit_range_and_seeded() {
        let mut noise = vec![0.0f32; 100_001];
        fill_unit_noise(5, &mut noise);
        assert!(noise.iter().all(|v| (-1.0..1.0).contains(v)));
        let n = noise.len() as f64;
        let mean = noise.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
        let variance = noise.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / n;
        // Uniform on [-1, 1): mean 0, variance 1/3; the standard errors are 0.002 and 0.001.
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((variance - 1.0 / 3.0).abs() < 0.005, "{variance}");
        let lag_one = noise
            .windows(2)
            .map(|w| f64::from(w[0] * w[1]))
            .sum::<f64>()
            / n;
        assert!(lag_one.abs() < 0.005, "{lag_one}");
        let mut again = vec![0.0f32; noise.len()];
        fill_unit_noise(5, &mut again);
        assert_eq!(again, noise);
        fill_unit_noise(6, &mut again);
        assert_ne!(again, noise);
    }

    #[test]
    fn flips_follow_p_at_the_extremes() {
        let mut rng = StdRng::seed_from_u64(2);
        assert!(flips(&mut rng, 50, 1.0).iter().all(|&f| f));
        assert!(flips(&mut rng, 50, 0.0).iter().all(|&f| !f));
    }

    #[test]
    fn a_degenerate_angle_range_gives_zero() {
        let mut rng = StdRng::seed_from_u64(3);
        assert_eq!(angles(&mut rng, 3, 0.0), vec![0.0; 3]);
    }
}
