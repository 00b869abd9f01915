//! What each config costs in memory, what that becomes at the end of an epoch of the
//! whole dataset, and whether it fits. A config's memory is its processes' PSS summed at
//! its peak (shared pages counted once). Two patterns of growth are told apart. Forked
//! workers whose private memory grows within the epoch, over a dataset that holds its
//! index as Python objects (the PyTorch runtime estimates their bytes), are copying their
//! parent's pages as they touch those objects' reference counts: *copy-on-access*
//! (pytorch/pytorch#13246), which stops when a worker holds a whole copy and starts again
//! in every new worker. Every forked Python worker also copies the interpreter's own
//! objects on its first full garbage collection (35–80 MiB here with torch imported):
//! that is in the figures, but is not the dataset's doing. A long-lived process (the main
//! one, a persistent worker) whose memory rises from epoch to epoch keeps what each epoch
//! made: a leak. The projection takes each worker's growth over the share of the whole
//! dataset's epoch that was measured (a window, or a `samples` cut) to the end of that
//! epoch, capped at a whole copy of the main process's private memory and at what it
//! measured plus the dataset's Python objects (growth is not linear: that first garbage
//! collection copies every object's page at once, so after a short window the cap binds).
//! Copy-on-access is judged on the projection: a `samples` cut can end an epoch before
//! its workers have copied enough to show.
//! A config projected past the memory limit (the preset's `memory_limit`, else the memory
//! available when the run started) does not fit, and the recommendation never picks it.

use serde::{Deserialize, Serialize};

use loaderbench_measure::process_memory::{ProcessKind, ProcessMemory};
use loaderbench_measure::results::{ConfigResult, RunResult};
use loaderbench_measure::stats;

use super::{ConfigRuns, mib};

/// Growth below this, within an epoch or between epochs, is the allocator's ordinary
/// scatter (buffers, arenas, a prefetched batch), not a pattern.
pub const GROWTH_MIN_BYTES: u64 = 32 << 20;

/// Epochs a process must be seen in before its growth from epoch to epoch is named: the
/// first epoch fills caches that later ones reuse.
pub const ACROSS_EPOCHS_MIN: usize = 3;

/// Where the memory limit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitSource {
    /// The preset's `memory_limit` (or `--memory-limit`).
    Preset,
    /// The memory the machine had available when the run started.
    Available,
}

/// The memory a config may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryLimit {
    pub bytes: u64,
    pub source: LimitSource,
}

impl MemoryLimit {
    /// The limit `result` was run with: its preset's, else the memory available at its
    /// start; `None` where neither is known.
    pub fn of(result: &RunResult) -> Option<MemoryLimit> {
        let preset = result.setup.as_ref().and_then(|p| p.memory_limit);
        match preset {
            Some(limit) => Some(MemoryLimit {
                bytes: limit.as_u64(),
                source: LimitSource::Preset,
            }),
            None => result
                .machine
                .available_memory_bytes
                .map(|bytes| MemoryLimit {
                    bytes,
                    source: LimitSource::Available,
                }),
        }
    }

    /// `16.0 GiB (memory_limit)` or `21.3 GiB (available at the start)`.
    pub fn describe(&self) -> String {
        let source = match self.source {
            LimitSource::Preset => "memory_limit",
            LimitSource::Available => "available when the run started",
        };
        format!("{} ({source})", mib(self.bytes))
    }
}

/// One config's memory, its repeats folded by their medians.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigMemory {
    pub config: usize,
    pub label: String,
    /// Every process's PSS summed at its peak.
    pub measured_bytes: u64,
    /// The main process's (or the ranks') and the workers' parts, with every process
    /// running (at the sweep that read the most processes; see `EpochMemory`).
    pub main_bytes: u64,
    pub worker_bytes: u64,
    /// How much a forked worker's private memory grew within an epoch (the median over
    /// workers and epochs); `None` without forked workers.
    pub worker_growth_bytes: Option<u64>,
    /// That growth at the end of an epoch of the whole dataset, per worker, where it is
    /// copy-on-access (else as measured).
    pub projected_growth_bytes: Option<u64>,
    /// The config's memory at the end of an epoch of the whole dataset.
    pub projected_bytes: u64,
    /// Samples in the whole dataset's epoch the projection is for, where known.
    pub whole_epoch_samples: Option<usize>,
    /// Whether `projected_bytes` is within the run's limit (true where none is known).
    pub fits: bool,
    /// The bytes of Python objects the dataset holds, where the runtime estimated them.
    pub dataset_object_bytes: Option<u64>,
    /// Copy-on-access: forked workers grew by at least [`GROWTH_MIN_BYTES`] within an
    /// epoch, over a dataset holding at least as much in Python objects.
    pub copy_on_access: bool,
}

