//! A run as the app sees it: [`RunData`] folds the runner's events into what the plots,
//! the table and the progress line show (per config and epoch, every repeat's first-batch
//! latency and epoch time; the stall of every batch; how far the run has got). A saved
//! run is replayed into the same data ([`RunData::replayed`]), so it shows exactly as a
//! run measured here. It is plain data with no egui in it, so it is tested without a
//! window.

use std::time::Duration;

use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::FieldPath;
use loaderbench_measure::Event;
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::time_left::{UnitClock, clock};

use super::palette::SHADE_STEP;

/// Where a run stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    Running,
    Finished,
    Failed(String),
    Cancelled,
}

/// How far a run has got, for the progress line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunProgress {
    pub config: usize,
    pub repeat: usize,
    pub epoch: usize,
    pub batch: usize,
    pub batches_per_epoch: usize,
    pub batches_done: usize,
    pub batches_total: usize,
    /// Files checked and in all while the dataset is opened; `None` once the run started.
    pub opening: Option<(usize, usize)>,
}

/// What puts configs in one colour family: the run, the runtime, the worker kind.
type FamilyKey = fn(&Config) -> String;

/// The epoch being measured, as far as the last batch event told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunningEpoch {
    pub config: usize,
    /// 1-based; the warm-up epoch is never shown running.
    pub epoch: usize,
    /// Seconds since the epoch started, at the last batch reported.
    pub elapsed_s: f64,
    pub batches: usize,
}

/// Everything measured so far in one run.
#[derive(Debug, Clone)]
pub struct RunData {
    pub phase: Phase,
    pub labels: Vec<String>,
    /// Measured epochs per config and repeat (the warm-up epoch is not counted).
    pub epochs: usize,
    pub repeats: usize,
    warmup: bool,
    /// The run's result: configs as they finish, then the final one.
    pub result: Option<RunResult>,
    /// `[config][epoch - 1]`: one value per repeat.
    pub first_batch_s: Vec<Vec<Vec<f64>>>,
    pub epoch_s: Vec<Vec<Vec<f64>>>,
    /// `[config][epoch - 1]`: the consumer's wait for each batch of the latest repeat.
    pub wait_s: Vec<Vec<Vec<f64>>>,
    pub progress: RunProgress,
    /// The measured epoch in progress, from the batch events the frames take (so it
    /// grows only on the frames the pacing allows); `None` between epochs.
    pub running: Option<RunningEpoch>,
    /// The run failed because the user's input was wrong.
    pub bad_input: bool,
    /// The preset's field to blame, where the run failed on one.
    pub failed_field: Option<FieldPath>,
    /// Batches of the epochs that have finished.
    batches_finished: usize,
    /// When each unit (a repeat of a config) started and how long the finished ones
    /// took, for the time left: fed by [`RunData::apply_at`].
    clock: UnitClock,
    pub warnings: Vec<String>,
}

impl RunData {
    /// Whether the run has ended without an epoch measured: it failed or was cancelled
    /// before its first, and there is nothing to plot.
    pub fn ended_empty(&self) -> bool {
        self.phase != Phase::Running && self.epoch_s.iter().flatten().all(Vec::is_empty)
    }

    /// An empty run of `labels.len()` configs.
    pub fn new(labels: Vec<String>, epochs: usize, repeats: usize, warmup: bool) -> RunData {
        let grid = || vec![vec![Vec::new(); epochs]; labels.len()];
        RunData {
            phase: Phase::Running,
            epochs,
            repeats,
            warmup,
            result: None,
            first_batch_s: grid(),
            epoch_s: grid(),
            wait_s: grid(),
            progress: RunProgress::default(),
            running: None,
            bad_input: false,
            failed_field: None,
            batches_finished: 0,
            clock: UnitClock::default(),
            warnings: Vec::new(),
            labels,
        }
    }

