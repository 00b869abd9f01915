//! How much of an item's time a Python `__getitem__` holds the GIL, estimated from how
//! thread workers fare against process workers at the same counts; busy time alone
//! cannot say, since PIL and torch release the GIL while they work. The model: an item
//! takes `t` of one core, a share `g` of it with the GIL held. `n` process workers on
//! `c` cores spread all of it, so an epoch takes `a + b / min(n, c)` (`a`: what no
//! worker count changes, `b`: the items' work on one core); `n` threads spread only the
//! part that releases the GIL, so it takes `a + b · max(g, 1 / min(n, c))`. Process
//! workers at two effective counts or more give `a` and `b` (least squares); each count
//! where threads are slower beyond the noise then gives `g = (T − a) / b`, and the
//! estimate is their mean. Where threads keep up at every count, `g` is at most one
//! worker's share, `1 / min(n, c)` at the most workers. It cannot be estimated from one
//! count, on fewer cores than the counts need to differ, or where process workers do not
//! get faster with more of them (the epoch does not wait on the items' work).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::Standing;

/// What the measurements say about the share of `__getitem__`'s time with the GIL held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "estimate")]
pub enum GilShare {
    /// Estimated from the counts where threads were slower beyond the noise.
    About { share: f64, workers: Vec<usize> },
    /// Threads kept up at every count: no more than one worker's share.
    AtMost { share: f64, workers: usize },
    /// Threads were slower at no count beyond the noise, nor shown to keep up at all.
    NotResolved,
    /// Threads and processes were measured at one count only.
    OneCount,
    /// The counts differ only past this machine's cores, which limit processes too.
    FewerCores { cores: usize },
    /// Process workers were not faster with more of them, beyond the noise.
    ProcessesDoNotScale,
}

/// Threads against process workers at one count, as the model reads them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct GilPoint {
    pub workers: usize,
    /// The threads' and the processes' time (the same measure for both, drift taken
    /// out).
    pub threads_s: f64,
    pub processes_s: f64,
    /// How the threads stood against the processes.
    pub threads_are: Standing,
}

/// The estimate from `points` (one per count) on `cores` cores; `processes_faster(a, b)`
/// says whether process workers at `b` were faster than at `a` beyond the noise.
pub(super) fn estimate(
    points: &[GilPoint],
    cores: usize,
    processes_faster: impl Fn(&GilPoint, &GilPoint) -> bool,
) -> GilShare {
    let counts: BTreeSet<usize> = points.iter().map(|p| p.workers).collect();
    if counts.len() < 2 {
        return GilShare::OneCount;
    }
    let effective = |p: &GilPoint| p.workers.min(cores).max(1);
    let spread: BTreeSet<usize> = points.iter().map(effective).collect();
    let (Some(&fewest), Some(&most)) = (spread.first(), spread.last()) else {
        return GilShare::OneCount;
    };
    if spread.len() < 2 {
        return GilShare::FewerCores { cores };
    }
    // The smallest count at each end stands for it: past the cores, more add nothing.
    let at = |eff: usize| {
        points
            .iter()
            .filter(|p| effective(p) == eff)
            .min_by_key(|p| p.workers)
    };
    let (Some(low), Some(high)) = (at(fewest), at(most)) else {
        return GilShare::OneCount;
    };
    if !processes_faster(low, high) {
        return GilShare::ProcessesDoNotScale;
    }
    let line: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (1.0 / effective(p) as f64, p.processes_s))
        .collect();
    let Some((fixed_s, work_s)) = least_squares(&line).filter(|(_, b)| *b > 0.0) else {
        return GilShare::ProcessesDoNotScale;
    };
    let shares: Vec<(usize, f64)> = points
        .iter()
        .filter(|p| p.threads_are == Standing::Slower)
        .map(|p| {
            (
                p.workers,
                ((p.threads_s - fixed_s) / work_s).clamp(0.0, 1.0),
            )
        })
        .collect();
    let kept_up = |p: &GilPoint| matches!(p.threads_are, Standing::Faster | Standing::AsFast);
    if shares.is_empty() && !points.iter().all(kept_up) {
        return GilShare::NotResolved;
    }
    if shares.is_empty() {
        return GilShare::AtMost {
            share: 1.0 / most as f64,
            workers: high.workers,
        };
    }
    GilShare::About {
        share: shares.iter().map(|(_, g)| g).sum::<f64>() / shares.len() as f64,
        workers: shares.iter().map(|(w, _)| *w).collect(),
    }
}

