//! The progress bar of `loaderbench run`: one bar over every batch of the run, its
//! message naming the config, repeat and epoch, and the time left as
//! [`time_left`](loaderbench_measure::time_left) estimates it (else at the bar's rate of
//! batches). Hidden when stderr is not a terminal or with `--quiet`; warnings are printed
//! above it.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loaderbench_measure::time_left::clock;

pub struct BatchBar {
    bar: ProgressBar,
    /// Where the run is: its config, repeat and epoch.
    place: String,
}

impl BatchBar {
    pub fn new(quiet: bool) -> BatchBar {
        let bar = if quiet {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
        } else {
            ProgressBar::new(0)
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} batches {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        // A hidden bar needs no ticker thread waking the run's process.
        if !quiet {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        BatchBar {
            bar,
            place: String::new(),
        }
    }

    /// While the dataset is opened: how many of its files are checked.
    pub fn checking(&self, checked: usize, total: usize) {
        self.bar.set_message(format!(
            "opening the dataset: {checked}/{total} files checked"
        ));
    }

    pub fn set_total(&self, batches: u64) {
        self.bar.set_length(batches);
    }

    pub fn at(&mut self, label: &str, repeat: usize, repeats: usize, epoch: usize, epochs: usize) {
        let epoch = if epoch == 0 {
            "warm-up".to_owned()
        } else {
            format!("epoch {epoch}/{epochs}")
        };
        let repeat = if repeats > 1 {
            format!(" · repeat {}/{repeats}", repeat + 1)
        } else {
            String::new()
        };
        self.place = format!("{label}{repeat} · {epoch}");
    }

    /// Batches done over the whole run, and the seconds left where they are estimated
    /// (else the bar's rate of batches says).
    pub fn set_position(&self, batches: u64, left_s: Option<f64>) {
        self.bar.set_position(batches);
        let eta = Some(self.bar.eta().as_secs_f64()).filter(|&eta| eta > 0.0);
        match left_s.or(eta) {
            Some(left) => {
                let left = clock(left);
                self.bar
                    .set_message(format!("{} · about {left} left", self.place));
            }
            None => self.bar.set_message(self.place.clone()),
        }
    }

    pub fn println(&self, line: String) {
        if self.bar.is_hidden() {
            errln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