    /// Rebuilds the live data of a finished run from its result, by replaying the events
    /// a run sends: each epoch of each config, its warnings, then how the run ended.
    pub fn replayed(result: RunResult) -> RunData {
        let warmup = result.results.iter().any(|r| r.warmup.is_some());
        let mut data = RunData::new(result.labels.clone(), result.epochs, result.repeats, warmup);
        let mut header = result.clone();
        header.results.clear();
        header.status = RunStatus::Running;
        let batches_per_epoch = result
            .results
            .iter()
            .flat_map(|r| r.epochs.first())
            .map(|epoch| epoch.batches)
            .next()
            .unwrap_or(0);
        data.apply(Event::Started {
            result: Box::new(header),
            batches_per_epoch,
        });
        for config in &result.results {
            for epoch in config.warmup.iter().chain(&config.epochs) {
                data.apply(Event::EpochFinished {
                    config: config.config_index,
                    repeat: config.repeat,
                    result: Box::new(epoch.clone()),
                });
            }
            data.apply(Event::ConfigFinished {
                result: Box::new(config.clone()),
            });
        }
        for message in &result.warnings {
            data.apply(Event::Warning {
                config: None,
                message: message.clone(),
            });
        }
        data.apply(ending(result));
        data
    }

    /// Whether config `index` was measured while other load disturbed it (any repeat
    /// so far).
    pub fn is_disturbed(&self, index: usize) -> bool {
        self.result.as_ref().is_some_and(|result| {
            result
                .results
                .iter()
                .any(|r| r.config_index == index && r.disturbed)
        })
    }

    /// Whether some epoch of config `index` was projected from a window of its batches
    /// (any repeat so far).
    pub fn is_projected(&self, index: usize) -> bool {
        self.result.as_ref().is_some_and(|result| {
            result
                .results
                .iter()
                .filter(|r| r.config_index == index)
                .flat_map(|r| &r.epochs)
                .any(|e| e.projected.is_some())
        })
    }

    /// The palette entry of config `index`: its run's when saved runs are shown
    /// together, so that each run keeps one colour; else, when the runtime (or else the
    /// worker kind) varies, its family's hue in the family's next shade (see
    /// [`palette::color`](super::palette::color)), so the families read apart; else its own.
    pub fn color_of(&self, index: usize) -> usize {
        let Some(configs) = self.result.as_ref().map(|r| &r.configs) else {
            return index;
        };
        let Some(config) = configs.get(index) else {
            return index;
        };
        let families: [(FamilyKey, bool); 3] = [
            (|c| c.run.clone().unwrap_or_default(), false),
            (|c| c.runtime.name().to_owned(), true),
            (|c| c.worker_kind.name().to_owned(), true),
        ];
        for (key, shaded) in families {
            let mut names: Vec<String> = Vec::new();
            for name in configs.iter().map(key) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            if names.len() < 2 {
                continue;
            }
            let own = key(config);
            let family = names.iter().position(|name| *name == own).unwrap_or(0);
            let shade = configs[..index].iter().filter(|c| key(c) == own).count();
            return family + if shaded { SHADE_STEP * shade } else { 0 };
        }
        index
    }

    /// True until the run has ended.
    pub fn is_running(&self) -> bool {
        self.phase == Phase::Running
    }

    /// Folds in one event that came `at` into the run: as [`RunData::apply`], and the
    /// unit clock's times.
    pub fn apply_at(&mut self, event: Event, at: Duration) {
        self.clock.observe(&event, at.as_secs_f64());
        self.apply(event);
    }

