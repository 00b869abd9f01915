//! Statistics over repeated measurements: pure functions on slices of seconds — the
//! median, min/max, percentiles, the relative spread and a seeded bootstrap interval for
//! the median, folded together in an [`Estimate`]; Student's t for intervals of means
//! ([`t_975`]). Non-finite values are ignored.

use serde::{Deserialize, Serialize};

/// Resamples a bootstrap interval draws: enough for a stable 95% interval, and cheap.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// The seed of every bootstrap, so that the same measurements give the same interval.
const BOOTSTRAP_SEED: u64 = 0x6c6f_6164_6572_6265;

/// The median, or `None` for no values. Even counts average the middle two.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    })
}

/// The smallest and largest value.
pub fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    let mut finite = values.iter().copied().filter(|v| v.is_finite());
    let first = finite.next()?;
    Some(finite.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
}

/// The `p`-th percentile (0–100), nearest-rank.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// `(max − min) / median`: how far apart the measurements lie, relative to their
/// typical value (0.1 = a 10% spread). `None` for no values or a zero median.
pub fn relative_spread(values: &[f64]) -> Option<f64> {
    let (lo, hi) = min_max(values)?;
    let mid = median(values)?;
    (mid > 0.0).then(|| (hi - lo) / mid)
}

/// The percentile-bootstrap interval of the median at `confidence` (0.95 for 95%):
/// the median of [`BOOTSTRAP_RESAMPLES`] resamples with replacement, drawn from a
/// fixed seed so the interval is reproducible. A single value is its own interval.
pub fn bootstrap_median_interval(values: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() {
        return None;
    }
    let mut random = SplitMix64(BOOTSTRAP_SEED);
    let mut resample = vec![0.0; finite.len()];
    let mut medians = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for slot in &mut resample {
            *slot = finite[random.below(finite.len())];
        }
        medians.extend(median(&resample));
    }
    let tail = (1.0 - confidence.clamp(0.0, 1.0)) / 2.0 * 100.0;
    Some((
        percentile(&medians, tail)?,
        percentile(&medians, 100.0 - tail)?,
    ))
}

/// A deterministic generator (SplitMix64): the bootstrap must not depend on a crate's
/// choice of algorithm, or the same results would get different intervals.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n ≥ 1); the modulo bias is below 1e-15 for any slice we hold.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Student's t at 97.5% for `df` degrees of freedom: a 95% two-sided interval of a mean
/// estimated from values whose scatter was itself estimated with `df` degrees of freedom
/// is the mean ± this × its standard error. Exact to three decimals up to 30; between
/// the listed larger values the nearer smaller one's (wider) value; 1.960 past 120.
/// `None` for zero degrees of freedom: the scatter is unknown.
pub fn t_975(df: usize) -> Option<f64> {
    const FIRST_30: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    Some(match df {
        0 => return None,
        1..=30 => FIRST_30[df - 1],
        31..=39 => 2.042,
        40..=59 => 2.021,
        60..=119 => 2.000,
        120 => 1.980,
        _ => 1.960,
    })
}

/// What repeated measurements of one quantity say: the median, the range, the 95%
/// bootstrap interval of the median and the relative spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// The 95% bootstrap interval of the median.
    pub low: f64,
    pub high: f64,
    /// `(max − min) / median`.
    pub spread: f64,
    /// How many measurements.
    pub n: usize,
}

impl Estimate {
    /// The estimate of `values`, or `None` when none is finite.
    pub fn of(values: &[f64]) -> Option<Estimate> {
        let (min, max) = min_max(values)?;
        let (low, high) = bootstrap_median_interval(values, 0.95)?;
        Some(Estimate {
            median: median(values)?,
            min,
            max,
            low,
            high,
            spread: relative_spread(values).unwrap_or(0.0),
            n: values.iter().filter(|v| v.is_finite()).count(),
        })
    }

    /// True when the two 95% intervals do not overlap.
    pub fn differs_from(&self, other: &Estimate) -> bool {
        self.high < other.low || other.high < self.low
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_widens_as_the_scatter_is_known_from_fewer_values() {
        assert_eq!(t_975(0), None);
        assert_eq!(t_975(1), Some(12.706));
        assert_eq!(t_975(4), Some(2.776));
        assert_eq!(t_975(30), Some(2.042));
        assert_eq!(t_975(1000), Some(1.960));
        let all: Vec<f64> = (1..200).filter_map(t_975).collect();
        assert!(all.windows(2).all(|w| w[0] >= w[1]));
    }

    #[test]
    fn spread_is_range_over_median() {
        assert_eq!(relative_spread(&[0.5, 1.0, 1.5]), Some(1.0));
        assert_eq!(relative_spread(&[4.0, 2.0, 3.0, 5.0]), Some(3.0 / 3.5));
        assert_eq!(relative_spread(&[2.0]), Some(0.0));
        assert_eq!(relative_spread(&[]), None);
        assert_eq!(relative_spread(&[0.0, 0.0]), None);
    }

    #[test]
    fn bootstrap_interval_of_identical_values_is_that_value() {
        assert_eq!(bootstrap_median_interval(&[0.5; 7], 0.95), Some((0.5, 0.5)));
        assert_eq!(bootstrap_median_interval(&[3.0], 0.95), Some((3.0, 3.0)));
        assert_eq!(bootstrap_median_interval(&[], 0.95), None);
    }

    #[test]
    fn bootstrap_interval_brackets_the_median_and_is_reproducible() {
        let values: Vec<f64> = (1..=21).map(f64::from).collect();
        let (low, high) = bootstrap_median_interval(&values, 0.95).unwrap();
        // The median is 11; resampled medians of 21 values rarely stray beyond ±4.
        assert!((7.0..11.0).contains(&low), "{low}");
        assert!(high > 11.0 && high <= 15.0, "{high}");
        assert_eq!(
            bootstrap_median_interval(&values, 0.95),
            Some((low, high)),
            "the same values give the same interval"
        );
        let (narrow_low, narrow_high) = bootstrap_median_interval(&values, 0.5).unwrap();
        assert!(narrow_low >= low && narrow_high <= high);
    }

    #[test]
    fn bootstrap_interval_stays_within_the_range() {
        let (low, high) = bootstrap_median_interval(&[1.0, 2.0, 10.0], 0.95).unwrap();
        assert!(low >= 1.0 && high <= 10.0 && low <= 2.0 && high >= 2.0);
    }

    #[test]
    fn estimate_folds_everything_and_compares_intervals() {
        let fast = Estimate::of(&[1.0, 1.1, 0.9, 1.0, 1.05]).unwrap();
        assert_eq!(fast.median, 1.0);
        assert_eq!((fast.min, fast.max), (0.9, 1.1));
        assert_eq!(fast.n, 5);
        assert!((fast.spread - 0.2).abs() < 1e-12);
        let slow = Estimate::of(&[2.0, 2.1, 1.9, 2.0, 2.05]).unwrap();
        assert!(fast.differs_from(&slow) && slow.differs_from(&fast));
        let overlapping = Estimate::of(&[0.95, 1.2, 1.0]).unwrap();
        assert!(!fast.differs_from(&overlapping));
        assert!(Estimate::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 1.0]), Some(1.0));
    }

    #[test]
    fn min_max_and_percentile() {
        assert_eq!(min_max(&[2.0, -1.0, 5.0]), Some((-1.0, 5.0)));
        assert_eq!(min_max(&[]), None);
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 95.0), Some(95.0));
        assert_eq!(percentile(&values, 0.0), Some(1.0));
        assert_eq!(percentile(&values, 100.0), Some(100.0));
    }
}
