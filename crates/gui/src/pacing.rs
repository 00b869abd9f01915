//! Pacing the window around measured epochs. The app measures in a child process
//! ([`ChildRun`](loaderbench_measure::measuring_child::ChildRun)) that stops at a gate before each epoch
//! until [`Pacer::settle`] returns. Once the run has reached its first epoch the window
//! draws at most once every [`FRAME_INTERVAL`], and only at a gate (or in an epoch that
//! has run that long, or after [`MAX_FRAME_GAP`] without a gate): a gate where a frame
//! is due lets the window take the run's events and draw them, then waits until this
//! process (the software renderer's threads included) has gone quiet; every other gate
//! opens at once. A due frame waits for a gate before an epoch that starts no workers
//! and is not its repeat's first, for as long as [`MAX_FRAME_GAP`] allows: a rest
//! changes the first batch of starting workers most. A frame asked for at any other time
//! (the run's events, egui's follow-up frames for new widgets, grid sizes and scroll-bar
//! fades) waits at the top of the frame in [`Pacer::wait_to_draw`]. So drawing never
//! competes with a measured epoch, and most epochs start after the same short rest as in
//! `loaderbench run`: a frame under Mesa's software renderer took 50-60 ms of both
//! cores when this was measured (15-20 ms since, benches/window_frames.rs), and a rest
//! of 60 ms or more before an epoch made the first batch of four or more starting
//! workers 1.4-2.1× slower in 8 of 9 cases (measured on a 2-core VM, rests alternated
//! round by round in one process).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Runtime;
use loaderbench_measure::{Event, meter};

/// The longest the window may take to take the run's events at a drawing gate before
/// the epoch starts anyway (a hidden window draws no frames).
const DRAIN_LIMIT: Duration = Duration::from_millis(300);
/// The longest the window's threads may keep the CPU busy before an epoch starts anyway.
const QUIET_LIMIT: Duration = Duration::from_millis(300);
/// How long a frame may still be drawing after it started: a gate this soon after a
/// frame waits for this process to go quiet.
const FRAME_DRAWS_FOR: Duration = Duration::from_millis(300);

/// While a run measures, the window draws at most this often (once a second while a
/// frame under a software rasterizer cost 50-60 ms; twice since it costs 15-20 ms, with
/// the app still within the CLI's A/A band in benches/parity.rs).
pub const FRAME_INTERVAL: Duration = Duration::from_millis(500);
/// While a run measures, the window draws at least this often: at the next gate, else
/// between epochs (a config's set-up, the PyTorch runtime starting).
pub const MAX_FRAME_GAP: Duration = Duration::from_secs(2);

/// The window's side of the epoch gate, shared by the thread that answers the child's
/// gates, the thread that passes its events on, and the frames. Cloning shares it.
#[derive(Clone, Default)]
pub struct Pacer {
    shared: Arc<(Mutex<Pace>, Condvar)>,
    /// Per config of the plan, what its epochs start.
    starts: Arc<Vec<Starts>>,
}

/// What a config's epochs start.
#[derive(Clone, Copy)]
struct Starts {
    /// Workers or rank processes, started with the epoch.
    workers: bool,
    /// Persistent workers: only the repeat's first epoch starts them.
    persistent: bool,
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
    /// The config whose epoch comes next, and whether it is the repeat's first (its
    /// warm-up epoch, where the plan has one).
    next_epoch: Option<(usize, bool)>,
}

impl Pace {
    /// When the next frame may draw; `None` when it may draw now.
    fn next_frame(&self, now: Instant) -> Option<Instant> {
        if !self.paced || self.drawing {
            return None;
        }
        let last = self.last_frame.unwrap_or(now);
        let due = match self.epoch_since {
            Some(since) => (last + FRAME_INTERVAL).max(since + FRAME_INTERVAL),
            None => last + MAX_FRAME_GAP,
        };
        (due > now).then_some(due)
    }

    fn since_last_frame(&self, now: Instant) -> Duration {
        self.last_frame.map_or(Duration::MAX, |at| now - at)
    }
}

impl Pacer {
    /// The pacer of a run of `plan`.
    pub fn for_plan(plan: &Plan) -> Pacer {
        let starts = plan
            .configs
            .iter()
            .map(|config| Starts {
                workers: config.num_workers > 0
                    || config.ranks > 1
                    || config.runtime != Runtime::Loaderbench,
                persistent: config.persistent_workers,
            })
            .collect();
        Pacer {
            starts: Arc::new(starts),
            ..Pacer::default()
        }
    }

    /// Whether the window draws at a gate now: a frame is due and the epoch ahead
    /// starts quietly, or the last frame is [`MAX_FRAME_GAP`] old.
    fn draws_at_gate(&self, pace: &Pace, now: Instant) -> bool {
        let since_frame = pace.since_last_frame(now);
        since_frame >= MAX_FRAME_GAP || (since_frame >= FRAME_INTERVAL && self.quiet_start(pace))
    }