    /// Folds one event in.
    pub fn apply(&mut self, event: Event) {
        match event {
            Event::DatasetOpening { checked, total } => {
                self.progress.opening = Some((checked, total));
            }
            Event::Started {
                result,
                batches_per_epoch,
            } => {
                self.progress.opening = None;
                let epochs = self.epochs + usize::from(self.warmup);
                self.progress.batches_per_epoch = batches_per_epoch;
                // Saturating: a results file replayed may claim any count of batches.
                self.progress.batches_total = batches_per_epoch
                    .saturating_mul(epochs)
                    .saturating_mul(self.repeats)
                    .saturating_mul(self.labels.len());
                self.clock = UnitClock::new(&result.configs, self.repeats, epochs);
                self.result = Some(*result);
            }
            Event::ConfigStarted { config, repeat } => {
                self.progress.config = config;
                self.progress.repeat = repeat;
            }
            // Batch events may come sparsely (the app measures in a child process that
            // passes a few on each second): they move the progress line and the running
            // epoch's marker only.
            Event::Batch {
                config,
                epoch,
                batch,
                ..
            } => {
                self.running = (epoch >= 1).then_some(RunningEpoch {
                    config,
                    epoch,
                    elapsed_s: batch.at_s,
                    batches: batch.index + 1,
                });
                self.progress.epoch = epoch;
                self.progress.batch = batch.index + 1;
                self.progress.batches_done = self.batches_finished + batch.index + 1;
            }
            Event::EpochFinished { config, result, .. } => {
                self.running = None;
                self.batches_finished += result.batches;
                self.progress.epoch = result.epoch;
                self.progress.batch = result.batches;
                self.progress.batches_done = self.batches_finished;
                if let Some(waits) = self.slot(Slot::Wait, config, result.epoch) {
                    *waits = result.timeline.iter().map(|b| b.stages.wait_s).collect();
                }
                if let Some(values) = self.slot(Slot::FirstBatch, config, result.epoch) {
                    values.push(result.first_batch_s);
                }
                if let Some(values) = self.slot(Slot::Epoch, config, result.epoch) {
                    values.push(result.seconds);
                }
            }
            Event::ConfigFinished { result } => {
                if let Some(run) = &mut self.result {
                    run.results.push(*result);
                }
            }
            Event::Warning { message, .. } => self.warnings.push(message),
            Event::WorkerReady { .. } => {}
            Event::Finished { result } => self.end(Phase::Finished, *result),
            Event::Cancelled { result } => self.end(Phase::Cancelled, *result),
            Event::Failed {
                error,
                result,
                bad_input,
                field,
            } => {
                self.bad_input = bad_input;
                self.failed_field = field;
                self.end(Phase::Failed(error), *result);
            }
        }
    }

    fn end(&mut self, phase: Phase, result: RunResult) {
        self.running = None;
        self.phase = phase;
        self.result = Some(result);
    }

    fn slot(&mut self, slot: Slot, config: usize, epoch: usize) -> Option<&mut Vec<f64>> {
        let grid = match slot {
            Slot::FirstBatch => &mut self.first_batch_s,
            Slot::Epoch => &mut self.epoch_s,
            Slot::Wait => &mut self.wait_s,
        };
        grid.get_mut(config)?.get_mut(epoch.checked_sub(1)?)
    }

    /// The progress line: config, epoch, batch, elapsed and the estimated time left.
    pub fn progress_line(&self, elapsed: Duration) -> String {
        let p = &self.progress;
        if let Some((checked, total)) = p.opening {
            return format!(
                "opening the dataset: {checked}/{total} files checked · {} elapsed",
                clock(elapsed.as_secs_f64())
            );
        }
        let label = self.labels.get(p.config).map_or("", String::as_str);
        let mut line = format!(
            "config {}/{} {label}",
            (p.config + 1).min(self.labels.len()),
            self.labels.len()
        );
        if self.repeats > 1 {
            line.push_str(&format!(" · repeat {}/{}", p.repeat + 1, self.repeats));
        }
        let epoch = if p.epoch == 0 && self.warmup && p.batches_done > 0 {
            "warm-up".to_owned()
        } else {
            format!("{}/{}", p.epoch.max(1), self.epochs)
        };
        line.push_str(&format!(
            " · epoch {epoch} · batch {}/{} · {} elapsed",
            p.batch,
            p.batches_per_epoch,
            clock(elapsed.as_secs_f64())
        ));
        if let Some(left) = self.seconds_left(elapsed) {
            line.push_str(&format!(" · about {} left", clock(left)));
        }
        line
    }

