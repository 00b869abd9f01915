//! Results: what a run measured, as plain serde data that exporters, the GUI and the
//! journal only read. A [`RunResult`] holds one [`ConfigResult`] per config and repeat;
//! [`summary`](crate::summary) folds repeats into one row per config.

use serde::{Deserialize, Serialize};

use crate::meter::Interference;
use crate::process_memory::{EpochMemory, ProcessMemory};
pub use crate::python_environment::PythonEnvironment;
use crate::tune_trail::TuneTrail;
use crate::window::{Projection, WindowRule};
use loaderbench_engine::loader::{EpochSize, StageTimes, WorkerStartup};
use loaderbench_engine::machine::Machine;
use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::Preset;
use loaderbench_engine::step::StepSpec;

/// One batch as the consumer saw it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub index: usize,
    /// Seconds from the start of the epoch until this batch was on the device.
    pub at_s: f64,
    pub samples: usize,
    pub stages: StageTimes,
}

/// One measured epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochResult {
    /// 1-based; the warm-up epoch is 0.
    pub epoch: usize,
    /// From asking for the epoch's iterator until the last batch was on the device.
    pub seconds: f64,
    /// From the same start until the first batch was on the device.
    pub first_batch_s: f64,
    pub batches: usize,
    pub samples: usize,
    /// Samples per second over the whole epoch.
    pub throughput: f64,
    /// Samples per second after the first batch.
    pub steady_throughput: f64,
    /// Sums over the epoch's batches.
    pub stages: StageTimes,
    /// Workers started for this epoch.
    pub worker_startups: Vec<WorkerStartup>,
    /// The epoch's batches in order; past its config's budget, only the first (see
    /// [`TimelineBudget`](crate::timeline_budget::TimelineBudget)).
    pub timeline: Vec<BatchRecord>,
    /// Batches counted in the totals above but left out of `timeline`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub summarised_batches: usize,
    /// Average cores busy with anything but this run during the epoch (the
    /// interference meter); `None` where the platform has no counters.
    #[serde(default)]
    pub other_load_cores: Option<f64>,
    /// CPU seconds the run used during the epoch: this process, its worker processes
    /// and the PyTorch runtime's Python processes.
    #[serde(default)]
    pub own_cpu_s: Option<f64>,
    /// Bytes the run's processes read from storage during the epoch (see
    /// [`storage_reads`](crate::storage_reads)); `None` where the platform does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u64>,
    /// `read_bytes` over the epoch's time, in MB (10⁶ bytes) per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_mb_s: Option<f64>,
    /// With several ranks, each rank's own epoch (the figures above are the slowest
    /// rank's, with samples and throughput over all ranks); empty for one rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankEpoch>,
    /// Set when the epoch was cut after a window of its batches and projected whole
    /// (see [`window`](crate::window)): `seconds`, `batches`, `samples`, the throughputs
    /// and the stages are then the projection's, the timeline what was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projected: Option<Projection>,
    /// Why an epoch that was to be cut after its window was measured whole instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_because: Option<String>,
    /// The config's memory over the epoch, every process together (see
    /// [`process_memory`](crate::process_memory)); `None` where it was not sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<EpochMemory>,
}

/// One rank's part of an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RankEpoch {
    pub rank: usize,
    pub seconds: f64,
    pub first_batch_s: f64,
    /// Seconds the rank's consumer waited for batches.
    pub stall_s: f64,
    pub samples: usize,
    /// When the rank started and ended the epoch, by the system clock, which every
    /// rank shares: evidence that the barrier held.
    pub started_unix_s: f64,
    pub finished_unix_s: f64,
}

impl EpochResult {
    /// Derives the totals from a finished epoch's batches.
    pub fn from_batches(
        epoch: usize,
        seconds: f64,
        timeline: Vec<BatchRecord>,
        worker_startups: Vec<WorkerStartup>,
    ) -> EpochResult {
        let samples: usize = timeline.iter().map(|b| b.samples).sum();
        let first = timeline.first();
        let first_batch_s = first.map_or(seconds, |b| b.at_s);
        let steady_samples = samples - first.map_or(0, |b| b.samples);
        let steady_seconds = seconds - first_batch_s;
        let mut stages = StageTimes::default();
        for batch in &timeline {
            stages.add(&batch.stages);
        }
        EpochResult {
            epoch,
            seconds,
            first_batch_s,
            batches: timeline.len(),
            samples,
            throughput: rate(samples, seconds),
            steady_throughput: rate(steady_samples, steady_seconds),
            stages,
            worker_startups,
            timeline,
            summarised_batches: 0,
            other_load_cores: None,
            own_cpu_s: None,
            read_bytes: None,
            read_mb_s: None,
            ranks: Vec::new(),
            projected: None,
            whole_because: None,
            memory: None,
        }
    }

