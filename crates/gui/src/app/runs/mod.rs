//! The runs' part: the run the window shows (measured here, live or ended, or saved runs
//! opened), the tune and its budget, the saved runs shown together, the recent runs,
//! the config the timeline follows, and the drawing of a run (its status, plots, table
//! and analysis, in [`view`]). Its children each own one job: a run measured here and
//! its end ([`live_run`]), saved runs opened ([`open_runs`]), measuring an unresolved
//! run further ([`resolve_run`]), the tune ([`tune_run`]), and the child processes those
//! two report from ([`event_child`]).

mod event_child;
mod live_run;
mod open_runs;
mod resolve_run;
mod tune_run;
mod view;

use std::path::PathBuf;
use std::time::Duration;

use loaderbench_analysis::Analysis;
use loaderbench_analysis::baseline;
use loaderbench_engine::preset::FieldPath;
use loaderbench_measure::results::RunResult;

use crate::actions::Action;
use crate::charts::{self, Chart};
use crate::live::{Phase, RunData};
use crate::pacing::Pacer;
use crate::tune_view::TuneProgress;
use crate::{analysis_charts, analysis_view, cost_charts};

use self::live_run::LiveRun;
use self::tune_run::TuneRun;
use super::messages::Messages;

/// The tune budget field's first value, in seconds.
const DEFAULT_TUNE_BUDGET_S: u32 = 60;

/// How soon the window draws again when a frame left events over.
pub(super) const LIVE_FRAME_INTERVAL: Duration = Duration::from_millis(66);

/// Where runs are measured: the program that measures (`None`: this one) and where
/// journals go (`None`: the user data directory).
#[derive(Debug, Clone, Default)]
pub(super) struct Measurer {
    pub(super) program: Option<PathBuf>,
    pub(super) journal_dir: Option<PathBuf>,
}

/// How a shown run ended, reported once when it does.
#[derive(Debug, Clone)]
pub(super) struct RunEnded {
    pub(super) phase: Phase,
    /// It failed on the user's input (`loaderbench run`'s exit code 2).
    pub(super) bad_input: bool,
    /// The preset's field it failed on, where one was to blame.
    pub(super) field: Option<FieldPath>,
}

/// The runs the window shows and measures.
pub(super) struct Runs {
    live: Option<LiveRun>,
    /// The tune running, or the last one (shown beside its results).
    tune: Option<TuneRun>,
    /// The tune budget field, in seconds.
    tune_budget_s: u32,
    /// The saved runs shown together (empty for a run measured here).
    shown: Vec<(PathBuf, RunResult)>,
    /// The most recent journals, read when the File menu first needs them.
    recent: Option<Vec<(PathBuf, RunResult)>>,
    /// The config whose batches the timeline shows; `None` follows the run.
    selected: Option<usize>,
    /// Where the time goes shows each epoch of each config.
    stages_per_epoch: bool,
    measurer: Measurer,
}

impl Runs {
    pub(super) fn new(measurer: Measurer) -> Runs {
        Runs {
            live: None,
            tune: None,
            tune_budget_s: DEFAULT_TUNE_BUDGET_S,
            shown: Vec::new(),
            recent: None,
            selected: None,
            stages_per_epoch: false,
            measurer,
        }
    }

    /// True while a run or a tune is going.
    pub(super) fn is_running(&self) -> bool {
        self.is_measuring() || self.tune.as_ref().is_some_and(TuneRun::is_running)
    }

    /// Whether the shown run is measuring, or measuring further.
    fn is_measuring(&self) -> bool {
        self.live.as_ref().is_some_and(|run| {
            run.data.is_running() || run.resolving.as_ref().is_some_and(|r| r.is_running())
        })
    }

    pub(super) fn phase(&self) -> Option<&Phase> {
        self.live.as_ref().map(|run| &run.data.phase)
    }

    pub(super) fn result(&self) -> Option<&RunResult> {
        self.live.as_ref().and_then(|run| run.data.result.as_ref())
    }

    pub(super) fn analysis(&self) -> Option<&Analysis> {
        self.live.as_ref().and_then(|run| run.analysis.as_ref())
    }

    pub(super) fn tune_progress(&self) -> Option<&TuneProgress> {
        self.tune.as_ref().map(|tune| &tune.progress)
    }

    /// The charts as they are drawn now: first batch, epoch times, the rank spread when
    /// a config has several ranks, timeline.
    pub(super) fn charts(&self) -> Vec<Chart> {
        self.live.as_ref().map_or_else(Vec::new, |run| {
            let data = &run.data;
            let mut charts = vec![charts::first_batch(data), charts::epoch_times(data)];
            charts.extend(charts::rank_spread(data));
            charts.push(charts::timeline(data, self.timeline_config(data)));
            charts
        })
    }

