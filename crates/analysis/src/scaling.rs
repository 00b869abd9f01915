//! The scaling curve: the steady epoch time (a typical epoch once the first is over, the
//! median of epochs 2 and later) against `num_workers`, for each family of configs that
//! differ only in `num_workers`; its knee, the fewest workers that no larger count
//! outgains by [`KNEE_GAIN`] per added worker; and the serial fraction of an Amdahl fit,
//! the share of the work that more workers cannot spread.

use serde::{Deserialize, Serialize};

use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::{Runtime, WorkerKind};
use loaderbench_measure::stats;

use super::ConfigRuns;

/// Each added worker must cut the steady epoch time by at least this share to be worth it.
pub const KNEE_GAIN: f64 = 0.10;

/// One measured point of a curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScalingPoint {
    pub num_workers: usize,
    pub config: usize,
    /// The median of the epochs after the first (the first when there is no other).
    /// Not the rate after the first batch: with many workers a short epoch is all
    /// prefetched, and that rate would flatter them.
    pub steady_epoch_s: f64,
}

/// Amdahl's law fitted to the points (no workers counting as one): `time(n) = t1 · (serial + (1 − serial) / n)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AmdahlFit {
    /// The fitted time with one worker.
    pub one_worker_s: f64,
    /// The fitted serial fraction, 0 (scales perfectly) to 1 (does not scale).
    pub serial_fraction: f64,
}

impl AmdahlFit {
    /// The fitted epoch time with `workers` workers.
    pub fn time_s(&self, workers: f64) -> f64 {
        self.one_worker_s * (self.serial_fraction + (1.0 - self.serial_fraction) / workers)
    }
}

/// The configs that differ only in `num_workers`, in increasing worker order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalingCurve {
    /// The label of the family's first config, without its `nw=N`.
    pub family: String,
    pub points: Vec<ScalingPoint>,
    /// The worker count past which one more worker gains less than [`KNEE_GAIN`];
    /// `None` while it still scales at the largest count measured.
    pub knee_workers: Option<usize>,
    pub fit: Option<AmdahlFit>,
}

/// A curve per family with at least two worker counts.
pub fn curves(configs: &[ConfigRuns<'_>]) -> Vec<ScalingCurve> {
    worker_families(configs.iter())
        .into_iter()
        .filter_map(|members| curve(&members))
        .collect()
}

/// Configs grouped into families that differ only in `num_workers`, in order of first
/// appearance. On the PyTorch runtime every process kind is DataLoader's workers (the
/// start method tells `fork` from `spawn`), and a config without workers is settled to
/// `auto` whatever kind the preset names: so `worker_kind: [fork]`'s configs without
/// workers and with them make one family, as `auto`'s do.
pub fn worker_families<'a, 'r: 'a>(
    configs: impl IntoIterator<Item = &'a ConfigRuns<'r>>,
) -> Vec<Vec<&'a ConfigRuns<'r>>> {
    let mut families: Vec<(Config, Vec<&ConfigRuns<'r>>)> = Vec::new();
    for runs in configs {
        let mut key = Config {
            num_workers: 0,
            ..runs.config.clone()
        };
        if key.runtime == Runtime::Pytorch && key.worker_kind != WorkerKind::Thread {
            key.worker_kind = WorkerKind::Auto;
        }
        match families.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(runs),
            None => families.push((key, vec![runs])),
        }
    }
    families.into_iter().map(|(_, members)| members).collect()
}

