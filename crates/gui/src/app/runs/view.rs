//! The runs drawn: the run bar (Run or Cancel, Tune, Measure further and their budget,
//! with the budget the open verdicts ask for on offer, the plan's size, how the run
//! stands, its progress), the tune's progress, the live
//! plots with the timeline, the results table, and the analysis of an ended run.

use egui::{Rect, RichText, Ui};

use crate::actions::Action;
use crate::analysis_view;
use crate::charts;
use crate::commands::Command;
use crate::compare_view;
use crate::live::Phase;
use crate::plots;
use crate::table_view;
use loaderbench_engine::plan::Plan;
use loaderbench_present::views::ChartId;

use super::Runs;

/// The longest budget the field takes: a day.
const MOST_BUDGET_S: u32 = 86_400;

/// Why Run and Tune are greyed out.
const FIX_FIELDS: &str = "Fix the fields marked in the side panel first";

impl Runs {
    /// The run bar: Cancel while something runs, else Run, Tune and the budget (enabled
    /// when the preset is `ready`); the `plan`'s size; how the run stands.
    pub(in super::super) fn run_bar(
        &self,
        ui: &mut Ui,
        plan: Option<&Plan>,
        ready: bool,
        actions: &mut Vec<Action>,
    ) {
        ui.horizontal(|ui| {
            if self.is_running() {
                if ui.add(Command::Cancel.button(ui.ctx())).clicked() {
                    actions.push(Command::Cancel.action());
                }
            } else {
                self.start_buttons(ui, ready, actions);
            }
            // While a run goes on, its progress line says as much (and needs the room).
            if let Some(plan) = plan.filter(|_| !self.is_running()) {
                ui.label(
                    RichText::new(format!(
                        "{} config(s) × {} repeat(s) × {} epoch(s)",
                        plan.configs.len(),
                        plan.preset.repeats,
                        plan.preset.epochs
                    ))
                    .weak(),
                );
            }
            if let Some(status) = self.status() {
                ui.separator();
                // Cut to the window with `…` (whole on hover): a line wider than the
                // window would widen the results view below past it.
                ui.add(egui::Label::new(RichText::new(status).monospace()).truncate());
            }
        });
        if let Some(run) = &self.live
            && run.data.is_running()
            && run.data.progress.batches_total > 0
        {
            let p = &run.data.progress;
            ui.add(
                egui::ProgressBar::new(p.batches_done as f32 / p.batches_total as f32)
                    .desired_height(6.0),
            );
        }
    }

    fn start_buttons(&self, ui: &mut Ui, ready: bool, actions: &mut Vec<Action>) {
        let run = ui
            .add_enabled(ready, Command::Run.button(ui.ctx()))
            .on_disabled_hover_text(FIX_FIELDS);
        if run.clicked() {
            actions.push(Command::Run.action());
        }
        let tune = ui
            .add_enabled(ready, egui::Button::new("Tune"))
            .on_hover_text("Find the best settings within the budget")
            .on_disabled_hover_text(FIX_FIELDS);
        if tune.clicked() {
            actions.push(Action::StartTune);
        }
        let further = ui
            .add_enabled(
                self.can_measure_further(),
                egui::Button::new("Measure further"),
            )
            .on_hover_text(
                "Measure the configs the open verdicts hinge on, within the budget, \
                 appending to the run's journal",
            )
            .on_disabled_hover_text(
                "For a finished run, measured here or opened from its journal, whose \
                 recommendation is not resolved",
            );
        if further.clicked() {
            actions.push(Action::MeasureFurther);
        }
        let mut budget = self.tune_budget_s;
        let label = ui.label("budget s");
        let field = ui
            .add(egui::DragValue::new(&mut budget).range(1..=MOST_BUDGET_S))
            .labelled_by(label.id);
        if field.changed() {
            actions.push(Action::TuneBudget(budget));
        }
        let asked = (self
            .asked_to_measure_s()
            .map(|asked| asked.min(MOST_BUDGET_S)))
        .filter(|&asked| asked != self.tune_budget_s && self.can_measure_further());
        if let Some(asked) = asked {
            let offer = ui
                .small_button(format!("{asked} s, as the verdicts ask"))
                .on_hover_text(
                    "How long the open verdicts reckon measuring further takes to settle \
                     them, from what their configs took: sets the budget",
                );
            if offer.clicked() {
                actions.push(Action::TuneBudget(asked));
            }
        }
    }

    /// How the tune or the shown run stands, for the run bar.
    fn status(&self) -> Option<String> {
        if let Some(tune) = &self.tune {
            return Some(tune.progress.status());
        }
        let run = self.live.as_ref()?;
        let resolving = run.resolving.as_ref().filter(|r| r.is_running());
        Some(match &run.data.phase {
            _ if resolving.is_some() => resolving.map(|r| r.status.clone()).unwrap_or_default(),
            Phase::Running => run.data.progress_line(run.elapsed()),
            Phase::Finished => {
                let finished = if run.saved {
                    "Finished (a saved run)".to_owned()
                } else {
                    format!("Finished in {:.1} s", run.elapsed().as_secs_f64())
                };
                match run.measured_further {
                    Some(further) => format!(
                        "{finished}, then measured further: {} round{} in {:.0} s",
                        further.rounds,
                        if further.rounds == 1 { "" } else { "s" },
                        further.took.as_secs_f64()
                    ),
                    None => finished,
                }
            }
            Phase::Cancelled => "Cancelled".to_owned(),
            Phase::Failed(_) => "Failed (see the message below)".to_owned(),
        })
    }

