//! Threads against process workers: where a run measured the same config with thread
//! workers and with process workers at the same `num_workers` (configs that differ only
//! in how their workers run), how much faster one is than the other at each count, by
//! the recommendation's noise model (so a difference within the noise is said to be
//! one), and what each costs in memory (every process's PSS summed at its peak) and in
//! CPU time. Which configs run threads, which processes, and what each is called belongs
//! to the runtime ([`side_of`]). Where a Python `__getitem__` runs, the comparison also
//! estimates the share of its time with the GIL held ([`gil`]); our engine runs no
//! Python, so there it says speed, memory and CPU time only. The paragraph is written in
//! [`text`].

use serde::{Deserialize, Serialize};

use loaderbench_engine::plan::{Config, KNOBS_IN_CONFIG_ORDER, common_config};
use loaderbench_engine::preset::{
    BatchTransfer, DatasetTransfer, Runtime, StartMethod, WorkerKind,
};
use loaderbench_measure::results::RunResult;
use loaderbench_measure::stats;

use super::ConfigRuns;
use super::recommend::noise::{NoiseModel, Relation};
use super::recommend::{Candidate, candidates, noise_input, tie_margin};

pub mod gil;
mod text;

use gil::GilPoint;
pub use gil::GilShare;

/// Threads against one kind of process workers, on one dataset, pipeline and loader.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerKindComparison {
    /// What is compared, and where: `threads against fork workers (synthetic · light ·
    /// loaderbench)`.
    pub title: String,
    /// The two sides in words: `threads`, `fork workers`; `torchdata.nodes threads`,
    /// `DataLoader's fork workers`.
    pub threads: String,
    pub processes: String,
    /// One per count both measured, fewest workers first.
    pub points: Vec<KindPoint>,
    /// The share of `__getitem__`'s time with the GIL held; `None` where no Python
    /// loads the data (our engine).
    pub gil: Option<GilShare>,
    /// The comparison in one paragraph, with the figures.
    pub text: String,
}

/// Threads against process workers at one count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindPoint {
    pub num_workers: usize,
    pub threads_config: usize,
    pub processes_config: usize,
    /// How the threads stand against the processes, beyond the noise.
    pub threads_are: Standing,
    /// The processes' projected time over the threads' (above 1: threads are faster),
    /// drift between rounds taken out.
    pub speedup: f64,
    /// The 95% interval's half-width of `speedup − 1`, as a share; `None` where the
    /// noise is unknown.
    pub plus_minus: Option<f64>,
    /// A typical epoch's seconds (the median after the first), each side.
    pub threads_epoch_s: Option<f64>,
    pub processes_epoch_s: Option<f64>,
    /// Every process's PSS summed at its peak, the median over repeats, each side.
    pub threads_memory_bytes: Option<u64>,
    pub processes_memory_bytes: Option<u64>,
    /// CPU seconds a typical epoch took, every process of the config together, each side.
    pub threads_cpu_s: Option<f64>,
    pub processes_cpu_s: Option<f64>,
}

/// Threads against process workers at one count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Faster by more than the tie margin, beyond the noise.
    Faster,
    /// Slower by more than the tie margin, beyond the noise.
    Slower,
    /// Within the tie margin, beyond the noise.
    AsFast,
    /// The interval reaches across the margin, or the noise is unknown.
    NotResolved,
    /// Every measurement of one side was disturbed by other load.
    Disturbed,
}

/// What SPDL's thread workers are called; the text says how they hand samples on.
const SPDL_THREADS: &str = "SPDL threads";

/// How a config's workers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workers {
    Threads,
    Processes,
}

