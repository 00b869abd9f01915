//! The baseline form's part: the name field, the saved baselines (read when a run ends
//! or one is saved, not every frame), saving the shown run as a baseline, and the row
//! that saves and compares, with the baselines and the other open runs as a pick list.

use egui::Ui;

use crate::actions::Action;
use loaderbench_analysis::baseline;
use loaderbench_measure::results::RunResult;

use super::messages::Messages;

/// The baseline name field and the saved baselines.
#[derive(Debug, Default)]
pub(super) struct BaselineForm {
    name: String,
    saved: Vec<String>,
}

impl BaselineForm {
    /// Reads the saved baselines' names again.
    pub(super) fn refresh(&mut self) {
        self.saved = baseline::names();
    }

    /// Saves `result` (the shown run's, if any) as the baseline called `name`.
    pub(super) fn save(&mut self, name: &str, result: Option<&RunResult>, messages: &mut Messages) {
        let Some(result) = result else {
            messages.error("Nothing to save yet: run a benchmark first.");
            return;
        };
        match baseline::save(name, result) {
            Ok(saved) => {
                self.refresh();
                messages.note(format!(
                    "Saved baseline `{name}`{}: {}",
                    saved.replacing(),
                    saved.path.display()
                ));
            }
            Err(err) => messages.error(format!("Could not save the baseline: {err}")),
        }
    }

    /// The name field with its save and compare buttons, and the baselines as a pick
    /// list that compares at a click: the saved ones, and the `open` runs after the
    /// first (each compared with the first).
    pub(super) fn ui(&mut self, ui: &mut Ui, open: &[String], actions: &mut Vec<Action>) {
        ui.horizontal_wrapped(|ui| {
            let label = ui.label("baseline");
            ui.add(
                egui::TextEdit::singleline(&mut self.name)
                    .hint_text("name")
                    .desired_width(140.0),
            )
            .labelled_by(label.id);
            let name = self.name.trim().to_owned();
            let has_name = !name.is_empty();
            if ui
                .add_enabled(has_name, egui::Button::new("Save as baseline"))
                .clicked()
            {
                actions.push(Action::SaveBaseline(name.clone()));
            }
            if ui
                .add_enabled(has_name, egui::Button::new("Compare with baseline"))
                .clicked()
            {
                actions.push(Action::CompareBaseline(name));
            }
            let others = open.get(1..).unwrap_or_default();
            if !self.saved.is_empty() || !others.is_empty() {
                self.pick_list(ui, others, actions);
            }
        });
    }

    fn pick_list(&self, ui: &mut Ui, others: &[String], actions: &mut Vec<Action>) {
        egui::ComboBox::from_label("baselines")
            .selected_text("compare with…")
            .show_ui(ui, |ui| {
                for baseline in &self.saved {
                    if ui.selectable_label(false, baseline).clicked() {
                        actions.push(Action::CompareBaseline(baseline.clone()));
                    }
                }
                for (index, run) in others.iter().enumerate() {
                    let text = format!("{run} (open run)");
                    if ui.selectable_label(false, text).clicked() {
                        actions.push(Action::CompareOpenRun(index + 1));
                    }
                }
            });
    }
}
