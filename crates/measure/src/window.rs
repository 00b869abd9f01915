//! Windows: an epoch measured in part and projected whole, so that a job whose epoch
//! takes minutes is measured in seconds. An epoch under a [`WindowRule`] is measured
//! from its start through its first batch (the start-up: workers starting, the pipeline
//! filling), then a warm-up of as many batches as the prefetch queue holds and two more
//! (a queue filled while the consumer waited hands out batches that come free), lasting
//! at least [`WARMUP_SHARE`] of the window from the epoch's start (a fresh process and
//! its workers run slower for their first seconds), then a window of steady batches, at
//! least [`WindowRule::min_batches`] and `window_s` long; then the epoch is cut (its
//! iterator dropped, which ends non-persistent workers: the end of the epoch) and
//! projected: what was measured, plus the batches left at the window's steady time per
//! batch, plus the end, with the 95% interval of that time per batch. An epoch that ends
//! before its window is complete is measured whole. So is one whose window slows down
//! (its second half more than [`SLOWING`] slower than its first: a dataset that gets
//! slower through the epoch, a cache that stops helping), since a projection from its
//! start would be wrong: the cut waits until the window is steady, and the epoch says
//! why it was measured whole. The PyTorch runtime's script follows the same rule
//! (`python/pytorch_loader.py`, `window_done`); the projection is made here for both
//! runtimes, from the batches' times.

use serde::{Deserialize, Serialize};

use crate::stats;

/// A window whose second half's time per batch exceeds its first half's by more than
/// this share is not steady.
pub const SLOWING: f64 = 0.15;

/// How long the warm-up lasts at least, as a share of the window, counted from the
/// epoch's start. On the MNIST-example job (a user Dataset and a CNN step on the PyTorch
/// runtime, every epoch in a fresh process) the first seconds of an epoch ran slower
/// than the rest: windows from the end of the batch warm-up projected epochs a median 6%
/// long (up to 25%), windows after two seconds a median 0.4% (12 epochs, 2-core VM).
pub const WARMUP_SHARE: f64 = 2.0 / 3.0;

/// When an epoch is cut: after its first batch, `warmup_batches` more and `warmup_s`
/// from the epoch's start, then a window of at least `min_batches` that lasts
/// `window_s`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WindowRule {
    pub warmup_batches: usize,
    pub warmup_s: f64,
    pub window_s: f64,
    pub min_batches: usize,
}

/// The fewest batches a window holds, however long they take.
pub const MIN_WINDOW_BATCHES: usize = 10;

/// How a cut epoch was projected.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// The batches measured (the first, the warm-up and the window).
    pub measured_batches: usize,
    /// Seconds measured: from the epoch's start to the end of its cut.
    pub measured_s: f64,
    /// The batches of the window.
    pub window_batches: usize,
    /// The window's steady seconds per batch.
    pub steady_batch_s: f64,
    /// The 95% half-width of the projected epoch, from the scatter of the window's
    /// batches.
    pub plus_minus_s: f64,
    /// Seconds from the last batch measured until the cut epoch's iterator was gone.
    pub end_s: f64,
}

impl WindowRule {
    /// The rule for a loader whose prefetch queue holds `queue` batches.
    pub fn new(window_s: f64, queue: usize) -> WindowRule {
        WindowRule {
            warmup_batches: queue + 2,
            warmup_s: window_s * WARMUP_SHARE,
            window_s,
            min_batches: MIN_WINDOW_BATCHES,
        }
    }

    /// Where the window starts, once the warm-up is over: the index of its first batch,
    /// the first after `warmup_batches` whose predecessor came `warmup_s` or more after
    /// the epoch's start.
    fn first(&self, at_s: &[f64]) -> Option<usize> {
        let after_warmup_s = at_s.partition_point(|&at| at < self.warmup_s) + 1;
        let first = after_warmup_s.max(1 + self.warmup_batches);
        (first <= at_s.len()).then_some(first)
    }

    /// Whether the window is complete and steady after the batches on the device at
    /// `at_s` (seconds from the epoch's start, in order).
    pub fn done(&self, at_s: &[f64]) -> bool {
        self.complete(at_s) && slowing(self, at_s).is_none()
    }

    /// Whether the window has its batches and its time, steady or not.
    fn complete(&self, at_s: &[f64]) -> bool {
        let (Some(first), Some(&last)) = (self.first(at_s), at_s.last()) else {
            return false;
        };
        at_s.len() >= first + self.min_batches && last - at_s[first - 1] >= self.window_s
    }