/// How `config`'s workers run and what they are called, by its runtime; `None` without
/// workers. Our engine runs threads unless told to spawn or fork; the PyTorch runtime's
/// `thread` is torchdata.nodes' thread workers, anything else DataLoader's processes,
/// started by its start method.
fn side_of(config: &Config) -> Option<(Workers, String)> {
    if config.num_workers == 0 {
        return None;
    }
    let processes = matches!(config.worker_kind, WorkerKind::Spawn | WorkerKind::Fork);
    Some(match config.runtime {
        Runtime::Loaderbench if processes => (
            Workers::Processes,
            format!("{} workers", config.worker_kind.name()),
        ),
        Runtime::Loaderbench => (Workers::Threads, "threads".to_owned()),
        Runtime::Pytorch if config.worker_kind == WorkerKind::Thread => {
            (Workers::Threads, "torchdata.nodes threads".to_owned())
        }
        Runtime::Pytorch => (
            Workers::Processes,
            format!("DataLoader's {} workers", config.start_method.name()),
        ),
        Runtime::Spdl => (Workers::Threads, SPDL_THREADS.to_owned()),
    })
}

/// What tells a comparison's process `config` apart from the run's other configs, as
/// labels name it (`persistent`, `dataset=copy`), beside what its title says already
/// (the worker count and kinds, the runtime and the pipeline): without it, threads
/// against persistent fork workers and against fork workers had the same title.
fn told_apart(config: &Config, common: &Config) -> Vec<String> {
    const IN_THE_TITLE: [&str; 5] = [
        "num_workers",
        "worker_kind",
        "start_method",
        "runtime",
        "pipeline",
    ];
    let knobs = KNOBS_IN_CONFIG_ORDER.iter();
    knobs
        .filter(|knob| !IN_THE_TITLE.contains(&knob.field))
        .filter_map(|knob| (knob.tag)(config, common))
        .collect()
}

/// The loader a runtime's configs are compared within: the Python runtimes load the
/// same `Dataset`, so their threads and processes compare across them.
fn loader_family(runtime: Runtime) -> Runtime {
    if runtime.runs_python() {
        Runtime::Pytorch
    } else {
        runtime
    }
}

/// What two configs must share to be compared: everything but their worker count and
/// how their workers run (the kind, the start method, the runtime within its family,
/// how processes get the dataset and hand batches back).
fn comparable(config: &Config) -> Config {
    Config {
        num_workers: 0,
        worker_kind: WorkerKind::Thread,
        start_method: StartMethod::platform_default(),
        runtime: loader_family(config.runtime),
        dataset_transfer: DatasetTransfer::default(),
        batch_transfer: BatchTransfer::default(),
        copy: 0,
        ..config.clone()
    }
}

