//! The app's resolve: a run measured here that ends with a recommendation not resolved
//! goes on measuring the configs it hinges on, as `run --recommend` does, for at most
//! the preset's `resolve_for_s`. `loaderbench resolve` does it in a child process (as the
//! app's runs and tunes are measured, so the window never shares the measured process),
//! appending to the run's journal, its rounds reported as JSON lines (`--events`) and
//! shown in the run bar as they come. As rounds end, the run is shown again from the
//! journal (at most once a second), its analysis and verdicts redone; when the resolve
//! ends, from what it saved. Cancel is Ctrl-C to the child, which keeps what it
//! measured. A scripted run (`gui --run --exit`) ends as it was measured. The Measure
//! further button does the same again, for up to the budget field's seconds, on the run
//! shown: one measured here, or a journal opened alone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use loaderbench_analysis::resolve::ResolveEvent;
use loaderbench_analysis::{Analysis, warnings};
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::results_file;

use crate::live::RunData;

use super::super::messages::Messages;
use super::Runs;
use super::event_child::EventChild;
use crate::pacing::Pacer;

/// How often, at most, the run is shown again from its journal while rounds go on.
const REFRESH: Duration = Duration::from_secs(1);

/// A resolve in its child process, or ended.
pub(super) struct ResolveRun {
    child: EventChild<ResolveEvent>,
    json: PathBuf,
    /// The run's journal, which the child appends each round's configs to.
    journal: PathBuf,
    /// When the run was last shown again from the journal, and the round begun then.
    shown: (Instant, usize),
    /// Holds the results until the run is shown again.
    _scratch: tempfile::TempDir,
    /// The run's config labels, to say what a round measures.
    labels: Vec<String>,
    /// What the run bar says: the round being measured.
    pub(super) status: String,
    started: Instant,
    /// The last round begun (its number among the run's rounds).
    rounds: usize,
    /// How many rounds it has begun.
    begun: usize,
}

/// What a finished resolve measured, for the run bar once it has ended.
#[derive(Debug, Clone, Copy)]
pub(super) struct MeasuredFurther {
    pub(super) rounds: usize,
    pub(super) took: Duration,
}

impl ResolveRun {
    pub(super) fn is_running(&self) -> bool {
        self.child.is_running()
    }

    pub(super) fn pacer(&self) -> &Pacer {
        &self.child.pacer
    }

    /// Starts `program resolve JOURNAL` for at most `seconds`.
    fn spawn(
        program: &Path,
        journal: &Path,
        seconds: f64,
        labels: Vec<String>,
        ctx: &egui::Context,
    ) -> std::io::Result<ResolveRun> {
        let scratch = tempfile::tempdir()?;
        let json = scratch.path().join("resolved.json");
        let mut command = Command::new(program);
        command
            .arg("resolve")
            .arg(journal)
            .arg("--resolve-for")
            .arg(format!("{}ms", (seconds * 1000.0).round()))
            .arg("--json")
            .arg(&json)
            .args(["--events", "--quiet"]);
        Ok(ResolveRun {
            child: EventChild::spawn(command, "resolve", ctx)?,
            json,
            journal: journal.to_path_buf(),
            shown: (Instant::now(), 1),
            _scratch: scratch,
            labels,
            status: format!("Not resolved: measuring further, for up to {seconds:.0} s"),
            started: Instant::now(),
            rounds: 0,
            begun: 0,
        })
    }
}

impl Runs {
    /// When the run just ended finished, measured here, not `scripted`, and its
    /// recommendation hinges on configs to measure further: starts resolving it.
    pub(in super::super) fn resolve_if_open(
        &mut self,
        ctx: &egui::Context,
        scripted: bool,
        messages: &mut Messages,
    ) {
        let Some(run) = self.live.as_mut() else {
            return;
        };
        let Some(journal) = run.journal.clone().filter(|_| run.resolve_pending) else {
            return;
        };
        run.resolve_pending = false;
        let Some(result) = self.result() else {
            return;
        };
        // The preset the run measured, not the one being edited since.
        let Some(seconds) = result.setup.as_ref().map(|preset| preset.resolve_for_s) else {
            return;
        };
        if seconds <= 0.0 || scripted || loaderbench_analysis::resolve::hinges(result).is_empty() {
            return;
        }
        self.start_resolve(ctx, &journal, seconds, messages);
    }

    /// True when the shown run can be measured further: it has ended with a journal,
    /// nothing runs, and some verdict hinges on configs to measure.
    pub(in super::super) fn can_measure_further(&self) -> bool {
        !self.is_running()
            && self.live.as_ref().is_some_and(|run| {
                run.journal.is_some()
                    && run.analysis.as_ref().is_some_and(|analysis| {
                        analysis
                            .recommendations
                            .iter()
                            .any(|r| !r.verdict.hinges_on.is_empty())
                    })
            })
    }

