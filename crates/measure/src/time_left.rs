//! The progress lines' estimate of a run's time left (the app's run bar, the CLI's
//! progress bar), from the run's events as they come. A run's configs can differ a
//! hundredfold in time (our engine's 0.2-second epochs beside the PyTorch runtime's 20-second
//! ones, spawned workers beside forked ones), so one rate of batches over the whole run
//! is wrong until its last config: after four of our engine's configs, a run with ten
//! PyTorch configs to go said "about 0:51 left" and took three minutes more. The
//! estimate is made per unit of work (one repeat of one config), each unit belonging to
//! a family (its runtime, and how its workers start): a unit to come is expected to take
//! what the finished units of its family took on average; where none has finished, what
//! the unit under way projects from its own progress if it is of that family, else the
//! average finished unit of its runtime (or the unit under way's, if it is of that
//! runtime), else of the run. The unit under way is expected to take what its own
//! progress projects once it has finished an epoch (progress is counted in whole epochs,
//! since an epoch measured in a window of its batches ends long before its last batch),
//! and at least as long as if its epoch under way ended now.
//! Until some unit or epoch has finished, the progress line keeps the rate of batches.

use loaderbench_engine::plan::Config;

use crate::events::Event;

/// When each unit of a run started and how long each finished one took.
#[derive(Debug, Clone, Default)]
pub struct UnitClock {
    /// Each config's family: its runtime, and how its workers start.
    families: Vec<(&'static str, &'static str)>,
    repeats: usize,
    /// Epochs a unit measures, its warm-up counted.
    epochs: usize,
    /// Seconds each finished unit took, per config.
    finished: Vec<Vec<f64>>,
    /// The unit under way: its config and the run's seconds when it started.
    current: Option<(usize, f64)>,
    /// Epochs the unit under way has finished.
    epochs_done: usize,
}

impl UnitClock {
    /// A clock for `configs`, each measured `repeats` times in units of `epochs` epochs.
    pub fn new(configs: &[Config], repeats: usize, epochs: usize) -> UnitClock {
        UnitClock {
            families: configs.iter().map(family).collect(),
            repeats,
            epochs,
            finished: vec![Vec::new(); configs.len()],
            current: None,
            epochs_done: 0,
        }
    }

    /// Folds in `event`, which came `at_s` seconds into the run.
    pub fn observe(&mut self, event: &Event, at_s: f64) {
        match event {
            Event::ConfigStarted { config, .. } => self.started(*config, at_s),
            Event::EpochFinished { .. } => self.epoch_finished(),
            Event::ConfigFinished { result } => self.finished(result.config_index, at_s),
            _ => {}
        }
    }

    /// A unit of `config` started at `at_s` (seconds into the run).
    fn started(&mut self, config: usize, at_s: f64) {
        self.current = Some((config, at_s));
        self.epochs_done = 0;
    }

    /// The unit under way finished an epoch.
    fn epoch_finished(&mut self) {
        self.epochs_done += 1;
    }

    /// The unit under way ended at `at_s`.
    fn finished(&mut self, config: usize, at_s: f64) {
        if let Some((current, started)) = self.current.take()
            && current == config
            && let Some(took) = self.finished.get_mut(config)
        {
            took.push((at_s - started).max(0.0));
        }
    }

    /// The seconds left at `now_s`; `None` until something says how long a unit takes.
    pub fn seconds_left(&self, now_s: f64) -> Option<f64> {
        let (current, started) = self.current?;
        let family = *self.families.get(current)?;
        let ran = (now_s - started).max(0.0);
        let epochs = self.epochs.max(1) as f64;
        let done = self.epochs_done.min(self.epochs) as f64;
        let projected = (done > 0.0).then(|| ran * epochs / done);
        // The least it can take: its epoch under way ending now.
        let least = ran * epochs / (done + 1.0).min(epochs);
        let took_where = |alike: &dyn Fn(usize) -> bool| {
            let took: Vec<f64> = (0..self.finished.len())
                .filter(|&c| alike(c))
                .flat_map(|c| self.finished[c].iter().copied())
                .collect();
            mean(&took)
        };
        let of_family = |family| took_where(&|c| self.families[c] == family);
        let of_runtime = |runtime| took_where(&|c| self.families[c].0 == runtime);
        let of_run = took_where(&|_| true);
        if projected.is_none() && of_run.is_none() {
            return None; // Nothing has finished: the progress line takes the batches' rate.
        }
        let this_unit = projected
            .or(of_family(family))
            .or(of_runtime(family.0))
            .or(of_run)
            .map_or(least, |total| total.max(least));
        // A unit to come: its family's, else this unit's where it is of that family, else
        // its runtime's, else this unit's where it is of that runtime, else the run's.
        let estimate = |config: usize| {
            let theirs = self.families[config];
            of_family(theirs)
                .or((theirs == family).then_some(this_unit))
                .or(of_runtime(theirs.0))
                .or((theirs.0 == family.0).then_some(this_unit))
                .or(of_run)
        };
        let mut left = this_unit - ran;
        for (config, took) in self.finished.iter().enumerate() {
            let under_way = usize::from(config == current);
            let units = self.repeats.saturating_sub(took.len() + under_way);
            if units > 0 {
                left += units as f64 * estimate(config)?;
            }
        }
        Some(left)
    }
}