    /// The analysis charts as they are drawn now: ledger, scaling, where the time goes,
    /// memory and throughput, then the stall with a training step and the baseline
    /// comparison when there is one.
    pub(super) fn analysis_charts(&self) -> Vec<Chart> {
        let Some(run) = &self.live else {
            return Vec::new();
        };
        let (Some(analysis), Some(result)) = (&run.analysis, &run.data.result) else {
            return Vec::new();
        };
        let mut charts = vec![
            analysis_charts::ledger(analysis),
            analysis_charts::scaling(analysis),
            analysis_view::stages_chart(result, self.stages_per_epoch),
            cost_charts::memory(result, analysis),
            cost_charts::throughput(result, analysis),
        ];
        charts.extend(analysis_charts::stall(analysis));
        if let Some((name, changes)) = &run.comparison {
            charts.push(analysis_charts::baseline(name, changes));
        }
        charts
    }

    fn timeline_config(&self, data: &RunData) -> usize {
        self.selected
            .unwrap_or(data.progress.config)
            .min(data.labels.len().saturating_sub(1))
    }

    /// When the window should draw again: soon when events are left over, else at the
    /// pace of a measuring run's progress line.
    pub(super) fn next_frame_in(&self, left_over: bool) -> Option<Duration> {
        if left_over {
            return Some(LIVE_FRAME_INTERVAL);
        }
        self.pacers().find_map(Pacer::next_frame_in)
    }

    /// Waits, at the top of a frame, until what measures (the run, its resolve, the
    /// tune) lets the window draw.
    pub(super) fn wait_to_draw(&self) {
        for pacer in self.pacers() {
            pacer.wait_to_draw();
        }
    }

    /// The pacers of what may be measuring: the run's, its resolve's and the tune's (a
    /// pacer of nothing measuring lets every frame draw).
    fn pacers(&self) -> impl Iterator<Item = &Pacer> {
        let live = self.live.as_ref();
        let run = live
            .filter(|run| run.data.is_running())
            .map(|run| &run.pacer);
        let resolve = live
            .and_then(|run| run.resolving.as_ref())
            .map(|resolve| resolve.pacer());
        let tune = self.tune.as_ref().map(|tune| tune.pacer());
        run.into_iter().chain(resolve).chain(tune)
    }

    /// Takes one of the runs' own actions: the tune budget, cancelling, the timeline's
    /// config, the "per epoch" switch, a comparison with a baseline or an open run. Any
    /// other action leaves the runs as they are.
    pub(super) fn apply(&mut self, action: Action, messages: &mut Messages) {
        match action {
            Action::TuneBudget(seconds) => self.tune_budget_s = seconds,
            Action::CancelRun => self.cancel(),
            Action::SelectConfig(config) => self.selected = Some(config),
            Action::StagesPerEpoch(per_epoch) => self.stages_per_epoch = per_epoch,
            Action::CompareBaseline(name) => self.compare_baseline(&name, messages),
            Action::CompareOpenRun(index) => self.compare_open_run(index, messages),
            _ => {}
        }
    }

    /// Forgets the last tune, as a run started in its place does.
    pub(super) fn forget_tune(&mut self) {
        self.tune = None;
    }

    /// Stops the run, its resolve and the tune.
    fn cancel(&mut self) {
        self.cancel_run();
        self.cancel_resolve();
        self.cancel_tune();
    }

    /// Compares the shown run with the baseline called `name`.
    fn compare_baseline(&mut self, name: &str, messages: &mut Messages) {
        let loaded = baseline::load(name);
        let Some(run) = &mut self.live else {
            return;
        };
        let Some(result) = &run.data.result else {
            return;
        };
        match loaded {
            Ok(before) => {
                let changes = baseline::compare(&before, result);
                let matched = changes.len();
                let alone = unpaired(&before, result);
                run.comparison = Some((name.to_owned(), changes));
                messages.note(format!(
                    "Compared with baseline `{name}`: {matched} config(s) matched{alone}."
                ));
            }
            Err(err) => messages.error(format!("Could not compare: {err}")),
        }
    }

    /// Compares the first open run with open run `index`, as with a saved baseline.
    fn compare_open_run(&mut self, index: usize, messages: &mut Messages) {
        let names = self.open_run_names();
        let (Some((_, after)), Some((_, before)), Some(run)) = (
            self.shown.first(),
            self.shown.get(index),
            self.live.as_mut(),
        ) else {
            return;
        };
        let changes = baseline::compare(before, after);
        let matched = changes.len();
        let alone = unpaired(before, after);
        run.comparison = Some((names[index].clone(), changes));
        messages.note(format!(
            "Compared {} with {}: {matched} config(s) matched{alone}.",
            names[0], names[index]
        ));
    }
}

/// The configs one side of a comparison measured alone, as the end of a note:
/// `; not in the baseline: nw=8`, or nothing where every config pairs up.
fn unpaired(before: &RunResult, after: &RunResult) -> String {
    let lines = baseline::unmatched(before, after);
    lines.iter().map(|line| format!("; {line}")).collect()
}
