//! Pacing the window around measured epochs. The app measures in a child process
//! ([`ChildRun`](crate::bench::child::ChildRun)), which waits before each epoch until
//! [`settle`] returns: by then the window has taken every event the run sent, drawn
//! them, and its threads (the software renderer's included) have stopped using the CPU,
//! so drawing never competes with a measured epoch. While an epoch runs the window
//! redraws only when the run reports something that ends an epoch or a config, and for
//! the progress line of long epochs no more than [`LONG_EPOCH_FRAME_INTERVAL`] apart.

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use crate::bench::{Event, meter};

/// The longest the window may take to take the run's events before an epoch starts
/// anyway (a hidden window draws no frames).
const DRAIN_LIMIT: Duration = Duration::from_millis(300);
/// The longest the window's threads may keep the CPU busy before an epoch starts anyway.
const QUIET_LIMIT: Duration = Duration::from_millis(300);

/// An epoch shorter than this is never interrupted by a frame; a longer one gets a
/// progress frame this often.
pub const LONG_EPOCH_FRAME_INTERVAL: Duration = Duration::from_secs(1);

/// Waits until the window has taken every queued event (`events` is the run's queue
/// that the frames drain) and this process has gone quiet, each within its limit.
pub fn settle(ctx: &egui::Context, events: &Receiver<Event>) {
    ctx.request_repaint();
    let deadline = Instant::now() + DRAIN_LIMIT;
    while !events.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Quiet for longer than a display frame, so a second frame egui asks for right
    // after the first (a grid sizing its columns, a frame waiting for vsync) is seen.
    meter::wait_for_quiet(QUIET_LIMIT);
}

/// Whether an event changes what the window shows between epochs: batch progress and
/// worker start-ups arrive during an epoch and wait for the next frame.
pub fn redraws_at_once(event: &Event) -> bool {
    !matches!(event, Event::Batch { .. } | Event::WorkerReady { .. })
}

/// When the next progress frame is due while an epoch started at `since` runs.
pub fn next_progress_frame(since: Instant) -> Duration {
    let running = since.elapsed();
    if running < LONG_EPOCH_FRAME_INTERVAL {
        LONG_EPOCH_FRAME_INTERVAL - running
    } else {
        LONG_EPOCH_FRAME_INTERVAL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_epochs_see_no_frame_and_long_ones_one_a_second() {
        let started = Instant::now();
        assert!(next_progress_frame(started) > Duration::from_millis(900));
        let long_ago = Instant::now() - Duration::from_secs(5);
        assert_eq!(next_progress_frame(long_ago), LONG_EPOCH_FRAME_INTERVAL);
    }

    #[test]
    fn only_events_between_epochs_redraw_at_once() {
        let warning = Event::Warning {
            config: None,
            message: String::new(),
        };
        assert!(redraws_at_once(&warning));
        let started = Event::ConfigStarted {
            config: 0,
            repeat: 0,
        };
        assert!(redraws_at_once(&started));
    }
}