    /// An epoch measured under `window` (its rule, and the batches and samples a whole
    /// epoch has): projected whole from its batches where it was cut, else as measured,
    /// saying why it was not cut where its window never steadied. `measured_s` runs from the
    /// epoch's start until its iterator was gone.
    pub fn from_window(
        epoch: usize,
        measured_s: f64,
        timeline: Vec<BatchRecord>,
        worker_startups: Vec<WorkerStartup>,
        window: Option<(WindowRule, EpochSize)>,
    ) -> EpochResult {
        let Some((
            rule,
            EpochSize {
                batches: epoch_batches,
                samples: epoch_samples,
            },
        )) = window
        else {
            return EpochResult::from_batches(epoch, measured_s, timeline, worker_startups);
        };
        let at_s: Vec<f64> = timeline.iter().map(|b| b.at_s).collect();
        let cut = timeline.len() < epoch_batches;
        let projection = cut
            .then(|| rule.project(&at_s, measured_s, epoch_batches))
            .flatten();
        let Some(projection) = projection else {
            let mut result =
                EpochResult::from_batches(epoch, measured_s, timeline, worker_startups);
            result.whole_because = rule.whole_because(&at_s);
            return result;
        };
        let seconds = projection.epoch_s(epoch_batches);
        let mut result = EpochResult::from_batches(epoch, seconds, timeline, worker_startups);
        let measured = result.batches;
        let scale = epoch_batches as f64 / measured as f64;
        let first_samples = result.timeline.first().map_or(0, |b| b.samples);
        result.samples = epoch_samples;
        result.batches = epoch_batches;
        result.summarised_batches = epoch_batches - measured;
        result.throughput = rate(result.samples, seconds);
        result.steady_throughput = rate(
            result.samples.saturating_sub(first_samples),
            seconds - result.first_batch_s,
        );
        result.stages.scale(scale);
        result.projected = Some(projection);
        result
    }

    /// Seconds this epoch was measured for: the whole epoch, or its window's part.
    pub fn measured_s(&self) -> f64 {
        self.projected.map_or(self.seconds, |p| p.measured_s)
    }
}

impl EpochResult {
    /// Seconds between the slowest and the fastest rank's epoch (0 with one rank): the
    /// time the faster ranks wait at the next barrier.
    pub fn rank_spread_s(&self) -> f64 {
        if self.ranks.is_empty() {
            return 0.0;
        }
        let seconds = self.ranks.iter().map(|r| r.seconds);
        let slowest = seconds.clone().fold(f64::NEG_INFINITY, f64::max);
        slowest - seconds.fold(f64::INFINITY, f64::min)
    }

    /// Records the bytes read from storage during the epoch, and the rate.
    pub fn record_reads(&mut self, bytes: Option<u64>) {
        self.read_bytes = bytes;
        let seconds = self.measured_s();
        self.read_mb_s = bytes
            .filter(|_| seconds > 0.0)
            .map(|b| b as f64 / 1e6 / seconds);
    }

    /// Records what the interference meter saw during the epoch.
    pub fn record(&mut self, seen: Option<Interference>) {
        self.other_load_cores = seen.map(|s| s.other_load_cores);
        self.own_cpu_s = seen.map(|s| s.own_cpu_s);
    }
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

fn rate(samples: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        samples as f64 / seconds
    } else {
        0.0
    }
}

/// One config measured once (one repeat). Its default is a result with nothing measured
/// and nothing reported beside the epochs, what a runtime fills in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigResult {
    /// Position of the config in the plan.
    pub config_index: usize,
    pub repeat: usize,
    pub label: String,
    pub config: Config,
    pub warmup: Option<EpochResult>,
    pub epochs: Vec<EpochResult>,
    /// False when pin_memory was asked for but had no effect (no CUDA).
    pub pin_memory_effective: bool,
    /// The consumer's libtorch intra-op threads while the config ran.
    pub intra_op_threads: i32,
    /// Other load averaged over the measured epochs (see [`EpochResult::other_load_cores`]).
    #[serde(default)]
    pub other_load_cores: Option<f64>,
    /// Measured while other load exceeded the threshold of
    /// [`analysis::disturbance`](crate::disturbance).
    #[serde(default)]
    pub disturbed: bool,
    /// Resident set size when the config started and at its peak.
    pub rss_before_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    /// The Python that measured a pytorch config, with its versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonEnvironment>,
    /// For a `cache: cold` config whose files could not all leave the page cache: the
    /// first file and why (on tmpfs, held mapped…). Its epochs are never shown as cold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stayed_warm: Option<String>,
    /// For a `cache: warm` config whose files could not all be held in the page cache:
    /// why (more than the memory available, or reclaimed as they came in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partly_cold: Option<String>,
    /// Samples in the whole dataset (more than an epoch's where `samples` cut it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_samples: Option<usize>,
    /// Bytes of Python objects the dataset holds (what forked workers copy as they read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_object_bytes: Option<u64>,
    /// Every process of the config (main, workers, ranks), sampled through each epoch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessMemory>,
    /// Seconds measuring the config took, from its start to its end: its loader (or
    /// script) and workers set up, its warm-up, the rests before its epochs, and each
    /// epoch to its end, where a projected one measured only a window of its batches.
    /// `None` in results saved before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_s: Option<f64>,
}

