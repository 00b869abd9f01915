//! Pacing the window around measured epochs. The app measures in a child process
//! ([`ChildRun`](crate::bench::child::ChildRun)) that stops at a gate before each epoch
//! until [`Pacer::settle`] returns. Once the run has reached its first epoch the window
//! draws at most once every [`FRAME_INTERVAL`], and only at a gate (or in an epoch that
//! has run that long, or outside epochs): a gate that falls due lets the window take the
//! run's events and draw them, then waits until this process (the software renderer's
//! threads included) has gone quiet; every other gate opens at once. A frame asked for
//! at any other time (the run's events, egui's follow-up frames for new widgets, grid
//! sizes and scroll-bar fades) waits at the top of the frame in [`Pacer::wait_to_draw`].
//! So drawing never competes with a measured epoch, and most epochs start after the same
//! short rest as in `loaderbench run`: a frame under Mesa's software renderer takes
//! 50-60 ms of both cores, and a rest of 60 ms or more before an epoch made the first
//! batch of four or more starting workers 1.4-2.1× slower (measured on a 2-core VM,
//! rests alternated round by round in one process).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use crate::bench::{Event, meter};

/// The longest the window may take to take the run's events at a drawing gate before
/// the epoch starts anyway (a hidden window draws no frames).
const DRAIN_LIMIT: Duration = Duration::from_millis(300);
/// The longest the window's threads may keep the CPU busy before an epoch starts anyway.
const QUIET_LIMIT: Duration = Duration::from_millis(300);
/// How long a frame may still be drawing after it started: a gate this soon after a
/// frame waits for this process to go quiet.
const FRAME_DRAWS_FOR: Duration = Duration::from_millis(300);

/// While a run measures, the window draws at most this often.
pub const FRAME_INTERVAL: Duration = Duration::from_secs(1);

/// The window's side of the epoch gate, shared by the thread that answers the child's
/// gates, the thread that passes its events on, and the frames. Cloning shares it.
#[derive(Clone, Default)]
pub struct Pacer {
    shared: Arc<(Mutex<Pace>, Condvar)>,
}

#[derive(Default)]
struct Pace {
    /// The run has reached its first gate and not yet ended: frames are paced.
    paced: bool,
    /// A gate is letting the window draw the run's events.
    drawing: bool,
    /// When the epoch being measured was let start; `None` between epochs.
    epoch_since: Option<Instant>,
    /// When the last frame was let draw.
    last_frame: Option<Instant>,
}

impl Pace {
    /// When the next frame may draw; `None` when it may draw now.
    fn next_frame(&self, now: Instant) -> Option<Instant> {
        if !self.paced || self.drawing {
            return None;
        }
        let mut due = self.last_frame.map_or(now, |at| at + FRAME_INTERVAL);
        if let Some(since) = self.epoch_since {
            due = due.max(since + FRAME_INTERVAL);
        }
        (due > now).then_some(due)
    }
}