fn curve(members: &[&ConfigRuns<'_>]) -> Option<ScalingCurve> {
    let mut points: Vec<ScalingPoint> = members
        .iter()
        .filter_map(|runs| {
            let steady: Vec<f64> = runs.typical_epochs().map(|e| e.seconds).collect();
            Some(ScalingPoint {
                num_workers: runs.config.num_workers,
                config: runs.index,
                steady_epoch_s: stats::median(&steady)?,
            })
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    points.sort_by_key(|p| p.num_workers);
    let pairs: Vec<(usize, f64)> = points
        .iter()
        .map(|p| (p.num_workers, p.steady_epoch_s))
        .collect();
    let family = family_name(members[0].label);
    Some(ScalingCurve {
        family,
        knee_workers: knee(&pairs, KNEE_GAIN),
        fit: amdahl_fit(&pairs),
        points,
    })
}

/// The family a config belongs to: its label without `nw=N` (`num_workers` when nothing
/// else is left).
pub fn family_name(label: &str) -> String {
    let rest: Vec<&str> = label
        .split_whitespace()
        // `laptop · nw=2` (a config of an overlaid run) is the family `laptop`.
        .filter(|part| !part.starts_with("nw=") && *part != "·")
        .collect();
    if rest.is_empty() {
        "num_workers".to_owned()
    } else {
        rest.join(" ")
    }
}

/// The first worker count from which no larger count measured gains `gain` per added
/// worker (`t_i / t_later − 1`, divided by the workers added); `None` if every count
/// before the largest is outgained by a later one. Every later count, not only the
/// next: DataLoader's one worker is often slower than none (the batches cross processes
/// and nothing runs beside it) and two are faster than both, which the next count alone
/// read as a knee at no workers. `points` are `(workers, seconds)` in increasing worker
/// order.
pub fn knee(points: &[(usize, f64)], gain: f64) -> Option<usize> {
    let last = points.len().checked_sub(1)?;
    points[..last]
        .iter()
        .enumerate()
        .find(|&(i, &(workers, time))| {
            points[i + 1..].iter().all(|&(later_workers, later_time)| {
                let added = later_workers.saturating_sub(workers).max(1) as f64;
                (time / later_time - 1.0) / added < gain
            })
        })
        .map(|(_, &(workers, _))| workers)
}

/// Least squares of `time = a + b / n` over every point, which is Amdahl's law scaled
/// by the one-worker time: `1 / speed-up = serial + (1 − serial) / n` with
/// `serial = a / (a + b)`. No workers counts as one (`n = 1`): the main process does
/// all the work alone, the serial baseline the speed-up is measured from. Without it a
/// curve that falls from 0 workers and then stays flat would fit as "does not scale".
/// Points with more workers than the fastest (the most workers among equally fast
/// ones) are left out: there workers beyond the
/// cores slow the epoch down, which Amdahl's law cannot describe, and a rising tail
/// would fit as a serial fraction of 1. `None` with fewer than two distinct `n`.
pub fn amdahl_fit(points: &[(usize, f64)]) -> Option<AmdahlFit> {
    let finite: Vec<(usize, f64)> = points
        .iter()
        .copied()
        .filter(|(_, t)| t.is_finite())
        .collect();
    let fastest_n = finite
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?
        .0
        .max(1);
    let xy: Vec<(f64, f64)> = finite
        .iter()
        .filter(|(n, _)| (*n).max(1) <= fastest_n)
        .map(|(n, t)| (1.0 / (*n).max(1) as f64, *t))
        .collect();
    let count = xy.len() as f64;
    let mean_x = xy.iter().map(|(x, _)| x).sum::<f64>() / count;
    let mean_y = xy.iter().map(|(_, y)| y).sum::<f64>() / count;
    let sxx: f64 = xy.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    if xy.len() < 2 || sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = xy.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    let b = sxy / sxx;
    let a = mean_y - b * mean_x;
    let one_worker_s = a + b;
    (one_worker_s > 0.0).then(|| AmdahlFit {
        one_worker_s,
        serial_fraction: (a / one_worker_s).clamp(0.0, 1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Analysis;
    use super::*;
    use loaderbench_measure::fixtures::{config, each_once, result, run, two_epochs};

    #[test]
    fn knee_is_where_a_worker_stops_paying() {
        // 0→2 halves the time (50% per worker), 2→4 gains 60% over two workers (30%
        // each), 4→8 gains 25% over four workers (6% each): the knee is at 4.
        let points = [(0, 8.0), (2, 4.0), (4, 2.5), (8, 2.0)];
        assert_eq!(knee(&points, 0.10), Some(4));
        assert_eq!(knee(&points, 0.35), Some(2));
        assert_eq!(knee(&points, 0.01), None);
        assert_eq!(
            knee(&[(2, 1.0), (4, 1.2)], 0.10),
            Some(2),
            "slower is no gain"
        );
        assert_eq!(knee(&[(1, 1.0)], 0.10), None);
        // ddp-light's PyTorch curve: one worker slower than none, two faster than both
        // (19% per worker over none): still scaling, not a knee at no workers.
        assert_eq!(knee(&[(0, 0.22), (1, 0.27), (2, 0.16)], 0.10), None);
        // Two workers 12% faster than none is 6% a worker: the knee is at none.
        assert_eq!(knee(&[(0, 0.224), (1, 0.27), (2, 0.2)], 0.10), Some(0));
    }

    #[test]
    fn amdahl_fit_recovers_the_serial_fraction() {
        let law = |n: usize| 10.0 * (0.2 + 0.8 / n as f64);
        let points: Vec<(usize, f64)> = [0, 1, 2, 4, 8].map(|n| (n, law(n.max(1)) * 3.0)).to_vec();
        let fit = amdahl_fit(&points).unwrap();
        assert!((fit.serial_fraction - 0.2).abs() < 1e-9, "{fit:?}");
        assert!((fit.one_worker_s - 30.0).abs() < 1e-9, "{fit:?}");
        assert!((fit.time_s(4.0) - law(4) * 3.0).abs() < 1e-9);
        let perfect = amdahl_fit(&[(1, 8.0), (2, 4.0), (8, 1.0)]).unwrap();
        assert!(perfect.serial_fraction.abs() < 1e-9);
        let flat = amdahl_fit(&[(2, 3.0), (4, 3.0)]).unwrap();
        assert!((flat.serial_fraction - 1.0).abs() < 1e-9);
        let slower = amdahl_fit(&[(0, 3.0), (2, 3.5), (4, 4.0)]);
        assert!(slower.is_none(), "workers only slow it down: {slower:?}");
        assert!(
            amdahl_fit(&[(0, 3.0), (1, 2.0)]).is_none(),
            "no workers and one worker are the same n"
        );
    }

    /// `time(n) = t1 · (serial + (1 − serial) / n)`, no workers timed as one worker.
    fn amdahl_curve(serial: f64, one_worker_s: f64, workers: &[usize]) -> Vec<(usize, f64)> {
        workers
            .iter()
            .map(|&n| {
                let n_eff = n.max(1) as f64;
                (n, one_worker_s * (serial + (1.0 - serial) / n_eff))
            })
            .collect()
    }

    #[test]
    fn amdahl_fit_recovers_known_serial_fractions_from_no_workers_up() {
        for serial in [0.0, 0.05, 0.25, 0.5, 0.9, 1.0] {
            for workers in [&[0, 2, 4, 8][..], &[0, 2][..], &[0, 1, 3, 6][..]] {
                let fit = amdahl_fit(&amdahl_curve(serial, 0.11, workers)).unwrap();
                assert!(
                    (fit.serial_fraction - serial).abs() < 1e-9,
                    "serial {serial} over {workers:?}: {fit:?}"
                );
                assert!((fit.one_worker_s - 0.11).abs() < 1e-9, "{fit:?}");
            }
        }
    }

    #[test]
    fn a_curve_that_falls_then_flattens_is_not_serial() {
        // seed-light-pytorch on 2 cores: 0.11 s without workers, 0.04 s from 2 workers on
        // (the cores, not the work, stop the gain). Fitting only the workers' flat tail
        // gave "serial fraction 1.00".
        let points = [(0, 0.11), (2, 0.04), (4, 0.04), (8, 0.04)];
        let fit = amdahl_fit(&points).unwrap();
        // Least squares over n = 1, 2, 4, 8: time = 0.0187 + 0.0828 / n.
        assert!((fit.serial_fraction - 0.1842).abs() < 1e-3, "{fit:?}");
        // No worse than what the fastest point allows: 0.04 / 0.11.
        assert!(fit.serial_fraction < 0.04 / 0.11);
        // On 2 cores 8 workers oversubscribe and the epoch gets slower again (measured:
        // 0.05, 0.03, 0.03, 0.07 s); the rising tail read as "serial fraction 1.00".
        let fit = amdahl_fit(&[(0, 0.05), (2, 0.03), (4, 0.03), (8, 0.07)]).unwrap();
        // Fitted over 0, 2 and 4 workers (the fastest): time = 0.020 + 0.0286 / n.
        assert!((fit.serial_fraction - 0.4118).abs() < 1e-3, "{fit:?}");
    }

    #[test]
    fn curves_group_configs_that_differ_only_in_workers() {
        let batch_s =
            |n: usize| [0.4, 0.2, 0.1, 0.09][[0, 2, 4, 8].iter().position(|w| *w == n).unwrap()];
        let mut configs: Vec<_> = [0, 2, 4, 8].map(|n| config(n, false)).to_vec();
        configs.push(config(4, true));
        let results = configs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let b = batch_s(c.num_workers);
                run(i, c.clone(), two_epochs(0.5, b, 11))
            })
            .collect();
        let analysis = Analysis::of(&result(configs, results));
        assert_eq!(
            analysis.scaling.len(),
            1,
            "the lone persistent config has no curve"
        );
        let curve = &analysis.scaling[0];
        assert_eq!(curve.family, "num_workers");
        let workers: Vec<usize> = curve.points.iter().map(|p| p.num_workers).collect();
        assert_eq!(workers, vec![0, 2, 4, 8]);
        // Epoch 2 of nw=0: a 0.5 s first batch, then 10 batches of 0.4 s.
        assert!((curve.points[0].steady_epoch_s - 4.5).abs() < 1e-9);
        assert_eq!(curve.knee_workers, Some(4));
        // Least squares over 0 (as 1), 2, 4 and 8 workers: time = 0.743 + 3.694 / n.
        let serial = curve.fit.unwrap().serial_fraction;
        assert!((serial - 0.1675).abs() < 1e-3, "{serial}");
    }

    /// ddp-light's PyTorch configs: `worker_kind: [fork]` with workers, `auto` (as
    /// settled) without; one family, whose curve starts at no workers. `spawn` workers
    /// are a family of their own.
    #[test]
    fn pytorch_s_config_without_workers_heads_its_process_kind_s_curve() {
        use loaderbench_engine::preset::StartMethod;
        let pytorch = |workers: usize, kind: WorkerKind, method: StartMethod| Config {
            runtime: Runtime::Pytorch,
            worker_kind: kind,
            start_method: method,
            ..config(workers, false)
        };
        let platform = StartMethod::platform_default();
        let configs = vec![
            pytorch(0, WorkerKind::Auto, platform),
            pytorch(1, WorkerKind::Fork, StartMethod::Fork),
            pytorch(2, WorkerKind::Fork, StartMethod::Fork),
            pytorch(1, WorkerKind::Spawn, StartMethod::Spawn),
            pytorch(2, WorkerKind::Spawn, StartMethod::Spawn),
        ];
        let analysis = Analysis::of(&each_once(configs, || two_epochs(0.5, 0.1, 11)));
        let families: Vec<Vec<usize>> = analysis
            .scaling
            .iter()
            .map(|curve| curve.points.iter().map(|p| p.config).collect())
            .collect();
        // No workers joins the platform's start method's family, which comes first.
        let expected = if platform == StartMethod::Fork {
            [vec![0, 1, 2], vec![3, 4]]
        } else {
            [vec![0, 3, 4], vec![1, 2]]
        };
        assert_eq!(families, expected);
    }
}