    /// Whether the epoch ahead starts no workers and is not its repeat's first: a rest
    /// before it changes least.
    fn quiet_start(&self, pace: &Pace) -> bool {
        let Some((config, first)) = pace.next_epoch else {
            return false;
        };
        let starts = self.starts.get(config).copied().unwrap_or(Starts {
            workers: true,
            persistent: false,
        });
        !first && (!starts.workers || starts.persistent)
    }

    /// The child waits before an epoch: when a frame is due the window takes every queued
    /// event (`events` is the run's queue that the frames drain) and draws, then this
    /// process goes quiet, each within its limit; otherwise it opens at once, after the
    /// quiet if a frame may still be drawing. No frame starts from its end until the
    /// epoch has ended.
    pub fn settle<T>(&self, ctx: &egui::Context, events: &Receiver<T>) {
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
            let draw = self.draws_at_gate(&pace, now);
            pace.drawing = draw;
            (draw, pace.since_last_frame(now) < FRAME_DRAWS_FOR)
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

    /// Passes on what the run reported: which epoch comes next, an epoch's end (a frame
    /// may then draw once it is [`MAX_FRAME_GAP`] overdue), and the run's end, which
    /// stops the pacing.
    pub fn reported(&self, event: &Event) {
        match event {
            Event::ConfigStarted { config, .. } => {
                self.lock().next_epoch = Some((*config, true));
            }
            Event::EpochFinished { config, .. } => self.epoch_ended(Some((*config, false))),
            Event::ConfigFinished { .. } => self.epoch_ended(None),
            _ if event.final_result().is_some() => self.run_ended(),
            _ => {}
        }
    }

    fn epoch_ended(&self, next_epoch: Option<(usize, bool)>) {
        let mut pace = self.lock();
        pace.epoch_since = None;
        pace.next_epoch = next_epoch;
        drop(pace);
        self.notify();
    }

    /// The run has ended: frames are no longer paced.
    pub fn run_ended(&self) {
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
        let (_, events) = crossbeam_channel::unbounded::<Event>();
        pacer.settle(&egui::Context::default(), &events);
        assert!(!pacer.lock().drawing);
        let due = pacer.next_frame_in().unwrap();
        assert!(due > FRAME_INTERVAL - Duration::from_millis(400), "{due:?}");
    }

    #[test]
    fn a_gate_draws_before_an_epoch_that_starts_no_workers_or_when_overdue() {
        let preset = loaderbench_engine::preset::Preset {
            num_workers: vec![0, 4],
            ..loaderbench_engine::preset::Preset::default()
        };
        let pacer = Pacer::for_plan(&Plan::from_preset(&preset, None).unwrap());
        let now = Instant::now();
        let mut pace = Pace {
            paced: true,
            last_frame: Some(now - FRAME_INTERVAL - Duration::from_millis(100)),
            ..Pace::default()
        };
        let draws = |pace: &Pace| pacer.draws_at_gate(pace, now);
        pace.next_epoch = Some((0, false));
        assert!(draws(&pace), "nw=0's second epoch");
        pace.next_epoch = Some((0, true));
        assert!(!draws(&pace), "a repeat's first epoch waits");
        pace.next_epoch = Some((1, false));
        assert!(!draws(&pace), "restarted workers wait");
        pace.last_frame = Some(now - MAX_FRAME_GAP);
        assert!(draws(&pace), "overdue: draws anyway");
        pace.last_frame = Some(now - FRAME_INTERVAL / 2);
        pace.next_epoch = Some((0, false));
        assert!(!draws(&pace), "not due yet");
    }

    #[test]
    fn a_paced_run_draws_at_most_once_an_interval() {
        let pacer = Pacer::default();
        paced(&pacer, Instant::now() - MAX_FRAME_GAP, None);
        assert!(waits(&pacer) < Duration::from_millis(100), "due: draws");
        assert!(pacer.next_frame_in().unwrap() > MAX_FRAME_GAP - Duration::from_millis(100));
        let ender = pacer.clone();
        let ends = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            ender.run_ended();
        });
        let waited = waits(&pacer);
        ends.join().unwrap();
        assert!(
            waited >= Duration::from_millis(140) && waited < FRAME_INTERVAL,
            "the next frame waits for the gap or the run's end: {waited:?}"
        );
        assert_eq!(pacer.next_frame_in(), None);
    }

    #[test]
    fn an_epoch_shorter_than_the_interval_sees_no_frame() {
        let pacer = Pacer::default();
        let long_ago = Instant::now() - 5 * FRAME_INTERVAL;
        paced(&pacer, long_ago, Some(Instant::now()));
        let due = pacer.next_frame_in().unwrap();
        assert!(due > FRAME_INTERVAL - Duration::from_millis(100), "{due:?}");
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
            result: Box::new(loaderbench_measure::results::EpochResult::from_batches(
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