    /// How long the shown run's open verdicts ask to be measured further, in whole
    /// seconds: each question's own `--resolve-for`, summed, since measuring further
    /// shares its time between the questions; `None` when none asks.
    pub(in super::super) fn asked_to_measure_s(&self) -> Option<u32> {
        let analysis = self.live.as_ref()?.analysis.as_ref()?;
        let recommendations = analysis.recommendations.iter();
        let asked: f64 = recommendations
            .filter_map(|r| r.verdict.measure_for_s)
            .sum();
        (asked >= 1.0).then(|| asked.min(f64::from(u32::MAX)) as u32)
    }

    /// Measures the shown run further for up to the budget field's seconds, as
    /// `loaderbench resolve` does, appending to its journal (the Measure further button).
    pub(in super::super) fn measure_further(
        &mut self,
        ctx: &egui::Context,
        messages: &mut Messages,
    ) {
        if !self.can_measure_further() {
            return;
        }
        let Some(journal) = self.live.as_ref().and_then(|run| run.journal.clone()) else {
            return;
        };
        messages.clear_errors();
        self.start_resolve(ctx, &journal, f64::from(self.tune_budget_s), messages);
    }

    /// Starts resolving the shown run from `journal` for at most `seconds`.
    fn start_resolve(
        &mut self,
        ctx: &egui::Context,
        journal: &Path,
        seconds: f64,
        messages: &mut Messages,
    ) {
        let Some(labels) = self.result().map(|result| result.labels.clone()) else {
            return;
        };
        let program = match &self.measurer.program {
            Some(program) => program.clone(),
            None => match std::env::current_exe() {
                Ok(program) => program,
                Err(err) => return messages.error(format!("Resolving could not start: {err}")),
            },
        };
        match ResolveRun::spawn(&program, journal, seconds, labels, ctx) {
            Ok(resolve) => {
                if let Some(run) = &mut self.live {
                    run.resolving = Some(resolve);
                }
            }
            Err(err) => messages.error(format!("Resolving could not start: {err}")),
        }
    }

    /// Folds in the resolve's events; when its process has ended, shows the run again
    /// with what it measured.
    pub(in super::super) fn drain_resolve(&mut self, messages: &mut Messages) {
        let Some(resolve) = self.live.as_mut().and_then(|run| run.resolving.as_mut()) else {
            return;
        };
        let (labels, status) = (&resolve.labels, &mut resolve.status);
        let (rounds, begun) = (&mut resolve.rounds, &mut resolve.begun);
        let ended = resolve.child.drain(|event| {
            if let ResolveEvent::Round {
                round,
                configs,
                left_s,
            } = event
            {
                let names: Vec<&str> = configs
                    .iter()
                    .filter_map(|&i| labels.get(i).map(String::as_str))
                    .collect();
                *rounds = round;
                *begun += 1;
                *status = format!(
                    "Not resolved: round {round} measures {} ({left_s:.0} s left)",
                    names.join(", ")
                );
            }
        });
        let Some(ended) = ended else {
            // A round has ended since the run was last shown: show it with its rounds.
            let (at, round) = resolve.shown;
            if resolve.rounds > round && at.elapsed() >= REFRESH {
                resolve.shown = (Instant::now(), resolve.rounds);
                let read = results_file::read(&resolve.journal);
                if let (Ok(result), Some(run)) = (read, self.live.as_mut()) {
                    // Its sweep finished; the rounds after it go on.
                    let result = RunResult {
                        status: RunStatus::Finished,
                        ..result
                    };
                    run.analysis = Some(Analysis::of(&result));
                    run.data = RunData::replayed(result);
                }
            }
            return;
        };
        let read = results_file::read(&resolve.json);
        let further = MeasuredFurther {
            rounds: resolve.begun,
            took: resolve.started.elapsed(),
        };
        let Some(run) = self.live.as_mut() else {
            return;
        };
        run.resolving = None;
        // A resolve that began no round (refused, or resolved at once) measured nothing.
        if further.rounds > 0 {
            run.measured_further = Some(further);
        }
        if let Ok(mut result) = read {
            let found = warnings::attach(&mut result);
            run.analysis = Some(Analysis::of(&result));
            run.data = RunData::replayed(result);
            for warning in found {
                messages.warning(&warning);
            }
        }
        if let Some(failure) = ended.failure {
            messages.error(format!("Measuring further failed: {failure}"));
        } else if ended.stopped() {
            messages.note("Measuring further was stopped; the rounds it finished are kept.");
        }
    }

    /// Stops the resolve as Ctrl-C would: it keeps every round it finished.
    pub(super) fn cancel_resolve(&mut self) {
        if let Some(resolve) = self.live.as_mut().and_then(|run| run.resolving.as_mut()) {
            resolve.child.interrupt();
        }
    }
}
