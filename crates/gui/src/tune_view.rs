//! A tune as the window shows it: a budget bar (the time used of the budget, moving while
//! the tune runs), then a row per config of the search space as it is predicted and
//! measured: the model's projected time, the measured one, and where it stands. Configs
//! out of the rounds (left the search, or set aside in the slower half) grey out, saying
//! which; when the tune ends, each row says what its trail says became of the config (in
//! the best set, out after a round and why, or not measured and why), as the CLI's trail
//! table does.

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
    /// Why it is out of the rounds, once it is: `out: slower than …` or `set aside: in
    /// the slower half`.
    out: Option<String>,
    /// What became of it, once the tune has ended (its trail's word).
    fate: Option<Fate>,
}

impl Row {
    fn shown(&self) -> bool {
        self.anchor || self.predicted_s.is_some() || self.measured_s.is_some()
    }

    /// Where the config stands: its fate once the tune has ended, else whether it is
    /// still in the search, predicted, or (an anchor, whose question's turn has not come)
    /// still to be measured.
    fn standing(&self) -> String {
        match (&self.fate, &self.out) {
            (Some(fate), _) => fate.describe(),
            (None, Some(out)) => out.clone(),
            (None, None) if self.measured_s.is_some() => "in the search".to_owned(),
            (None, None) if self.predicted_s.is_some() => "predicted".to_owned(),
            (None, None) => "to be measured".to_owned(),
        }
    }

    /// Whether the row greys out: out of the search, or of the best set once it ended.
    fn faded(&self) -> bool {
        match &self.fate {
            Some(fate) => *fate != Fate::Best,
            None => self.out.is_some(),
        }
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
            // An anchor's prediction is the model fitted to it: the trail gives none, and
            // neither do its rows.
            TuneEvent::Predicted { config, seconds } => {
                if let Some(row) = self.rows.get_mut(*config).filter(|row| !row.anchor) {
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
                    row.out = Some(format!("out: {reason}"));
                }
            }
            TuneEvent::SetAside { config } => {
                if let Some(row) = self.rows.get_mut(*config) {
                    row.out = Some("set aside: in the slower half".to_owned());
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

    /// The tune ended; `trail` (when its results came back) says what became of each
    /// config.
    pub fn finish(&mut self, trail: Option<&TuneTrail>) {
        self.took = Some(self.started.elapsed());
        for config in trail.map_or(&[][..], |t| t.configs.as_slice()) {
            if let Some(row) = self.rows.get_mut(config.config) {
                row.fate = Some(config.fate.clone());
                row.measured_s = config.measured_s.or(row.measured_s);
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

    /// The labels of the configs out of the rounds (left the search or set aside), in
    /// grid order.
    pub fn out_of_the_rounds(&self) -> Vec<&str> {
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
                let name = if row.anchor {
                    format!("{label} (anchor)")
                } else {
                    label.clone()
                };
                let cells = [
                    name,
                    seconds(row.predicted_s),
                    seconds(row.measured_s),
                    row.standing(),
                ];
                for cell in cells {
                    let text = RichText::new(cell);
                    ui.label(if row.faded() { text.weak() } else { text });
                }
                ui.end_row();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use loaderbench_measure::tune_trail::{TuneStop, TunedConfig};

    use super::*;

    /// While the tune runs, rows say whether each config is in the search; once it has
    /// ended, what its trail says: the window's last word is the CLI's. It said "in the
    /// search" and "predicted" of configs the search would never measure again.
    #[test]
    fn an_ended_tune_s_rows_say_what_the_trail_says_of_each_config() {
        let labels = ["nw=0", "nw=2", "nw=4"].map(str::to_owned).to_vec();
        let mut progress = TuneProgress::new(labels, Duration::from_secs(60), 50);
        progress.apply(&TuneEvent::Anchors {
            configs: vec![0, 1],
        });
        for (config, seconds) in [(0, 2.1), (2, 3.0)] {
            progress.apply(&TuneEvent::Predicted { config, seconds });
        }
        assert_eq!(
            progress.rows[0].predicted_s, None,
            "an anchor's is no prediction"
        );
        assert_eq!(progress.rows[2].predicted_s, Some(3.0));
        progress.apply(&TuneEvent::Measured {
            config: 0,
            round: 0,
            seconds: 2.0,
        });
        let standings = |progress: &TuneProgress| -> Vec<String> {
            progress.rows.iter().map(Row::standing).collect()
        };
        // An anchor the anchors' round ended before: not predicted, still to be measured
        // (it read "predicted").
        assert_eq!(standings(&progress)[1], "to be measured");
        progress.apply(&TuneEvent::Measured {
            config: 1,
            round: 1,
            seconds: 3.0,
        });
        assert_eq!(
            standings(&progress),
            ["in the search", "in the search", "predicted"]
        );
        // Halving sets a config aside, which is not the same as leaving: it may come back.
        progress.apply(&TuneEvent::SetAside { config: 1 });
        assert_eq!(standings(&progress)[1], "set aside: in the slower half");
        assert_eq!(progress.out_of_the_rounds(), ["nw=2"]);
        progress.apply(&TuneEvent::Reinstated { config: 1 });
        assert_eq!(standings(&progress)[1], "in the search");
        let fates = [
            Fate::Best,
            Fate::Eliminated {
                round: 1,
                reason: "slower than nw=0 beyond the noise".to_owned(),
            },
            Fate::stopped_first(),
        ];
        let trail = TuneTrail {
            budget_s: 60.0,
            used_s: 60.0,
            stop: TuneStop::Budget,
            anchors: vec![0, 1],
            rounds: 2,
            configs: fates
                .iter()
                .enumerate()
                .map(|(config, fate)| TunedConfig {
                    config,
                    predicted_s: None,
                    measured_s: None,
                    rounds: 1,
                    fate: fate.clone(),
                })
                .collect(),
        };
        progress.finish(Some(&trail));
        assert_eq!(
            standings(&progress),
            [
                "best set",
                "out after round 1: slower than nw=0 beyond the noise",
                "not measured: the search stopped first"
            ]
        );
        let faded: Vec<bool> = progress.rows.iter().map(Row::faded).collect();
        assert_eq!(faded, [false, true, true]);
    }
}
