//! Drawing each sample's random parameters from the caller's seeded generator. Every op
//! draws here, never from libtorch's global generator: that one is shared by all worker
//! threads, so batches would depend on thread timing. The ops themselves take the drawn
//! values as plain arguments, which keeps them testable with fixed parameters.

use rand::Rng;
use rand::rngs::StdRng;

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