    /// Why an epoch measured whole under this rule was not cut, where the window was
    /// complete at some batch but never steady; `None` where the epoch ended before its
    /// window was complete (it was short) or it was cut.
    pub fn whole_because(&self, at_s: &[f64]) -> Option<String> {
        let complete = (1..=at_s.len()).find(|&n| self.complete(&at_s[..n]))?;
        let slower = slowing(self, &at_s[..complete])?;
        Some(format!(
            "measured whole: it slowed through its window (the second half {:.0}% slower \
             than the first), so the start of the epoch does not stand for the rest",
            slower * 100.0
        ))
    }

    /// The projection of an epoch of `epoch_batches` cut after the batches at `at_s`,
    /// `measured_s` from its start to the end of the cut.
    pub fn project(
        &self,
        at_s: &[f64],
        measured_s: f64,
        epoch_batches: usize,
    ) -> Option<Projection> {
        let first = self.first(at_s)?;
        let last = *at_s.last()?;
        if at_s.len() < first + 2 {
            return None;
        }
        let gaps: Vec<f64> = at_s[first - 1..].windows(2).map(|w| w[1] - w[0]).collect();
        let n = gaps.len();
        let steady = (last - at_s[first - 1]) / n as f64;
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let variance = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let left = epoch_batches.saturating_sub(at_s.len()) as f64;
        let half = stats::t_975(n - 1).unwrap_or(f64::INFINITY) * (variance / n as f64).sqrt();
        Some(Projection {
            measured_batches: at_s.len(),
            measured_s,
            window_batches: n,
            steady_batch_s: steady,
            plus_minus_s: left * half,
            end_s: (measured_s - last).max(0.0),
        })
    }
}

impl Projection {
    /// The projected epoch: what was measured, the batches left at the steady time.
    pub fn epoch_s(&self, epoch_batches: usize) -> f64 {
        let left = epoch_batches.saturating_sub(self.measured_batches) as f64;
        self.measured_s + left * self.steady_batch_s
    }
}