/// A long-lived process whose memory rose in every epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrowthAcrossEpochs {
    pub label: String,
    pub kind: ProcessKind,
    /// Its peak in each epoch (RSS for the main process, whose private pages change as
    /// workers come and go; private bytes for a worker).
    pub per_epoch_bytes: Vec<u64>,
}

/// The memory part of the analysis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    pub limit: Option<MemoryLimit>,
    pub configs: Vec<ConfigMemory>,
    pub across_epochs: Vec<GrowthAcrossEpochs>,
}

impl MemoryReport {
    /// The memory of `configs`, measured in `result`.
    pub fn of(result: &RunResult, configs: &[ConfigRuns<'_>]) -> MemoryReport {
        let limit = MemoryLimit::of(result);
        MemoryReport {
            limit,
            configs: configs
                .iter()
                .filter_map(|runs| config_memory(runs, limit))
                .collect(),
            across_epochs: configs.iter().filter_map(across_epochs).collect(),
        }
    }

    /// Whether config `index` fits the limit (true where its memory was not sampled).
    pub fn fits(&self, index: usize) -> bool {
        self.configs
            .iter()
            .find(|c| c.config == index)
            .is_none_or(|c| c.fits)
    }

    /// The configs that do not fit.
    pub fn too_big(&self) -> impl Iterator<Item = &ConfigMemory> {
        self.configs.iter().filter(|c| !c.fits)
    }

    /// `nw=4 (1.6 GiB) does not fit …` for each config that `among` takes and that does
    /// not fit, with the limit: what a recommendation that leaves them out says; `None`
    /// when all fit.
    pub fn too_big_sentence(&self, among: impl Fn(usize) -> bool) -> Option<String> {
        let limit = self.limit?;
        let too_big: Vec<String> = self
            .too_big()
            .filter(|c| among(c.config))
            .map(|c| format!("{} ({})", c.label, mib(c.projected_bytes)))
            .collect();
        (!too_big.is_empty()).then(|| {
            format!(
                "{} {} not fit the memory limit of {} at the end of an epoch of the whole \
                 dataset, so {} never recommended",
                too_big.join(", "),
                if too_big.len() == 1 { "does" } else { "do" },
                limit.describe(),
                if too_big.len() == 1 {
                    "it is"
                } else {
                    "they are"
                },
            )
        })
    }

    /// What the analysis says about memory, a paragraph each: copy-on-access where it
    /// was found, growth across epochs where it was, the configs that do not fit.
    pub fn paragraphs(&self, planned_epochs: usize) -> Vec<String> {
        let mut paragraphs: Vec<String> = self.copy_on_access().into_iter().collect();
        paragraphs.extend(
            self.across_epochs
                .iter()
                .map(|g| g.sentence(planned_epochs)),
        );
        paragraphs.extend(self.too_big_sentence(|_| true).map(|s| format!("{s}.")));
        paragraphs
    }

    fn copy_on_access(&self) -> Option<String> {
        let found: Vec<&ConfigMemory> = self.configs.iter().filter(|c| c.copy_on_access).collect();
        let first = found.first()?;
        let grew: Vec<String> = found
            .iter()
            .map(|c| format!("{} at {}", mib(c.worker_growth_bytes.unwrap_or(0)), c.label))
            .collect();
        let whole = first
            .whole_epoch_samples
            .map_or_else(String::new, |n| format!(" ({n} samples)"));
        let projected: Vec<String> = found
            .iter()
            .map(|c| format!("{} {} in all", c.label, mib(c.projected_bytes)))
            .collect();
        let objects = first
            .dataset_object_bytes
            .map_or_else(String::new, |b| format!(" of about {}", mib(b)));
        Some(format!(
            "Copy-on-access: the Dataset keeps its index as Python objects{objects} \
             (lists, dicts, strings), and the forked workers' private memory grew within \
             each epoch, per worker by {}, while the batches they made stayed the same \
             size. Each worker \
             copies the pages of its parent's Python objects (lists, dicts, strings) as it \
             touches their reference counts, until it holds a whole copy (pytorch/pytorch\
             #13246). At the end of an epoch of the whole dataset{whole} that is about {} \
             per worker: {}. What works: keep the index in numpy arrays or a torch.Tensor \
             rather than Python lists and dicts (reading them writes nothing); \
             persistent_workers=True, so each worker copies once rather than every epoch; \
             fewer workers; or multiprocessing_context=\"spawn\", whose workers start \
             without the parent's pages (each unpickles its own copy of the dataset \
             instead, so it helps where the dataset pickles small).",
            grew.join(", "),
            mib(first.projected_growth_bytes.unwrap_or(0)),
            projected.join(", "),
        ))
    }
}

impl GrowthAcrossEpochs {
    /// One paragraph: which process rose, by how much, and where the planned epochs
    /// take it.
    pub fn sentence(&self, planned_epochs: usize) -> String {
        let steps: Vec<String> = self.per_epoch_bytes.iter().map(|b| mib(*b)).collect();
        let first = self.per_epoch_bytes.first().copied().unwrap_or(0);
        let last = self.per_epoch_bytes.last().copied().unwrap_or(0);
        let epochs = self.per_epoch_bytes.len();
        let per_epoch = (last - first) / (epochs as u64 - 1).max(1);
        let at_end = last + per_epoch * planned_epochs.saturating_sub(epochs) as u64;
        let process = match self.kind {
            ProcessKind::Main => "main process",
            ProcessKind::Rank => "rank process",
            ProcessKind::Worker | ProcessKind::Helper => "persistent worker",
        };
        format!(
            "Growth across epochs, not copy-on-access: {}'s {process} rose in every epoch \
             ({}), by about {} an epoch: something keeps what each epoch made (a leak), \
             where copy-on-access stops once a worker holds its copy. Over the planned \
             {planned_epochs} epochs it would reach about {}.",
            self.label,
            steps.join(", "),
            mib(per_epoch),
            mib(at_end),
        )
    }
}

/// Whether a config's workers are forked from its main process.
fn forked(runs: &ConfigRuns<'_>) -> bool {
    runs.config.forks_workers()
}

fn median(values: impl Iterator<Item = u64>) -> Option<u64> {
    let values: Vec<f64> = values.map(|v| v as f64).collect();
    stats::median(&values).map(|v| v as u64)
}

fn config_memory(runs: &ConfigRuns<'_>, limit: Option<MemoryLimit>) -> Option<ConfigMemory> {
    let peaks: Vec<_> = runs.runs.iter().filter_map(|r| r.memory_peak()).collect();
    let measured_bytes = median(peaks.iter().map(|m| m.peak_pss_bytes))?;
    let main_bytes = median(
        peaks
            .iter()
            .map(|m| m.of_kind(ProcessKind::Main) + m.of_kind(ProcessKind::Rank)),
    )?;
    let worker_bytes = median(peaks.iter().map(|m| m.of_kind(ProcessKind::Worker)))?;
    let growth = forked(runs)
        .then(|| median(runs.runs.iter().flat_map(|r| worker_growths(r))))
        .flatten();
    let objects = runs.runs.iter().find_map(|r| r.dataset_object_bytes);
    let share = measured_share(runs);
    // A worker copies at most its parent's private pages, and past what it has copied,
    // at most the pages of the dataset's objects.
    let main = runs.runs.iter().filter_map(|r| main_private(r)).max();
    let whole_epoch_growth = growth.map(|g| {
        let whole = g as f64 / share;
        let cap = [main, objects.map(|o| g + o)].into_iter().flatten().min();
        cap.map_or(whole, |cap| whole.min(cap as f64).max(g as f64)) as u64
    });
    // Judged on the whole epoch's growth: a `samples` cut or a window can end an epoch
    // before its workers have copied enough to show.
    let copy_on_access = whole_epoch_growth.is_some_and(|g| g >= GROWTH_MIN_BYTES)
        && objects.is_some_and(|b| b >= GROWTH_MIN_BYTES);
    let projected_growth = if copy_on_access {
        whole_epoch_growth
    } else {
        growth
    };
    let workers = runs.config.num_workers as u64 * runs.config.ranks.max(1) as u64;
    let more = match (growth, projected_growth) {
        (Some(g), Some(p)) if copy_on_access => workers * p.saturating_sub(g),
        _ => 0,
    };
    let projected_bytes = measured_bytes + more;
    Some(ConfigMemory {
        config: runs.index,
        label: runs.label.to_owned(),
        measured_bytes,
        main_bytes,
        worker_bytes,
        worker_growth_bytes: growth,
        projected_growth_bytes: projected_growth,
        projected_bytes,
        whole_epoch_samples: whole_epoch_samples(runs),
        fits: limit.is_none_or(|l| projected_bytes <= l.bytes),
        dataset_object_bytes: objects,
        copy_on_access,
    })
}

/// Each forked worker's growth of private bytes within each measured epoch it lived in.
/// In the epoch that forked it, from nothing: a forked worker starts sharing every page
/// with its parent, and the watch's first sample may come after its first copies (a
/// garbage collection that walks every object copies their pages at once). In a later
/// epoch (a persistent worker), from its first sample.
fn worker_growths(run: &ConfigResult) -> impl Iterator<Item = u64> + '_ {
    run.processes
        .iter()
        .filter(|p| p.kind == ProcessKind::Worker)
        .flat_map(|p| p.epochs.iter().enumerate())
        .filter(|(_, e)| e.epoch > 0)
        .filter_map(|(seen_before, e)| {
            let (first, last) = e.private_span()?;
            Some(if seen_before == 0 {
                last
            } else {
                last.saturating_sub(first)
            })
        })
}