/// Every comparison the run allows, in plan order.
pub fn compare(result: &RunResult, configs: &[ConfigRuns<'_>]) -> Vec<WorkerKindComparison> {
    let mut groups: Vec<(Config, Vec<&ConfigRuns<'_>>)> = Vec::new();
    for runs in configs.iter().filter(|r| side_of(r.config).is_some()) {
        let key = comparable(runs.config);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(runs),
            None => groups.push((key, vec![runs])),
        }
    }
    groups
        .iter()
        .flat_map(|(_, members)| compare_group(result, members))
        .collect()
}

/// One side of a group: the candidates that run their workers one way, by count.
struct Side<'c, 'a> {
    workers: Workers,
    name: String,
    /// Candidates, with their position in the group's noise model.
    members: Vec<(usize, &'c Candidate<'a>)>,
}

/// The comparisons of one group of comparable configs: each side that runs threads
/// against each that runs processes.
fn compare_group(result: &RunResult, members: &[&ConfigRuns<'_>]) -> Vec<WorkerKindComparison> {
    let runs = |workers: Workers| {
        members
            .iter()
            .any(|m| side_of(m.config).is_some_and(|(w, _)| w == workers))
    };
    if !runs(Workers::Threads) || !runs(Workers::Processes) {
        return Vec::new();
    }
    let candidates = candidates(members, result.planned_epochs);
    let noise = NoiseModel::fit(
        &noise_input(members, &candidates, result.planned_epochs),
        tie_margin(result),
    );
    let mut sides: Vec<(Config, Side<'_, '_>)> = Vec::new();
    for (position, candidate) in candidates.iter().enumerate() {
        let Some((workers, name)) = side_of(&candidate.config) else {
            continue;
        };
        let key = Config {
            num_workers: 0,
            ..candidate.config.clone()
        };
        match sides.iter_mut().find(|(k, _)| *k == key) {
            Some((_, side)) => side.members.push((position, candidate)),
            None => sides.push((
                key,
                Side {
                    workers,
                    name,
                    members: vec![(position, candidate)],
                },
            )),
        }
    }
    let of = |workers: Workers| {
        sides
            .iter()
            .map(|(_, s)| s)
            .filter(move |s| s.workers == workers)
    };
    let mut comparisons = Vec::new();
    for threads in of(Workers::Threads) {
        for processes in of(Workers::Processes) {
            if let Some(c) = comparison(result, &noise, threads, processes) {
                comparisons.push(c);
            }
        }
    }
    comparisons
}

fn comparison(
    result: &RunResult,
    noise: &NoiseModel,
    threads: &Side<'_, '_>,
    processes: &Side<'_, '_>,
) -> Option<WorkerKindComparison> {
    let mut pairs: Vec<_> = threads
        .members
        .iter()
        .filter_map(|&t| {
            let count = t.1.config.num_workers;
            let p = processes
                .members
                .iter()
                .find(|p| p.1.config.num_workers == count)?;
            Some((t, *p))
        })
        .collect();
    pairs.sort_by_key(|(t, _)| t.1.config.num_workers);
    let measured: Vec<_> = pairs
        .iter()
        .filter_map(|&(t, p)| Some((t.0, p.0, point(noise, t, p)?)))
        .collect();
    let first = pairs.first()?.1.1;
    let gil = first
        .config
        .runtime
        .runs_python()
        .then(|| gil_share(result, noise, &measured));
    let told = told_apart(&first.config, &common_config(&result.configs));
    let mut title = format!(
        "{} against {} ({} · {} · {}{})",
        threads.name,
        processes.name,
        result.dataset,
        first.config.pipeline.name(),
        first.config.runtime.name(),
        if told.is_empty() {
            String::new()
        } else {
            format!(" · {}", told.join(", "))
        }
    );
    if let Some(run) = &first.config.run {
        title = format!("{run}: {title}");
    }
    let mut comparison = WorkerKindComparison {
        title,
        threads: threads.name.clone(),
        processes: processes.name.clone(),
        points: measured.into_iter().map(|(_, _, point)| point).collect(),
        gil,
        text: String::new(),
    };
    comparison.text = text::paragraph(
        &comparison,
        noise.tie_margin(),
        result.machine.logical_cores,
    );
    Some(comparison)
}

/// The GIL's share from each count's threads and processes (their positions in the
/// noise model, and the point).
fn gil_share(
    result: &RunResult,
    noise: &NoiseModel,
    measured: &[(usize, usize, KindPoint)],
) -> GilShare {
    let model: Vec<GilPoint> = measured
        .iter()
        .filter(|(_, _, point)| point.threads_are != Standing::Disturbed)
        .filter_map(|(t, p, point)| {
            Some(GilPoint {
                workers: point.num_workers,
                threads_s: noise.level_s(*t)?,
                processes_s: noise.level_s(*p)?,
                threads_are: point.threads_are,
            })
        })
        .collect();
    let processes_at = |count: usize| {
        measured
            .iter()
            .find(|(_, _, point)| point.num_workers == count)
            .map(|(_, p, _)| *p)
    };
    gil::estimate(&model, result.machine.logical_cores, |low, high| {
        let (Some(low), Some(high)) = (processes_at(low.workers), processes_at(high.workers))
        else {
            return false;
        };
        noise
            .compare(high, low)
            .is_some_and(|d| d.relation == Relation::Faster)
    })
}

/// Threads (`t`) against processes (`p`) at one count; each is its position in the
/// noise model and its candidate.
fn point(
    noise: &NoiseModel,
    (t_at, t): (usize, &Candidate<'_>),
    (p_at, p): (usize, &Candidate<'_>),
) -> Option<KindPoint> {
    let difference = noise.compare(t_at, p_at)?;
    let threads_are = if t.disturbed() || p.disturbed() {
        Standing::Disturbed
    } else {
        match difference.relation {
            Relation::Faster => Standing::Faster,
            Relation::Slower => Standing::Slower,
            Relation::Tie => Standing::AsFast,
            Relation::Open => Standing::NotResolved,
        }
    };
    Some(KindPoint {
        num_workers: t.config.num_workers,
        threads_config: t.index,
        processes_config: p.index,
        threads_are,
        speedup: 1.0 + difference.gain,
        plus_minus: difference
            .plus_minus
            .is_finite()
            .then_some(difference.plus_minus),
        threads_epoch_s: t.epoch_s(),
        processes_epoch_s: p.epoch_s(),
        threads_memory_bytes: t.memory_bytes(),
        processes_memory_bytes: p.memory_bytes(),
        threads_cpu_s: cpu_s(t),
        processes_cpu_s: cpu_s(p),
    })
}

/// The CPU seconds of a typical epoch, the median over the candidate's repeats.
fn cpu_s(candidate: &Candidate<'_>) -> Option<f64> {
    let seconds: Vec<f64> = candidate
        .runs
        .iter()
        .flat_map(|r| r.typical_epochs())
        .filter_map(|e| e.own_cpu_s)
        .collect();
    stats::median(&seconds)
}

#[cfg(test)]
mod tests {
    use super::super::Analysis;
    use super::*;
    use loaderbench_measure::fixtures::{config, epoch, result, run};
    use loaderbench_measure::process_memory::EpochMemory;
    use loaderbench_measure::results::ConfigResult;

    /// A config of `runtime` with `workers` of `kind`.
    fn kind(runtime: Runtime, kind: WorkerKind, workers: usize) -> Config {
        Config {
            runtime,
            worker_kind: kind,
            ..config(workers, false)
        }
    }

    /// One repeat whose two epochs take `seconds` each, with `cpu_s` of CPU and
    /// `memory_mib` of PSS summed.
    fn measured(
        index: usize,
        config: &Config,
        seconds: f64,
        cpu_s: f64,
        memory_mib: u64,
    ) -> ConfigResult {
        let epochs = (1..=2)
            .map(|number| {
                let mut e = epoch(number, seconds, seconds, 1);
                e.own_cpu_s = Some(cpu_s);
                e.memory = Some(EpochMemory {
                    peak_pss_bytes: memory_mib << 20,
                    main_pss_bytes: memory_mib << 20,
                    worker_pss_bytes: 0,
                    rank_pss_bytes: 0,
                    helper_pss_bytes: 0,
                    sweeps: 10,
                    sampling_s: 0.01,
                });
                e
            })
            .collect();
        run(index, config.clone(), epochs)
    }

    /// The configs measured in three rounds, each round's drift (1.0, 1.1, 0.95) on
    /// every config and `jitter[round]` on the threads (the even configs) alone; each
    /// config is `(config, seconds, cpu_s, memory_mib)`.
    fn rounds(configs: &[(Config, f64, f64, u64)], jitter: [f64; 3], cores: usize) -> RunResult {
        let drift = [1.0, 1.1, 0.95];
        let results = (0..3)
            .flat_map(|round| {
                configs
                    .iter()
                    .enumerate()
                    .map(move |(index, (c, s, cpu, mib))| {
                        let own = if index % 2 == 0 { jitter[round] } else { 1.0 };
                        measured(index, c, s * drift[round] * own, *cpu, *mib)
                    })
            })
            .collect();
        let mut r = result(configs.iter().map(|c| c.0.clone()).collect(), results);
        r.machine.logical_cores = cores;
        r
    }

    fn only(result: &RunResult) -> WorkerKindComparison {
        let mut all = Analysis::of(result).worker_kinds;
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    const STEADY: [f64; 3] = [1.0, 1.01, 0.99];

    #[test]
    fn our_engine_compares_speed_memory_and_cpu_without_a_gil() {
        let thread = |n| kind(Runtime::Loaderbench, WorkerKind::Thread, n);
        let fork = |n| kind(Runtime::Loaderbench, WorkerKind::Fork, n);
        let r = rounds(
            &[
                (thread(2), 2.0, 3.0, 400),
                (fork(2), 2.02, 3.5, 800),
                (thread(4), 1.0, 3.1, 420),
                (fork(4), 1.3, 4.2, 1320),
            ],
            STEADY,
            16,
        );
        let c = only(&r);
        assert_eq!(
            c.title,
            "threads against fork workers (synthetic · light · loaderbench)"
        );
        assert_eq!(c.gil, None, "our engine runs no Python");
        assert_eq!(c.points.len(), 2);
        assert_eq!(c.points[0].threads_are, Standing::AsFast);
        assert_eq!(c.points[1].threads_are, Standing::Faster);
        assert_eq!(
            (c.points[1].threads_config, c.points[1].processes_config),
            (2, 3)
        );
        assert!(
            (c.points[1].speedup - 1.3).abs() < 0.01,
            "{:?}",
            c.points[1]
        );
        assert_eq!(c.points[1].threads_memory_bytes, Some(420 << 20));
        assert_eq!(
            c.text,
            "At 2 workers, threads are as fast as fork workers within the 5% tie margin \
             (2.00 s against 2.02 s per epoch, 1.01× as fast); they use 400.0 MiB less memory \
             (400.0 MiB against 800.0 MiB) and 0.50 s less CPU time per epoch (3.00 s \
             against 3.50 s). At 4 workers, threads are 1.30× as fast as fork workers \
             beyond the noise (1.00 s against 1.30 s per epoch); they use 900.0 MiB less \
             memory (420.0 MiB against 1320.0 MiB) and 1.10 s less CPU time per epoch \
             (3.10 s against 4.20 s)."
        );
    }

    /// torchdata.nodes threads against DataLoader's fork workers at `counts` on `cores`,
    /// by the GIL model: an epoch of `0.2 + 4 / n` s on processes, `0.2 + 4 · max(0.6,
    /// 1 / n)` s on threads.
    fn python_dataset(counts: &[usize], cores: usize) -> RunResult {
        let configs: Vec<(Config, f64, f64, u64)> = counts
            .iter()
            .flat_map(|&n| {
                let spread = 1.0 / n.min(cores) as f64;
                [
                    (
                        kind(Runtime::Pytorch, WorkerKind::Thread, n),
                        0.2 + 4.0 * spread.max(0.6),
                        4.5,
                        700,
                    ),
                    (
                        kind(Runtime::Pytorch, WorkerKind::Fork, n),
                        0.2 + 4.0 * spread,
                        4.4 + 0.3 * n as f64,
                        1600,
                    ),
                ]
            })
            .collect();
        rounds(&configs, STEADY, cores)
    }

    #[test]
    fn a_python_dataset_gets_the_gils_share_and_how_it_was_estimated() {
        let c = only(&python_dataset(&[2, 4], 16));
        assert_eq!(
            c.title,
            "torchdata.nodes threads against DataLoader's fork workers (synthetic · light · \
             pytorch)"
        );
        let Some(GilShare::About { share, workers }) = &c.gil else {
            panic!("{:?}", c.gil);
        };
        assert!((share - 0.6).abs() < 0.005, "{share}");
        assert_eq!(workers, &[2, 4]);
        assert_eq!(
            c.text,
            "At 2 workers, torchdata.nodes threads take 1.18× as long as DataLoader's fork \
             workers beyond the noise (2.60 s against 2.20 s per epoch); they use 900.0 MiB \
             less memory (700.0 MiB against 1600.0 MiB) and 0.50 s less CPU time per epoch \
             (4.50 s against 5.00 s). At 4 workers, torchdata.nodes threads take 2.17× as \
             long as DataLoader's fork workers beyond the noise (2.60 s against 1.20 s per \
             epoch); they use 900.0 MiB less memory (700.0 MiB against 1600.0 MiB) and \
             1.10 s less CPU time per epoch (4.50 s against 5.60 s). Your `__getitem__` \
             holds the GIL for about 60% of its time: estimated from how torchdata.nodes \
             threads fall behind DataLoader's fork workers at 2 and 4 workers on this \
             machine's 16 cores (process workers spread all of an item's time, threads only \
             the part without the GIL; busy time alone cannot say, as PIL and torch release \
             it)."
        );
    }

    /// SPDL's threads on a `__getitem__` of microseconds: 0.54 ms a sample of hand-off
    /// made them 37× DataLoader's fork workers at 2 workers on 2 cores, where a GIL that
    /// ran them one at a time would make them at most 2×.
    #[test]
    fn threads_behind_by_more_than_the_gil_can_put_them_are_said_to_pay_the_hand_off() {
        let configs = [
            (kind(Runtime::Spdl, WorkerKind::Thread, 2), 26.9, 7.3, 650),
            (kind(Runtime::Pytorch, WorkerKind::Fork, 2), 0.72, 1.1, 680),
        ];
        let c = only(&rounds(&configs, STEADY, 2));
        assert!(
            c.text.contains(
                "At 2 workers, SPDL threads take longer than the GIL alone can make them (it \
                 runs them one at a time, so at most 2× as long as DataLoader's fork workers \
                 spread over 2 cores): handing each sample to a thread costs more than \
                 loading it (SPDL hands each through its event loop"
            ),
            "{}",
            c.text
        );
        // Behind by what the GIL explains: nothing said.
        let gil = [(configs[0].0.clone(), 1.3, 7.3, 650), configs[1].clone()];
        assert!(!only(&rounds(&gil, STEADY, 2)).text.contains("GIL alone"));
    }

    #[test]
    fn the_gil_line_says_why_one_count_or_too_few_cores_cannot_estimate_it() {
        let one = only(&python_dataset(&[4], 16));
        assert_eq!(one.gil, Some(GilShare::OneCount));
        assert!(
            one.text.ends_with(
                "How long your `__getitem__` holds the GIL cannot be estimated from one \
                 worker count: measure both at two counts or more (num_workers: [2, 4])."
            ),
            "{}",
            one.text
        );
        let two_cores = only(&python_dataset(&[2, 4], 2));
        assert_eq!(two_cores.gil, Some(GilShare::FewerCores { cores: 2 }));
        assert!(
            two_cores.text.ends_with(
                "How long your `__getitem__` holds the GIL cannot be estimated: the counts \
                 measured differ only past this machine's 2 cores, where process workers get \
                 no faster either."
            ),
            "{}",
            two_cores.text
        );
    }

    #[test]
    fn threads_within_the_noise_are_said_to_be_and_bound_the_gils_share() {
        // Threads as fast as processes at both counts, within the noise.
        let configs: Vec<(Config, f64, f64, u64)> = [2, 4]
            .iter()
            .flat_map(|&n| {
                let s = 0.2 + 4.0 / n as f64;
                [
                    (
                        kind(Runtime::Pytorch, WorkerKind::Thread, n),
                        s * 1.01,
                        4.0,
                        700,
                    ),
                    (kind(Runtime::Pytorch, WorkerKind::Fork, n), s, 4.0, 720),
                ]
            })
            .collect();
        let c = only(&rounds(&configs, STEADY, 16));
        assert_eq!(
            c.gil,
            Some(GilShare::AtMost {
                share: 0.25,
                workers: 4
            })
        );
        assert!(
            c.text.starts_with(
                "At 2 workers, torchdata.nodes threads are as fast as DataLoader's fork \
                 workers within the 5% tie margin (2.22 s against 2.20 s per epoch, 0.99× as fast); \
                 they use about the same memory (700.0 MiB against 720.0 MiB) and about the \
                 same CPU time per epoch (4.00 s against 4.00 s)."
            ),
            "{}",
            c.text
        );
        assert!(
            c.text.ends_with(
                "At every count, torchdata.nodes threads keep up with DataLoader's fork \
                 workers, so your `__getitem__` holds the GIL for at most about 25% of its time \
                 (more would hold 4 threads back); how much less cannot be estimated."
            ),
            "{}",
            c.text
        );
    }

    #[test]
    fn one_round_leaves_the_comparison_open_and_says_what_decides_it() {
        let thread = kind(Runtime::Loaderbench, WorkerKind::Thread, 4);
        let fork = kind(Runtime::Loaderbench, WorkerKind::Fork, 4);
        let r = result(
            vec![thread.clone(), fork.clone()],
            vec![
                measured(0, &thread, 1.0, 2.0, 300),
                measured(1, &fork, 1.1, 2.0, 600),
            ],
        );
        let c = only(&r);
        assert_eq!(c.points[0].threads_are, Standing::NotResolved);
        assert_eq!(c.points[0].plus_minus, None);
        assert_eq!(
            c.text,
            "At 4 workers, threads against fork workers is not resolved yet (1.00 s against \
             1.10 s per epoch, 1.10× as fast, one round shows nothing of the noise); they use 300.0 \
             MiB less memory (300.0 MiB against 600.0 MiB) and about the same CPU time per \
             epoch (2.00 s against 2.00 s). To decide, re-run with `repeats: 5` on a quiet \
             machine."
        );
    }

    /// The comparisons of `configs`, each measured alike, and their titles.
    fn alike(configs: &[Config]) -> (Vec<String>, Vec<WorkerKindComparison>) {
        let results = configs
            .iter()
            .enumerate()
            .map(|(i, c)| measured(i, c, 1.0, 1.0, 100))
            .collect();
        let all = Analysis::of(&result(configs.to_vec(), results)).worker_kinds;
        (all.iter().map(|c| c.title.clone()).collect(), all)
    }

    /// Threads against persistent fork workers, and against fork workers given a copy
    /// of the dataset, had the same title as against plain fork workers.
    #[test]
    fn each_title_names_what_tells_its_configs_from_the_run_s_others() {
        let thread = kind(Runtime::Loaderbench, WorkerKind::Thread, 2);
        let fork = kind(Runtime::Loaderbench, WorkerKind::Fork, 2);
        let persistent = |c: &Config| Config {
            persistent_workers: true,
            ..c.clone()
        };
        let copied = Config {
            dataset_transfer: DatasetTransfer::Copy,
            ..fork.clone()
        };
        let configs = [persistent(&thread), persistent(&fork), thread, fork, copied];
        let (titles, _) = alike(&configs);
        assert_eq!(
            titles,
            [
                "threads against fork workers (synthetic · light · loaderbench · persistent)",
                "threads against fork workers (synthetic · light · loaderbench)",
                "threads against fork workers (synthetic · light · loaderbench · dataset=copy)"
            ]
        );
    }

    #[test]
    fn only_configs_that_differ_in_how_workers_run_are_compared() {
        let thread = kind(Runtime::Loaderbench, WorkerKind::Thread, 2);
        let fork = kind(Runtime::Loaderbench, WorkerKind::Fork, 2);
        let spawn = kind(Runtime::Loaderbench, WorkerKind::Spawn, 2);
        let bigger_batches = Config {
            batch_size: 128,
            ..fork.clone()
        };
        let none = Config {
            num_workers: 0,
            ..fork.clone()
        };
        let configs = [thread, fork, spawn, bigger_batches, none];
        let (titles, all) = alike(&configs);
        assert_eq!(
            titles,
            [
                "threads against fork workers (synthetic · light · loaderbench)",
                "threads against spawn workers (synthetic · light · loaderbench)"
            ]
        );
        assert!(
            all.iter()
                .all(|c| c.points.len() == 1 && c.points[0].num_workers == 2)
        );
    }
}
