//! A tune as the window shows it: a budget bar (the time used of the budget, moving
//! while the tune runs), then a row per config of the search space as it is predicted
//! and measured: the model's projected time, the measured one, and where it stands.
//! Configs out of the search grey out, with the reason; when the tune ends, its trail
//! marks the best set.

use std::time::{Duration, Instant};

use egui::{RichText, Ui};

use loaderbench_analysis::tune::TuneEvent;
use loaderbench_measure::tune_trail::{Fate, TuneTrail};
use loaderbench_present::tables::seconds;

/// One config of the search space.
#[derive(Debug, Clone, Default, PartialEq)]
struct Row {
    anchor: bool,
    predicted_s: Option<f64>,
    measured_s: Option<f64>,
    /// Why it left the search, once it has.
    out: Option<String>,
    /// In the best set, once the tune has ended.
    best: bool,
}

impl Row {
    fn shown(&self) -> bool {
        self.anchor || self.predicted_s.is_some() || self.measured_s.is_some()
    }
}

/// A tune's progress.
#[derive(Debug, Clone)]
pub struct TuneProgress {
    labels: Vec<String>,
    budget: Duration,
    /// The epochs each config's seconds are projected over.
    planned_epochs: usize,
    started: Instant,
    /// Set when the tune ends, to freeze the bar.
    took: Option<Duration>,
    round: Option<usize>,
    rows: Vec<Row>,
}

impl TuneProgress {
    /// A tune of the configs named `labels` within `budget`, their times projected over
    /// `planned_epochs`, starting now.
    pub fn new(labels: Vec<String>, budget: Duration, planned_epochs: usize) -> TuneProgress {
        let rows = vec![Row::default(); labels.len()];
        TuneProgress {
            labels,
            budget,
            planned_epochs,
            started: Instant::now(),
            took: None,
            round: None,
            rows,
        }
    }

    pub fn apply(&mut self, event: &TuneEvent) {
        match event {
            TuneEvent::Anchors { configs } => {
                for &config in configs {
                    if let Some(row) = self.rows.get_mut(config) {
                        row.anchor = true;
                    }
                }
            }
            TuneEvent::Predicted { config, seconds } => {
                if let Some(row) = self.rows.get_mut(*config) {
                    row.predicted_s = Some(*seconds);
                }
            }
            TuneEvent::Round { round, .. } => self.round = Some(*round),
            TuneEvent::Measured {
                config, seconds, ..
            } => {
                if let Some(row) = self.rows.get_mut(*config) {
                    row.measured_s = Some(*seconds);
                }
            }
            TuneEvent::Eliminated { config, reason } => {
                if let Some(row) = self.rows.get_mut(*config) {
                    row.out = Some(reason.clone());
                }
            }
            TuneEvent::Reinstated { config } => {
                if let Some(row) = self.rows.get_mut(*config) {
                    row.out = None;
                }
            }
            TuneEvent::Warning { .. } => {}
        }
    }

    /// The tune ended; `trail` (when its results came back) marks the best set.
    pub fn finish(&mut self, trail: Option<&TuneTrail>) {
        self.took = Some(self.started.elapsed());
        for config in trail.map_or(&[][..], |t| t.configs.as_slice()) {
            if let Some(row) = self.rows.get_mut(config.config) {
                row.best = config.fate == Fate::Best;
                row.measured_s = config.measured_s.or(row.measured_s);
                if row.best {
                    row.out = None;
                }
            }
        }
    }

    pub fn is_running(&self) -> bool {
        self.took.is_none()
    }

    /// The share of the budget used, 0 to 1.
    pub fn used(&self) -> f32 {
        let used = self.took.unwrap_or_else(|| self.started.elapsed());
        (used.as_secs_f32() / self.budget.as_secs_f32().max(1e-3)).min(1.0)
    }

    /// How many configs have been measured so far.
    pub fn measured(&self) -> usize {
        self.rows
            .iter()
            .filter(|row| row.measured_s.is_some())
            .count()
    }

    /// The labels of the configs out of the search, in grid order.
    pub fn eliminated(&self) -> Vec<&str> {
        self.rows
            .iter()
            .zip(&self.labels)
            .filter(|(row, _)| row.out.is_some())
            .map(|(_, label)| label.as_str())
            .collect()
    }

    /// The status line: `Tuning: round 2` or `Tuned in 48 s`.
    pub fn status(&self) -> String {
        match (self.took, self.round) {
            (Some(took), _) => format!("Tuned in {:.0} s", took.as_secs_f64()),
            (None, Some(round)) => format!("Tuning: round {round}"),
            (None, None) => "Tuning: starting".to_owned(),
        }
    }

    pub fn draw(&self, ui: &mut Ui) {
        let used = self.took.unwrap_or_else(|| self.started.elapsed());
        ui.add(egui::ProgressBar::new(self.used()).text(format!(
            "{:.0} s of the {:.0} s budget",
            used.as_secs_f64(),
            self.budget.as_secs_f64()
        )));
        ui.weak(format!(
            "Seconds for the {} planned epochs: predicted from the anchors, then measured.",
            self.planned_epochs
        ));
        egui::Grid::new("tune_rows").striped(true).show(ui, |ui| {
            for heading in ["config", "predicted", "measured", "standing"] {
                ui.label(RichText::new(heading).strong());
            }
            ui.end_row();
            for (row, label) in self.rows.iter().zip(&self.labels) {
                if !row.shown() {
                    continue;
                }
                let standing = match (&row.out, row.best) {
                    (_, true) => "best set".to_owned(),
                    (Some(reason), false) => format!("out: {reason}"),
                    (None, false) if row.measured_s.is_some() => "in the search".to_owned(),
                    (None, false) => "predicted".to_owned(),
                };
                let name = if row.anchor {
                    format!("{label} (anchor)")
                } else {
                    label.clone()
                };
                let cells = [
                    name,
                    seconds(row.predicted_s),
                    seconds(row.measured_s),
                    standing,
                ];
                for cell in cells {
                    let text = RichText::new(cell);
                    ui.label(if row.out.is_some() { text.weak() } else { text });
                }
                ui.end_row();
            }
        });
    }
}