/// The main process's largest private memory: what a worker holds at most when it has
/// copied all of it.
fn main_private(run: &ConfigResult) -> Option<u64> {
    run.processes
        .iter()
        .filter(|p| matches!(p.kind, ProcessKind::Main | ProcessKind::Rank))
        .flat_map(|p| &p.epochs)
        .map(|e| e.peak_private_bytes)
        .max()
}

/// Samples in an epoch of the whole dataset, where the runtime said.
fn whole_epoch_samples(runs: &ConfigRuns<'_>) -> Option<usize> {
    runs.runs.iter().find_map(|r| r.dataset_samples)
}

/// The share of an epoch of the whole dataset that a measured epoch's samples covered
/// (the median over epochs): below 1 where a window cut it or `samples` cut the dataset.
fn measured_share(runs: &ConfigRuns<'_>) -> f64 {
    let whole = whole_epoch_samples(runs);
    let shares: Vec<f64> = runs
        .epochs()
        .filter(|e| e.samples > 0)
        .map(|e| {
            let cut = e
                .projected
                .map_or(1.0, |p| p.measured_batches as f64 / e.batches.max(1) as f64);
            let of_whole = whole.map_or(1.0, |w| (e.samples as f64 / w as f64).min(1.0));
            (cut * of_whole).clamp(1e-6, 1.0)
        })
        .collect();
    stats::median(&shares).unwrap_or(1.0)
}