    /// The tune's progress, when there is a tune; false while it runs, when nothing
    /// else is drawn below it.
    pub(in super::super) fn tune_ui(&self, ui: &mut Ui) -> bool {
        let Some(tune) = &self.tune else {
            return true;
        };
        ui.heading("Tune");
        tune.progress.draw(ui);
        ui.separator();
        !tune.is_running()
    }

    /// What the results view says where there is nothing to plot: before the first run,
    /// or after one that ended before it measured an epoch.
    pub(in super::super) fn placeholder_ui(&self, ui: &mut Ui) {
        let run = Command::Run.shortcut_text(ui.ctx());
        let ended = self.live.as_ref().map(|live| &live.data.phase);
        let (said, then) = match ended {
            Some(Phase::Failed(_)) => (
                "Nothing was measured: the run failed before its first epoch.".to_owned(),
                format!("The message below says why; fix it on the left, then press Run ({run})."),
            ),
            Some(Phase::Cancelled) => (
                "Nothing was measured: the run was cancelled before its first epoch.".to_owned(),
                format!("Press Run ({run}) to start it again."),
            ),
            _ => (
                format!("Set up a run on the left, then press Run ({run}), or Tune to find the best settings within the budget."),
                "First-batch latency, epoch times and each batch's wait appear here as they are measured.".to_owned(),
            ),
        };
        ui.add_space(40.0);
        ui.vertical_centered(|ui| {
            ui.label(RichText::new(said).size(16.0));
            ui.label(RichText::new(then).weak());
        });
    }

    /// The plots, the timeline with its config and the results table of the shown run:
    /// each chart where it was drawn, and the plots' area; `None` before the first run
    /// and after one that measured nothing.
    pub(in super::super) fn plots_ui(
        &self,
        ui: &mut Ui,
        actions: &mut Vec<Action>,
    ) -> Option<(Vec<(ChartId, Rect)>, Rect)> {
        let data = &self.live.as_ref()?.data;
        if data.ended_empty() {
            return None;
        }
        let mut drawn = Vec::new();
        let mut plots = ui.columns(2, |columns| {
            for (column, chart) in [charts::first_batch(data), charts::epoch_times(data)]
                .iter()
                .enumerate()
            {
                drawn.push((chart.id, plots::draw(&mut columns[column], chart, 175.0)));
            }
            columns[0].min_rect().union(columns[1].min_rect())
        });
        if let Some(chart) = charts::rank_spread(data) {
            ui.add_space(4.0);
            let rect = plots::draw(ui, &chart, 110.0);
            drawn.push((chart.id, rect));
            plots = plots.union(rect);
        }
        ui.add_space(4.0);
        let selected = self.timeline_config(data);
        timeline_choice(ui, &data.labels, selected, actions);
        let timeline = charts::timeline(data, selected);
        drawn.push((timeline.id, plots::draw(ui, &timeline, 80.0)));
        ui.add_space(8.0);
        self.table_ui(ui, selected, actions);
        Some((drawn, plots))
    }

    fn table_ui(&self, ui: &mut Ui, selected: usize, actions: &mut Vec<Action>) {
        let Some(result) = self.result() else {
            return;
        };
        ui.horizontal(|ui| {
            ui.label(RichText::new("Results").strong().size(15.0));
            if ui.button("Copy as Markdown").clicked() {
                actions.push(Action::CopyMarkdown);
            }
        });
        table_view::draw(ui, result, selected, actions);
        compare_view::draw(ui, result);
        ui.label(
            RichText::new(format!("{} · {}", result.dataset, result.machine.summary()))
                .weak()
                .small(),
        );
    }

    /// Whether the shown run has ended with an analysis to draw.
    pub(in super::super) fn has_analysis(&self) -> bool {
        self.analysis().is_some() && self.result().is_some()
    }

    /// The analysis of the shown run, when it has one.
    pub(in super::super) fn analysis_ui(
        &self,
        ui: &mut Ui,
        actions: &mut Vec<Action>,
    ) -> Option<analysis_view::Drawn> {
        let run = self.live.as_ref()?;
        let (Some(analysis), Some(result)) = (&run.analysis, &run.data.result) else {
            return None;
        };
        let comparison = run
            .comparison
            .as_ref()
            .map(|(name, changes)| analysis_view::Comparison { name, changes });
        let shown = analysis_view::Shown {
            result,
            analysis,
            comparison,
            stages_per_epoch: self.stages_per_epoch,
        };
        Some(analysis_view::draw(ui, shown, actions))
    }
}

/// The pick list of the config whose batches the timeline shows.
fn timeline_choice(ui: &mut Ui, labels: &[String], selected: usize, actions: &mut Vec<Action>) {
    ui.horizontal(|ui| {
        let label = ui.label("timeline config");
        egui::ComboBox::from_id_salt("timeline_config")
            .selected_text(labels.get(selected).map_or("", String::as_str))
            .show_ui(ui, |ui| {
                for (index, label) in labels.iter().enumerate() {
                    if ui.selectable_label(index == selected, label).clicked() {
                        actions.push(Action::SelectConfig(index));
                    }
                }
            })
            .response
            .labelled_by(label.id);
    });
}