/// What puts a config's units in one family: its runtime, and how its workers start.
fn family(config: &Config) -> (&'static str, &'static str) {
    (config.runtime.name(), config.worker_start())
}

/// A time as the progress lines write it: `4.2 s` under ten seconds, else `1:05`.
pub fn clock(seconds: f64) -> String {
    if seconds < 10.0 {
        format!("{seconds:.1} s")
    } else {
        let whole = seconds.round() as u64;
        format!("{}:{:02}", whole / 60, whole % 60)
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::config;
    use loaderbench_engine::preset::{Runtime, StartMethod, WorkerKind};

    /// A unit of `config` that ran from `from_s` to `to_s`.
    fn took(clock: &mut UnitClock, config: usize, from_s: f64, to_s: f64) {
        clock.started(config, from_s);
        clock.finished(config, to_s);
    }

    fn pytorch(workers: usize, method: StartMethod) -> Config {
        let mut config = config(workers, false);
        config.runtime = Runtime::Pytorch;
        config.worker_kind = WorkerKind::Auto;
        config.start_method = method;
        config
    }

    /// Two of our engine's configs of a second each, then a PyTorch config half done
    /// after 10 s: it has 10 s to go, the other PyTorch config of its family 20 s, and
    /// our engine's last config 1 s.
    #[test]
    fn units_to_come_take_what_their_family_took() {
        let configs = [
            config(0, false),
            config(2, false),
            pytorch(2, StartMethod::Fork),
            pytorch(4, StartMethod::Fork),
            config(4, false),
        ];
        let mut clock = UnitClock::new(&configs, 1, 2);
        took(&mut clock, 0, 0.0, 1.0);
        took(&mut clock, 1, 1.0, 2.0);
        clock.started(2, 2.0);
        // Before its first epoch ends: every unit as the run's average so far.
        let early = clock.seconds_left(2.5).unwrap();
        assert!((early - (0.5 + 1.0 + 1.0)).abs() < 1e-9, "{early}");
        clock.epoch_finished();
        assert_eq!(clock.seconds_left(12.0), Some(31.0));
    }

    /// Spawned workers are a family of their own: a spawn config after fork ones takes
    /// its own time, once it has made progress.
    #[test]
    fn a_family_none_of_whose_units_finished_takes_the_unit_under_way_s_projection() {
        let configs = [
            pytorch(2, StartMethod::Fork),
            pytorch(2, StartMethod::Spawn),
            pytorch(4, StartMethod::Spawn),
        ];
        let mut clock = UnitClock::new(&configs, 2, 4);
        took(&mut clock, 0, 0.0, 4.0);
        took(&mut clock, 0, 4.0, 8.0);
        clock.started(1, 8.0);
        clock.epoch_finished();
        // A quarter of the way after 5 s: 15 s to go, 20 s for its second repeat, 40 s
        // for the other spawn config's two.
        assert_eq!(clock.seconds_left(13.0), Some(75.0));
    }

    /// A family none of whose units has finished, beside the unit under way, takes what
    /// its runtime's finished units took, not the whole run's: PyTorch's spawn configs
    /// after its fork ones, our engine's fast configs left out.
    #[test]
    fn a_family_not_yet_measured_takes_its_runtime_s_time() {
        let configs = [
            config(0, false),
            pytorch(2, StartMethod::Fork),
            pytorch(2, StartMethod::Forkserver),
            pytorch(2, StartMethod::Spawn),
        ];
        let mut clock = UnitClock::new(&configs, 1, 4);
        took(&mut clock, 0, 0.0, 1.0);
        took(&mut clock, 1, 1.0, 21.0);
        clock.started(2, 21.0);
        clock.epoch_finished();
        // The forkserver config a quarter done after 10 s: 30 s to go; spawn as fork.
        assert_eq!(clock.seconds_left(31.0), Some(50.0));
    }

    /// A unit with no epoch done yet is expected to take at least as if its epoch under
    /// way ended now: the first PyTorch config, 8 s into the first of its two epochs after
    /// our engine's 1-second config, 16 s at least, not the second that config took.
    #[test]
    fn the_unit_under_way_takes_at_least_what_it_has_run_so_far() {
        let configs = [
            config(0, false),
            pytorch(0, StartMethod::Fork),
            pytorch(2, StartMethod::Spawn),
        ];
        let mut clock = UnitClock::new(&configs, 1, 2);
        took(&mut clock, 0, 0.0, 1.0);
        clock.started(1, 1.0);
        assert_eq!(clock.seconds_left(9.0), Some(8.0 + 16.0));
    }

    #[test]
    fn nothing_is_estimated_before_a_unit_runs_or_anything_is_known() {
        let mut clock = UnitClock::new(&[config(0, false)], 1, 2);
        assert_eq!(clock.seconds_left(1.0), None);
        clock.started(0, 0.0);
        assert_eq!(clock.seconds_left(0.1), None);
        clock.epoch_finished();
        assert_eq!(clock.seconds_left(2.0), Some(2.0));
    }
}
