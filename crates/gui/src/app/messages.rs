//! The message bar's part: the notes and errors the window shows, newest first, at most
//! a handful, the run's warnings folded into one line that expands, each dismissed on
//! its own.

use egui::{RichText, Ui};

use crate::actions::Action;

/// How a run's warnings start in the message bar, which folds them into one line.
const WARNING: &str = "warning: ";

/// How many messages the bar keeps; the oldest goes first.
const KEPT: usize = 6;

/// A message in the window: an error to act on, or a note of something done.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub error: bool,
    pub text: String,
}

/// The messages shown in the window.
#[derive(Debug, Default)]
pub(super) struct Messages {
    shown: Vec<Message>,
}

impl Messages {
    pub(super) fn all(&self) -> &[Message] {
        &self.shown
    }

    pub(super) fn is_empty(&self) -> bool {
        self.shown.is_empty()
    }

    pub(super) fn note(&mut self, text: impl Into<String>) {
        self.push(false, text.into());
    }

    pub(super) fn error(&mut self, text: impl Into<String>) {
        self.push(true, text.into());
    }

    /// A warning from a run, folded with the run's other warnings.
    pub(super) fn warning(&mut self, text: &str) {
        self.note(format!("{WARNING}{text}"));
    }

    /// Drops the errors, which a new run or opened results leave behind.
    pub(super) fn clear_errors(&mut self) {
        self.shown.retain(|m| !m.error);
    }

    pub(super) fn dismiss(&mut self, index: usize) {
        if index < self.shown.len() {
            self.shown.remove(index);
        }
    }

    fn push(&mut self, error: bool, text: String) {
        self.shown.retain(|m| m.text != text);
        self.shown.push(Message { error, text });
        if self.shown.len() > KEPT {
            self.shown.remove(0);
        }
    }

    /// Notes and errors one per line, newest first; the run's warnings folded into one
    /// line that expands, so they leave room for the results.
    pub(super) fn ui(&self, ui: &mut Ui, actions: &mut Vec<Action>) {
        let (warnings, others): (Vec<_>, Vec<_>) = self
            .shown
            .iter()
            .enumerate()
            .rev()
            .partition(|(_, m)| m.text.starts_with(WARNING));
        for (index, message) in others {
            message_line(ui, index, message, actions);
        }
        if warnings.is_empty() {
            return;
        }
        ui.horizontal(|ui| {
            if ui.small_button("×").on_hover_text("Dismiss all").clicked() {
                // Newest first, so each removal leaves the earlier indices in place.
                actions.extend(warnings.iter().map(|(i, _)| Action::DismissMessage(*i)));
            }
            let title = format!(
                "{} from the run",
                loaderbench_engine::counted(warnings.len(), "warning")
            );
            let title = RichText::new(title).color(ui.visuals().warn_fg_color);
            egui::CollapsingHeader::new(title)
                .id_salt("run_warnings")
                .show(ui, |ui| {
                    for (index, message) in &warnings {
                        message_line(ui, *index, message, actions);
                    }
                });
        });
    }
}

/// One message with its dismiss button.
fn message_line(ui: &mut Ui, index: usize, message: &Message, actions: &mut Vec<Action>) {
    ui.horizontal(|ui| {
        if ui.small_button("×").on_hover_text("Dismiss").clicked() {
            actions.push(Action::DismissMessage(index));
        }
        let text = RichText::new(message.text.trim_start_matches(WARNING));
        let text = if message.error {
            text.color(ui.visuals().error_fg_color)
        } else {
            text
        };
        ui.add(egui::Label::new(text).wrap());
    });
}