    /// The time left: the unit clock's estimate where it has one (configs of different
    /// runtimes take very different times), else the run's rate of batches.
    fn seconds_left(&self, elapsed: Duration) -> Option<f64> {
        if let Some(left) = self.clock.seconds_left(elapsed.as_secs_f64()) {
            return Some(left);
        }
        let p = &self.progress;
        if p.batches_done == 0 || p.batches_total == 0 {
            return None;
        }
        let per_batch = elapsed.as_secs_f64() / p.batches_done as f64;
        Some(per_batch * p.batches_total.saturating_sub(p.batches_done) as f64)
    }
}

/// The event that ends a run with `result`'s status; a journal with no end (another
/// loaderbench still writes it) shows what it holds so far, as failed with that said.
fn ending(result: RunResult) -> Event {
    match result.status.clone() {
        RunStatus::Finished => Event::Finished {
            result: Box::new(result),
        },
        RunStatus::Cancelled => Event::Cancelled {
            result: Box::new(result),
        },
        RunStatus::Failed { error } => Event::Failed {
            error,
            bad_input: false,
            field: None,
            result: Box::new(result),
        },
        RunStatus::Running => Event::Failed {
            error: "still being measured by another loaderbench: this is what it had \
                    measured when opened"
                .to_owned(),
            bad_input: false,
            field: None,
            result: Box::new(result),
        },
    }
}

enum Slot {
    FirstBatch,
    Epoch,
    Wait,
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_engine::loader::StageTimes;
    use loaderbench_measure::results::{BatchRecord, EpochResult};

    fn batch(index: usize, wait_s: f64) -> BatchRecord {
        BatchRecord {
            index,
            at_s: 0.0,
            samples: 64,
            stages: StageTimes {
                wait_s,
                ..StageTimes::default()
            },
        }
    }

    #[test]
    fn folds_epochs_per_config_with_their_batches_waits() {
        let mut data = RunData::new(vec!["nw=0".into(), "nw=2".into()], 2, 1, false);
        data.apply(Event::Batch {
            config: 1,
            repeat: 0,
            epoch: 2,
            batch: batch(2, 0.5),
        });
        assert_eq!(data.progress.batches_done, 3);
        assert!(data.wait_s[1][1].is_empty(), "waits come with the epoch");
        let timeline = (0..4).map(|index| batch(index, 0.5)).collect();
        let epoch = EpochResult::from_batches(2, 3.0, timeline, Vec::new());
        data.apply(Event::EpochFinished {
            config: 1,
            repeat: 0,
            result: Box::new(epoch),
        });
        assert_eq!(data.wait_s[1][1], vec![0.5; 4]);
        assert_eq!(data.epoch_s[1][1], vec![3.0]);
        assert!(data.epoch_s[0][0].is_empty());
        assert_eq!(data.progress.batches_done, 4);
    }

    #[test]
    fn warmup_epochs_are_not_plotted() {
        let mut data = RunData::new(vec!["nw=0".into()], 1, 1, true);
        let epoch = EpochResult::from_batches(0, 1.0, vec![batch(0, 1.0)], Vec::new());
        data.apply(Event::EpochFinished {
            config: 0,
            repeat: 0,
            result: Box::new(epoch),
        });
        assert!(data.wait_s[0][0].is_empty());
        assert!(data.epoch_s[0][0].is_empty());
        assert_eq!(data.progress.batches_done, 1);
    }