impl Pacer {
    /// The child waits before an epoch: when a frame is due the window takes every queued
    /// event (`events` is the run's queue that the frames drain) and draws, then this
    /// process goes quiet, each within its limit; otherwise it opens at once, after the
    /// quiet if a frame may still be drawing. No frame starts from its end until the
    /// epoch has ended.
    pub fn settle(&self, ctx: &egui::Context, events: &Receiver<Event>) {
        let now = Instant::now();
        let (draw, recent_frame) = {
            let mut pace = self.lock();
            if !pace.paced {
                // The window has just drawn the run's start; counting the interval from
                // here keeps the first drawing gate off the run's first epoch, which
                // would otherwise follow the longer rest in every run.
                pace.paced = true;
                pace.last_frame = Some(now);
            }
            pace.epoch_since = None;
            let draw = pace.next_frame(now).is_none();
            pace.drawing = draw;
            let recent = pace.last_frame.is_some_and(|at| now - at < FRAME_DRAWS_FOR);
            (draw, recent)
        };
        if draw {
            self.notify();
            ctx.request_repaint();
            let deadline = Instant::now() + DRAIN_LIMIT;
            while !events.is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        // Closed before the quiet, so that no frame can start between it and the epoch;
        // the frame that took the events may still be drawing, and the quiet covers it.
        {
            let mut pace = self.lock();
            pace.drawing = false;
            pace.epoch_since = Some(Instant::now());
        }
        if draw || recent_frame {
            meter::wait_for_quiet(QUIET_LIMIT);
        }
        self.lock().epoch_since = Some(Instant::now());
    }

    /// Passes on what the run reported: an epoch's end lets a due frame draw, and the
    /// run's end stops the pacing.
    pub fn reported(&self, event: &Event) {
        if event.final_result().is_some() {
            self.run_ended();
        } else if matches!(
            event,
            Event::EpochFinished { .. } | Event::ConfigFinished { .. }
        ) {
            self.epoch_ended();
        }
    }

    fn epoch_ended(&self) {
        self.lock().epoch_since = None;
        self.notify();
    }

    fn run_ended(&self) {
        *self.lock() = Pace::default();
        self.notify();
    }

    /// Called at the top of every frame: returns when the frame may draw.
    pub fn wait_to_draw(&self) {
        let (_, woken) = &*self.shared;
        let mut pace = self.lock();
        loop {
            let now = Instant::now();
            let Some(due) = pace.next_frame(now) else {
                if pace.paced {
                    pace.last_frame = Some(now);
                }
                return;
            };
            pace = match woken.wait_timeout(pace, due - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// How soon the window should draw again on its own (for the progress line); `None`
    /// when the run is not paced.
    pub fn next_frame_in(&self) -> Option<Duration> {
        let pace = self.lock();
        if !pace.paced {
            return None;
        }
        let now = Instant::now();
        Some(pace.next_frame(now).map_or(Duration::ZERO, |due| due - now))
    }

    fn notify(&self) {
        self.shared.1.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, Pace> {
        // The state is plain flags and instants; what a panicking thread left is valid.
        self.shared
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Whether an event changes what the window shows between epochs: batch progress and
/// worker start-ups arrive during an epoch and wait for the next frame.
pub fn redraws_at_once(event: &Event) -> bool {
    !matches!(event, Event::Batch { .. } | Event::WorkerReady { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paced(pacer: &Pacer, last_frame: Instant, epoch_since: Option<Instant>) {
        let mut pace = pacer.lock();
        pace.paced = true;
        pace.last_frame = Some(last_frame);
        pace.epoch_since = epoch_since;
    }

    fn waits(pacer: &Pacer) -> Duration {
        let started = Instant::now();
        pacer.wait_to_draw();
        started.elapsed()
    }

    #[test]
    fn before_the_first_gate_frames_draw_at_once() {
        let pacer = Pacer::default();
        assert!(waits(&pacer) < Duration::from_millis(100));
        assert_eq!(pacer.next_frame_in(), None);
    }

    #[test]
    fn the_first_gate_opens_without_a_frame_and_the_interval_counts_from_it() {
        let pacer = Pacer::default();
        let (_, events) = crossbeam_channel::unbounded();
        pacer.settle(&egui::Context::default(), &events);
        assert!(!pacer.lock().drawing);
        let due = pacer.next_frame_in().unwrap();
        assert!(due > FRAME_INTERVAL - Duration::from_millis(400), "{due:?}");
    }

    #[test]
    fn a_paced_run_draws_at_most_once_an_interval() {
        let pacer = Pacer::default();
        paced(&pacer, Instant::now() - FRAME_INTERVAL, None);
        assert!(waits(&pacer) < Duration::from_millis(100), "due: draws");
        assert!(pacer.next_frame_in().unwrap() > Duration::from_millis(900));
        let ender = pacer.clone();
        let ends = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            ender.run_ended();
        });
        let waited = waits(&pacer);
        ends.join().unwrap();
        assert!(
            waited >= Duration::from_millis(140) && waited < FRAME_INTERVAL,
            "the next frame waits for the interval or the run's end: {waited:?}"
        );
        assert_eq!(pacer.next_frame_in(), None);
    }

    #[test]
    fn an_epoch_shorter_than_the_interval_sees_no_frame() {
        let pacer = Pacer::default();
        let long_ago = Instant::now() - 5 * FRAME_INTERVAL;
        paced(&pacer, long_ago, Some(Instant::now()));
        let due = pacer.next_frame_in().unwrap();
        assert!(due > Duration::from_millis(900), "{due:?}");
        paced(&pacer, long_ago, Some(long_ago));
        assert_eq!(
            pacer.next_frame_in(),
            Some(Duration::ZERO),
            "a long epoch's progress"
        );
    }

    #[test]
    fn a_due_frame_waits_for_the_epoch_to_end() {
        let pacer = Pacer::default();
        paced(
            &pacer,
            Instant::now() - 5 * FRAME_INTERVAL,
            Some(Instant::now()),
        );
        let ender = pacer.clone();
        let finished = Event::EpochFinished {
            config: 0,
            repeat: 0,
            result: Box::new(crate::results::EpochResult::from_batches(
                1,
                0.1,
                Vec::new(),
                Vec::new(),
            )),
        };
        let ends = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            ender.reported(&finished);
        });
        let waited = waits(&pacer);
        ends.join().unwrap();
        assert!(
            waited >= Duration::from_millis(140) && waited < FRAME_INTERVAL,
            "{waited:?}"
        );
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