/// The line `y = a + b · x` through `points` by least squares; `None` without two
/// distinct `x`.
fn least_squares(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = points.iter().map(|(_, y)| y).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    let sxy: f64 = points
        .iter()
        .map(|(x, y)| (x - mean_x) * (y - mean_y))
        .sum();
    (sxx > 0.0).then(|| {
        let b = sxy / sxx;
        (mean_y - b * mean_x, b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Epoch times by the model itself: `a + b / n` for processes, `a + b · max(g, 1/n)`
    /// for threads, on `cores` cores.
    fn modelled(counts: &[usize], cores: usize, a: f64, b: f64, g: f64) -> Vec<GilPoint> {
        counts
            .iter()
            .map(|&workers| {
                let n = workers.min(cores) as f64;
                let processes_s = a + b / n;
                let threads_s = a + b * g.max(1.0 / n);
                let threads_are = if threads_s > processes_s * 1.05 {
                    Standing::Slower
                } else {
                    Standing::AsFast
                };
                GilPoint {
                    workers,
                    threads_s,
                    processes_s,
                    threads_are,
                }
            })
            .collect()
    }

    fn scales(a: &GilPoint, b: &GilPoint) -> bool {
        b.processes_s < a.processes_s / 1.05
    }

    #[test]
    fn a_share_held_is_read_back_from_every_count_where_threads_fall_behind() {
        let points = modelled(&[2, 4, 8], 16, 0.5, 8.0, 0.6);
        let GilShare::About { share, workers } = estimate(&points, 16, scales) else {
            panic!("{:?}", estimate(&points, 16, scales));
        };
        assert!((share - 0.6).abs() < 1e-9, "{share}");
        assert_eq!(workers, [2, 4, 8]);
    }

    #[test]
    fn counts_past_the_cores_count_as_the_cores() {
        // On 4 cores, 8 processes are no faster than 4; the model still reads 0.3.
        let points = modelled(&[2, 8], 4, 0.5, 8.0, 0.3);
        assert_eq!(points[1].processes_s, 2.5);
        let GilShare::About { share, workers } = estimate(&points, 4, scales) else {
            panic!("{:?}", estimate(&points, 4, scales));
        };
        assert!((share - 0.3).abs() < 1e-9, "{share}");
        assert_eq!(workers, [8], "at 2 a share of 0.3 is hidden under 1/2");
    }

    #[test]
    fn threads_that_keep_up_bound_the_share_by_one_workers_share() {
        let points = modelled(&[2, 4], 16, 0.5, 8.0, 0.1);
        assert_eq!(
            estimate(&points, 16, scales),
            GilShare::AtMost {
                share: 0.25,
                workers: 4
            }
        );
    }

    #[test]
    fn threads_within_the_noise_neither_estimate_nor_bound_the_share() {
        let mut points = modelled(&[2, 4], 16, 0.5, 8.0, 0.1);
        points[1].threads_are = Standing::NotResolved;
        assert_eq!(estimate(&points, 16, scales), GilShare::NotResolved);
    }

    #[test]
    fn one_count_too_few_cores_or_flat_processes_say_nothing() {
        let one = modelled(&[4], 16, 0.5, 8.0, 0.6);
        assert_eq!(estimate(&one, 16, scales), GilShare::OneCount);
        let past_the_cores = modelled(&[2, 4], 2, 0.5, 8.0, 0.6);
        assert_eq!(
            estimate(&past_the_cores, 2, scales),
            GilShare::FewerCores { cores: 2 }
        );
        // Processes as fast at 4 as at 2: the epoch waits on something else.
        let flat = modelled(&[2, 4], 16, 5.0, 0.01, 0.6);
        assert_eq!(estimate(&flat, 16, scales), GilShare::ProcessesDoNotScale);
    }
}