/// How much slower the window's second half ran than its first (a share), where that is
/// more than [`SLOWING`].
fn slowing(rule: &WindowRule, at_s: &[f64]) -> Option<f64> {
    let start = rule.first(at_s)? - 1;
    let n = at_s.len().checked_sub(start + 1)?;
    if n < 4 {
        return None;
    }
    let middle = start + n / 2;
    let first_half = (at_s[middle] - at_s[start]) / (middle - start) as f64;
    let second_half = (at_s[at_s.len() - 1] - at_s[middle]) / (at_s.len() - 1 - middle) as f64;
    let slower = second_half / first_half - 1.0;
    (first_half > 0.0 && slower > SLOWING).then_some(slower)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches at a steady `batch_s` after a first batch at `first_s`.
    fn steady(first_s: f64, batch_s: f64, batches: usize) -> Vec<f64> {
        (0..batches).map(|i| first_s + i as f64 * batch_s).collect()
    }

    #[test]
    fn an_epoch_is_cut_once_its_window_has_its_batches_and_its_time() {
        let rule = WindowRule::new(1.0, 4);
        // First batch, 6 of warm-up, then the window from batch 7 on.
        let at = steady(2.0, 0.05, 200);
        let cut = (1..=at.len()).find(|&n| rule.done(&at[..n])).unwrap();
        // 20 batches of 0.05 s make the second; the minimum is 10.
        assert_eq!(cut, 7 + 20);
        let short = steady(0.5, 0.2, 12);
        assert!(
            !(1..=short.len()).any(|n| rule.done(&short[..n])),
            "ends first"
        );
    }

    #[test]
    fn a_window_that_slows_is_not_cut_and_says_why() {
        // The window starts after 2/3 s; the batches slow from 1 s on, inside it.
        let rule = WindowRule::new(1.0, 0);
        let mut at = steady(0.1, 0.05, 19);
        let mut t = *at.last().unwrap();
        for _ in 0..200 {
            t += 0.1;
            at.push(t);
        }
        assert!(!rule.done(&at[..30]));
        let why = rule.whole_because(&at[..30]).unwrap();
        assert!(
            why.starts_with("measured whole: it slowed through its window"),
            "{why}"
        );
        assert_eq!(rule.whole_because(&steady(0.1, 0.05, 100)), None);
    }

    /// A whole epoch recorded on the project's VM: each batch's time from the epoch's
    /// start, and the epoch's seconds.
    #[derive(serde::Deserialize)]
    struct Recorded {
        prefetch_queue: usize,
        seconds: f64,
        at_s: Vec<f64>,
    }

    impl Recorded {
        fn read(json: &str) -> Recorded {
            serde_json::from_str(json).unwrap()
        }

        /// Where `rule` cuts the epoch, and the projection it makes there.
        fn cut_by(&self, rule: &WindowRule) -> (usize, Projection) {
            let at = &self.at_s;
            let end_s = self.seconds - at[at.len() - 1];
            let cut = (1..=at.len()).find(|&n| rule.done(&at[..n])).unwrap();
            let projection = rule
                .project(&at[..cut], at[cut - 1] + end_s, at.len())
                .unwrap();
            (cut, projection)
        }

        /// The projected epoch's difference from the whole one, a share.
        fn error(&self, projection: &Projection) -> f64 {
            projection.epoch_s(self.at_s.len()) / self.seconds - 1.0
        }
    }

    /// `tests/data/window/heavy_epoch.json` (seed-heavy, our engine): cut where the rule
    /// would have cut it, its projection lands within 3% of what the whole epoch took.
    #[test]
    fn a_projection_from_a_window_matches_a_recorded_whole_epoch() {
        let recorded = Recorded::read(include_str!("../../../tests/data/window/heavy_epoch.json"));
        let rule = WindowRule::new(3.0, recorded.prefetch_queue);
        let (cut, projection) = recorded.cut_by(&rule);
        assert!(cut < recorded.at_s.len(), "cut after {cut} batches");
        let error = recorded.error(&projection);
        assert!(
            error.abs() < 0.03,
            "{:+.1}% off the whole epoch",
            error * 100.0
        );
        assert!(projection.plus_minus_s < 0.1 * recorded.seconds);
    }

    /// `tests/data/window/mnist_epoch.json` (the MNIST-example job on the PyTorch runtime,
    /// a fresh process): its first seconds ran slower than the rest, so a window right
    /// after the batch warm-up projected the epoch 25% long; after the warm-up's time,
    /// within 5%.
    #[test]
    fn a_window_after_the_warmup_time_projects_an_epoch_that_started_slow() {
        let recorded = Recorded::read(include_str!("../../../tests/data/window/mnist_epoch.json"));
        let rule = WindowRule::new(3.0, recorded.prefetch_queue);
        let (cut, projection) = recorded.cut_by(&rule);
        assert!(cut < recorded.at_s.len() / 2, "cut after {cut} batches");
        let error = recorded.error(&projection);
        assert!(
            error.abs() < 0.05,
            "{:+.1}% off the whole epoch",
            error * 100.0
        );
        let batches_only = WindowRule {
            warmup_s: 0.0,
            ..rule
        };
        let early = recorded.error(&recorded.cut_by(&batches_only).1);
        assert!(
            early > 0.15,
            "without the warm-up's time: {:+.1}%",
            early * 100.0
        );
    }

    #[test]
    fn a_projection_from_a_window_matches_the_whole_epoch() {
        // A recorded epoch of 160 batches: 0.9 s to the first, then about 75 ms each with
        // ±10 ms of jitter, and 0.05 s of shutdown at the end.
        let mut at = vec![0.9];
        let jitter = [
            0.01, -0.008, 0.004, -0.01, 0.006, 0.0, -0.004, 0.009, -0.006, 0.002,
        ];
        for i in 1..160 {
            at.push(at[i - 1] + 0.075 + jitter[i % jitter.len()]);
        }
        let whole_s = at[159] + 0.05;
        let rule = WindowRule::new(2.0, 4);
        let cut = (1..=at.len()).find(|&n| rule.done(&at[..n])).unwrap();
        let projection = rule.project(&at[..cut], at[cut - 1] + 0.05, 160).unwrap();
        let projected = projection.epoch_s(160);
        assert!(
            (projected / whole_s - 1.0).abs() < 0.01,
            "{projected} against {whole_s}"
        );
        assert!(projection.plus_minus_s > 0.0 && projection.plus_minus_s < 0.05 * whole_s);
        assert_eq!(projection.window_batches, cut - 7);
    }
}