impl ConfigResult {
    /// The epochs that stand for a typical epoch: all but the first, or the first when
    /// it is the only one.
    pub fn typical_epochs(&self) -> impl Iterator<Item = &EpochResult> {
        self.epochs.iter().skip(usize::from(self.epochs.len() > 1))
    }

    /// What measuring the config once takes: [`took_s`](Self::took_s), or, in results
    /// saved before it was recorded, its warm-up's and epochs' measured seconds (a
    /// projected epoch's window), which leave out its set-up: nw=8 pytorch's windows
    /// measured 23.8 s of the 30.0 s it took.
    pub fn cost_s(&self) -> f64 {
        self.took_s.unwrap_or_else(|| {
            (self.warmup.iter().chain(&self.epochs))
                .map(EpochResult::measured_s)
                .sum()
        })
    }

    /// The config's memory: the measured epoch whose processes' PSS summed the highest
    /// (`None` where memory was not sampled, as in results saved before it was).
    pub fn memory_peak(&self) -> Option<EpochMemory> {
        self.epochs
            .iter()
            .filter_map(|e| e.memory)
            .max_by_key(|m| m.peak_pss_bytes)
    }

    /// What the config cost in memory in this repeat: its processes' PSS summed at its
    /// peak, or, for results saved before processes were sampled, the main process's
    /// peak RSS.
    pub fn memory_bytes(&self) -> Option<u64> {
        self.memory_peak()
            .map(|m| m.peak_pss_bytes)
            .or(self.peak_rss_bytes)
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum RunStatus {
    Running,
    Finished,
    Failed { error: String },
    Cancelled,
}

/// Everything one run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub preset: String,
    pub dataset: String,
    pub epochs: usize,
    pub repeats: usize,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix_s: u64,
    pub machine: Machine,
    pub configs: Vec<Config>,
    pub labels: Vec<String>,
    pub warnings: Vec<String>,
    pub results: Vec<ConfigResult>,
    pub status: RunStatus,
    /// The training step the consumer ran on each batch.
    #[serde(default)]
    pub step: StepSpec,
    /// The epochs a training run would take, as the preset planned them.
    #[serde(default = "default_planned_epochs")]
    pub planned_epochs: usize,
    /// Whether each epoch shuffled, and dropped its last short batch (as the plan said).
    #[serde(default = "default_shuffle")]
    pub shuffle: bool,
    #[serde(default)]
    pub drop_last: bool,
    /// The preset as run (`--set`s applied), to set the run up again; absent in files
    /// from before it was saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<Preset>,
    /// For a tune: what it predicted, measured and eliminated; `None` for a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<TuneTrail>,
}

fn default_shuffle() -> bool {
    true
}

fn default_planned_epochs() -> usize {
    loaderbench_engine::preset::DEFAULT_PLANNED_EPOCHS
}

impl RunResult {
    /// The Python environment that measured the run's pytorch and spdl configs, if any
    /// (one that names spdl's version where there is one).
    pub fn python(&self) -> Option<&PythonEnvironment> {
        let mut environments = self.results.iter().filter_map(|r| r.python.as_ref());
        let first = environments.next()?;
        Some(
            std::iter::once(first)
                .chain(environments)
                .find(|environment| environment.spdl.is_some())
                .unwrap_or(first),
        )
    }

    /// The pipelines in the order the configs use them.
    pub fn pipelines(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for config in &self.configs {
            let name = config.pipeline.name().to_owned();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn a_projected_epoch_counts_the_samples_of_the_whole_epoch() {
        // 10,100 samples in batches of 256: 40 batches, the last of 116. Cut after 20
        // full batches at 10 ms each, it holds the whole epoch's samples, not 40 full
        // batches' 10,240.
        let timeline: Vec<BatchRecord> = (0..20)
            .map(|index| BatchRecord {
                index,
                at_s: 0.01 * (index + 1) as f64,
                samples: 256,
                stages: StageTimes::default(),
            })
            .collect();
        let size = EpochSize {
            batches: 40,
            samples: 10_100,
        };
        let rule = WindowRule::new(0.06, 0);
        let epoch = EpochResult::from_window(1, 0.2, timeline, Vec::new(), Some((rule, size)));
        assert!(epoch.projected.is_some(), "{epoch:?}");
        assert_eq!((epoch.batches, epoch.samples), (40, 10_100));
        assert!((epoch.throughput - 10_100.0 / epoch.seconds).abs() < 1e-6);
    }

    #[test]
    fn an_epoch_with_its_whole_timeline_writes_no_summarised_count() {
        let epoch = fixtures::epoch(1, 0.5, 0.01, 4);
        let json = serde_json::to_string(&epoch).unwrap();
        assert!(!json.contains("summarised_batches"), "{json}");
        let read: EpochResult = serde_json::from_str(&json).unwrap();
        assert_eq!(read, epoch);
    }
}
