//! Helpers the GUI tests share.

use std::time::{Duration, Instant};

use egui_kittest::Harness;
use loaderbench::gui::App;

/// Steps the harness until `done` holds, failing after `limit`.
pub fn step_until(harness: &mut Harness<'_, App>, limit: Duration, done: impl Fn(&App) -> bool) {
    let start = Instant::now();
    while !done(harness.state()) {
        assert!(
            start.elapsed() < limit,
            "timed out; messages: {:?}",
            harness.state().messages()
        );
        harness.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    harness.run_steps(2);
}