/// A long-lived process of the config whose memory rose by at least
/// [`GROWTH_MIN_BYTES`] in each of at least [`ACROSS_EPOCHS_MIN`] epochs.
fn across_epochs(runs: &ConfigRuns<'_>) -> Option<GrowthAcrossEpochs> {
    runs.runs.iter().find_map(|run| {
        run.processes.iter().find_map(|process| {
            let per_epoch = epoch_peaks(process);
            let rising = per_epoch.len() >= ACROSS_EPOCHS_MIN
                && per_epoch
                    .windows(2)
                    .all(|w| w[1] >= w[0] + GROWTH_MIN_BYTES);
            rising.then(|| GrowthAcrossEpochs {
                label: runs.label.to_owned(),
                kind: process.kind,
                per_epoch_bytes: per_epoch,
            })
        })
    })
}

/// A process's peak in each measured epoch it lived in: RSS for a main process or a
/// rank (whose private pages change as forked workers come and go), private bytes for
/// a worker.
fn epoch_peaks(process: &ProcessMemory) -> Vec<u64> {
    process
        .epochs
        .iter()
        .filter(|e| e.epoch > 0)
        .map(|e| match process.kind {
            ProcessKind::Main | ProcessKind::Rank => e.peak_rss_bytes,
            ProcessKind::Worker | ProcessKind::Helper => e.peak_private_bytes,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Analysis;
    use loaderbench_engine::plan::Config;
    use loaderbench_engine::preset::{Preset, WorkerKind};
    use loaderbench_measure::fixtures::{config, epoch, result, run};
    use loaderbench_measure::process_memory::{EpochMemory, MemoryPoint, ProcessEpoch};

    const MIB: u64 = 1 << 20;

    /// A process's epoch whose private memory goes from `from` to `to` MiB.
    fn process_epoch(epoch: usize, from: u64, to: u64, rss: u64) -> ProcessEpoch {
        let series: Vec<MemoryPoint> = (0..=10)
            .map(|i| MemoryPoint {
                at_s: i as f64 * 0.1,
                pss_bytes: (from + (to - from) * i / 10) * MIB,
                private_bytes: (from + (to - from) * i / 10) * MIB,
            })
            .collect();
        ProcessEpoch {
            epoch,
            series,
            peak_pss_bytes: to * MIB,
            peak_private_bytes: to * MIB,
            peak_rss_bytes: rss * MIB,
        }
    }

    /// Config `index` measured once over `epochs` epochs: a main process of 300 MiB
    /// private, and each epoch new workers whose private memory grows by `growth` MiB.
    fn measured(
        index: usize,
        config: Config,
        batch_s: f64,
        growth: u64,
        epochs: usize,
    ) -> ConfigResult {
        let workers = config.num_workers as u64;
        let mut r = run(
            index,
            config,
            (1..=epochs).map(|e| epoch(e, 0.1, batch_s, 10)).collect(),
        );
        r.dataset_samples = Some(2560);
        r.dataset_object_bytes = Some(200 * MIB);
        let main = ProcessMemory {
            kind: ProcessKind::Main,
            pid: 1,
            epochs: (1..=epochs)
                .map(|e| process_epoch(e, 300, 300, 400))
                .collect(),
        };
        r.processes = std::iter::once(main)
            .chain((0..workers * epochs as u64).map(|w| ProcessMemory {
                kind: ProcessKind::Worker,
                pid: 10 + w as u32,
                epochs: vec![process_epoch(
                    1 + (w / workers.max(1)) as usize,
                    5,
                    5 + growth,
                    5 + growth,
                )],
            }))
            .collect();
        for e in &mut r.epochs {
            let worker_pss = workers * (5 + growth) * MIB;
            e.memory = Some(EpochMemory {
                peak_pss_bytes: 300 * MIB + worker_pss,
                main_pss_bytes: 300 * MIB,
                worker_pss_bytes: worker_pss,
                rank_pss_bytes: 0,
                helper_pss_bytes: 0,
                sweeps: 11,
                sampling_s: 0.05,
            });
        }
        r
    }

    fn forked(workers: usize) -> Config {
        let mut c = config(workers, false);
        c.worker_kind = WorkerKind::Fork;
        c
    }

    /// nw=0, and nw=2 forked (twice as fast) whose workers grow by `growth` MiB, with a
    /// limit of `limit` MiB.
    fn two_configs(growth: u64, limit: Option<u64>) -> RunResult {
        let configs = vec![config(0, false), forked(2)];
        // Three rounds alike: the halved time is beyond any noise.
        let results = (0..3)
            .flat_map(|round| {
                [
                    measured(0, configs[0].clone(), 0.2, 0, 2),
                    measured(1, configs[1].clone(), 0.1, growth, 2),
                ]
                .map(|mut r| {
                    r.repeat = round;
                    r
                })
            })
            .collect();
        let mut r = result(configs, results);
        r.setup = Some(Preset {
            memory_limit: limit.map(bytesize::ByteSize::mib),
            ..Preset::default()
        });
        r
    }

    /// `result` as measured on a dataset of `samples` (its epochs hold 640).
    fn of_a_dataset(mut result: RunResult, samples: usize) -> RunResult {
        for run in &mut result.results {
            run.dataset_samples = Some(samples);
        }
        result
    }

    #[test]
    fn forked_workers_that_grow_are_copy_on_access_projected_to_the_whole_dataset() {
        let analysis = Analysis::of(&two_configs(100, None));
        let nw2 = &analysis.memory.configs[1];
        assert!(nw2.copy_on_access);
        assert_eq!(
            nw2.worker_growth_bytes,
            Some(105 * MIB),
            "from nothing: forked this epoch"
        );
        // 640 samples an epoch of 2560: a quarter; 4 × 105 MiB is past a whole copy of
        // the main process's 300 MiB, so a whole copy it is.
        assert_eq!(nw2.projected_growth_bytes, Some(300 * MIB));
        assert_eq!(nw2.measured_bytes, (300 + 2 * 105) * MIB);
        assert_eq!(nw2.projected_bytes, (300 + 2 * 105 + 2 * 195) * MIB);
        assert!(!analysis.memory.configs[0].copy_on_access);
        let text = analysis.memory.paragraphs(50).join(" ");
        assert!(
            text.starts_with(
                "Copy-on-access: the Dataset keeps its index as Python objects of about \
                 200.0 MiB (lists, dicts, strings)"
            ),
            "{text}"
        );
        assert!(text.contains("per worker by 105.0 MiB at nw=2"), "{text}");
        assert!(
            text.contains("(2560 samples) that is about 300.0 MiB per worker"),
            "{text}"
        );
        assert!(text.contains("numpy arrays or a torch.Tensor"), "{text}");
    }

    #[test]
    fn growth_over_part_of_the_dataset_is_judged_on_the_whole_epoch_s() {
        // A twentieth of the dataset: each worker grew by 15 MiB, under the 32 MiB that
        // would name it; in proportion, 300 MiB over a whole epoch, capped at what it
        // grew plus the dataset's 200 MiB of objects.
        let analysis = Analysis::of(&of_a_dataset(two_configs(10, None), 640 * 20));
        let nw2 = &analysis.memory.configs[1];
        assert_eq!(nw2.worker_growth_bytes, Some(15 * MIB));
        assert!(nw2.copy_on_access);
        assert_eq!(
            nw2.projected_growth_bytes,
            Some(215 * MIB),
            "the objects' copy"
        );
        assert_eq!(nw2.projected_bytes, nw2.measured_bytes + 2 * 200 * MIB);
        let text = analysis.memory.paragraphs(50).join(" ");
        assert!(text.contains("per worker by 15.0 MiB at nw=2"), "{text}");
        assert!(
            text.contains("that is about 215.0 MiB per worker"),
            "{text}"
        );
    }

    #[test]
    fn workers_that_keep_to_their_own_memory_get_no_word() {
        // The whole dataset's epoch: 9 MiB is all a worker grows.
        let analysis = Analysis::of(&of_a_dataset(two_configs(4, None), 640));
        assert!(!analysis.memory.configs[1].copy_on_access);
        assert_eq!(
            analysis.memory.configs[1].projected_bytes,
            analysis.memory.configs[1].measured_bytes
        );
        assert!(analysis.memory.paragraphs(50).is_empty());
    }

    #[test]
    fn growth_over_a_dataset_without_python_objects_is_not_the_dataset_s_doing() {
        // A numpy index: the workers still copy the interpreter's objects on their first
        // full garbage collection, which no change to the dataset undoes.
        let mut result = two_configs(60, None);
        for run in &mut result.results {
            run.dataset_object_bytes = Some(4096);
        }
        let analysis = Analysis::of(&result);
        assert_eq!(
            analysis.memory.configs[1].worker_growth_bytes,
            Some(65 * MIB)
        );
        assert!(!analysis.memory.configs[1].copy_on_access);
        assert!(analysis.memory.paragraphs(50).is_empty());
    }

    #[test]
    fn spawned_workers_are_not_copy_on_access() {
        let mut result = two_configs(100, None);
        result.configs[1].worker_kind = WorkerKind::Spawn;
        for r in result.results.iter_mut().filter(|r| r.config_index == 1) {
            r.config.worker_kind = WorkerKind::Spawn;
        }
        let analysis = Analysis::of(&result);
        assert_eq!(analysis.memory.configs[1].worker_growth_bytes, None);
        assert!(analysis.memory.paragraphs(50).is_empty());
    }

    #[test]
    fn a_main_process_rising_every_epoch_is_growth_across_epochs_not_copy_on_access() {
        let mut result = two_configs(0, None);
        result.results = vec![measured(0, result.configs[0].clone(), 0.2, 0, 3)];
        for (e, rss) in result.results[0].processes[0]
            .epochs
            .iter_mut()
            .zip([400, 500, 600])
        {
            e.peak_rss_bytes = rss * MIB;
        }
        let text = Analysis::of(&result).memory.paragraphs(10).join(" ");
        assert!(
            text.starts_with("Growth across epochs, not copy-on-access: nw=0's main process"),
            "{text}"
        );
        assert!(text.contains("(400.0 MiB, 500.0 MiB, 600.0 MiB)"), "{text}");
        assert!(text.contains("about 100.0 MiB an epoch"), "{text}");
        assert!(text.contains("would reach about 1300.0 MiB"), "{text}");
        assert!(!text.contains("Copy-on-access:"), "{text}");
    }

    #[test]
    fn a_config_past_the_limit_is_never_recommended_and_the_text_says_why() {
        // Without a limit, the forked workers' config is faster and recommended.
        let free = Analysis::of(&two_configs(100, None));
        assert_eq!(free.recommendations[0].label.as_deref(), Some("nw=2"));
        // Its measured 510 MiB and projected 900 MiB: a limit between nw=0's 300 MiB and
        // those leaves nw=0.
        let limited = Analysis::of(&two_configs(100, Some(600)));
        let recommendation = &limited.recommendations[0];
        assert_eq!(recommendation.label.as_deref(), Some("nw=0"));
        assert!(
            recommendation.text.contains(
                "nw=2 (900.0 MiB) does not fit the memory limit of 600.0 MiB (memory_limit) \
                 at the end of an epoch of the whole dataset, so it is never recommended."
            ),
            "{}",
            recommendation.text
        );
        assert!(!limited.memory.fits(1) && limited.memory.fits(0));
        assert!(
            recommendation
                .text
                .contains("Verdict: nw=0 is the only config of this question that fits"),
            "{}",
            recommendation.text
        );
        // Nothing fits: nothing is named.
        let none = Analysis::of(&two_configs(100, Some(100)));
        assert_eq!(none.recommendations[0].label, None);
        assert!(
            none.recommendations[0]
                .text
                .starts_with("No config is named: nw=0 (300.0 MiB), nw=2")
        );
    }

    #[test]
    fn the_limit_is_the_machine_s_available_memory_unless_the_preset_gives_one() {
        let mut result = two_configs(100, None);
        result.machine.available_memory_bytes = Some(700 * MIB);
        let limit = MemoryLimit::of(&result).unwrap();
        assert_eq!(
            limit,
            MemoryLimit {
                bytes: 700 * MIB,
                source: LimitSource::Available
            }
        );
        assert_eq!(
            limit.describe(),
            "700.0 MiB (available when the run started)"
        );
        assert!(!Analysis::of(&result).memory.fits(1), "900 MiB projected");
        result.setup.as_mut().unwrap().memory_limit = Some(bytesize::ByteSize::gib(1));
        assert_eq!(
            MemoryLimit::of(&result).unwrap().source,
            LimitSource::Preset
        );
        assert!(Analysis::of(&result).memory.fits(1));
    }
}