    #[test]
    fn configs_are_coloured_by_runtime_in_shades_of_one_hue() {
        use loaderbench_engine::preset::Runtime;
        use loaderbench_measure::fixtures::{config, result};
        let mut data = RunData::new(vec!["a".into(), "b".into(), "c".into()], 1, 1, false);
        let mut pytorch = config(0, false);
        pytorch.runtime = Runtime::Pytorch;
        let configs = vec![config(0, false), pytorch, config(2, false)];
        data.result = Some(result(configs, Vec::new()));
        let colors: Vec<usize> = (0..3).map(|i| data.color_of(i)).collect();
        assert_eq!(
            colors,
            [0, 1, SHADE_STEP],
            "loaderbench's second config a shade of 0"
        );
        assert_ne!(
            super::super::palette::color(0, true),
            super::super::palette::color(SHADE_STEP, true)
        );
    }

    #[test]
    fn progress_line_estimates_time_left() {
        let mut data = RunData::new(vec!["nw=4 persistent".into()], 2, 1, false);
        data.progress = RunProgress {
            config: 0,
            epoch: 1,
            batch: 5,
            batches_per_epoch: 10,
            batches_done: 5,
            batches_total: 20,
            ..RunProgress::default()
        };
        let line = data.progress_line(Duration::from_secs(2));
        assert_eq!(
            line,
            "config 1/1 nw=4 persistent · epoch 1/2 · batch 5/10 · 2.0 s elapsed · about 6.0 s left"
        );
    }

    /// One of our engine's configs took a second; a PyTorch config has finished the
    /// first of its two epochs after 10 s: 10 s left for it and 20 s for the next PyTorch
    /// config (the rate of batches over the run said 11 s).
    #[test]
    fn progress_line_takes_the_time_left_per_runtime() {
        use loaderbench_engine::preset::Runtime;
        use loaderbench_measure::fixtures::{config, epoch, result, run};
        let mut pytorch = config(0, false);
        pytorch.runtime = Runtime::Pytorch;
        let configs = vec![config(0, false), pytorch.clone(), pytorch];
        let labels = ["nw=0", "nw=0 pytorch", "nw=0 pytorch 2"].map(String::from);
        let mut data = RunData::new(labels.to_vec(), 2, 1, false);
        data.apply(Event::Started {
            result: Box::new(result(configs.clone(), Vec::new())),
            batches_per_epoch: 10,
        });
        let at = Duration::from_secs_f64;
        let started = |config| Event::ConfigStarted { config, repeat: 0 };
        let epoch_done = |config, number| Event::EpochFinished {
            config,
            repeat: 0,
            result: Box::new(epoch(number, 0.05, 0.05, 10)),
        };
        data.apply_at(started(0), at(0.0));
        data.apply_at(epoch_done(0, 1), at(0.5));
        data.apply_at(epoch_done(0, 2), at(1.0));
        let finished = run(0, configs[0].clone(), vec![epoch(1, 0.05, 0.05, 10)]);
        let finished = Event::ConfigFinished {
            result: Box::new(finished),
        };
        data.apply_at(finished, at(1.0));
        data.apply_at(started(1), at(1.0));
        data.apply_at(epoch_done(1, 1), at(11.0));
        let line = data.progress_line(at(11.0));
        assert!(line.ends_with("· about 0:30 left"), "{line}");
    }

    #[test]
    fn progress_line_counts_files_checked_until_the_run_starts() {
        let mut data = RunData::new(vec!["nw=0".into()], 1, 1, false);
        data.apply(Event::DatasetOpening {
            checked: 300,
            total: 1000,
        });
        assert_eq!(
            data.progress_line(Duration::from_secs(1)),
            "opening the dataset: 300/1000 files checked · 1.0 s elapsed"
        );
        data.apply(Event::Started {
            result: Box::new(loaderbench_measure::fixtures::result(
                vec![loaderbench_measure::fixtures::config(0, false)],
                Vec::new(),
            )),
            batches_per_epoch: 4,
        });
        assert!(
            data.progress_line(Duration::from_secs(1))
                .starts_with("config 1/1")
        );
    }
}
