//! The window's pacing against a real measuring child: a window that asks for a frame
//! all the time (the worst case: egui's follow-up frames, a busy user) starts none while
//! an epoch is measured, and while the run measures draws at most once a
//! [`FRAME_INTERVAL`] (plus the gate that lets it take the run's events). The run is
//! watched once, by the first test that needs it.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_gui::{FRAME_INTERVAL, Pacer};
use loaderbench_measure::Event;
use loaderbench_measure::measuring_child::ChildRun;

/// When each epoch was let start (its gate), when each ended, and when each frame
/// started, for a window that asks for a frame all the time during a real run; and
/// whether the run ended in time. Run once, by the first test that needs it.
struct Paced {
    gates: Vec<Instant>,
    ends: Vec<Instant>,
    frames: Vec<Instant>,
    ended: bool,
}

static PACED: OnceLock<Paced> = OnceLock::new();

impl Paced {
    /// The paced run, after checking that it ended.
    fn get() -> &'static Paced {
        let paced = PACED.get_or_init(Paced::run);
        assert!(paced.ended, "the run did not end");
        paced
    }

    fn run() -> Paced {
        let dir = tempfile::tempdir().unwrap();
        let preset = Preset {
            name: "paced".to_owned(),
            samples: Some(20_000),
            epochs: 3,
            repeats: 3,
            batch_size: vec![256],
            num_workers: vec![0, 2],
            resolve_for_s: 0.0,
            ..Preset::default()
        };
        let plan = Plan::from_preset(&preset, None).unwrap();
        let ctx = egui::Context::default();
        let pacer = Pacer::for_plan(&plan);
        let gates = Arc::new(Mutex::new(Vec::new()));
        let ends = Arc::new(Mutex::new(Vec::new()));
        let (settling, gates_seen) = (pacer.clone(), gates.clone());
        let (reporting, ends_seen) = (pacer.clone(), ends.clone());
        let run = ChildRun::start(
            &plan,
            Some(dir.path().join("paced.jsonl")),
            Some(Path::new(env!("CARGO_BIN_EXE_loaderbench"))),
            None,
            move |queued| {
                settling.settle(&ctx, queued);
                gates_seen.lock().unwrap().push(Instant::now());
            },
            move |event| {
                if matches!(event, Event::EpochFinished { .. }) {
                    ends_seen.lock().unwrap().push(Instant::now());
                }
                reporting.reported(event);
            },
        )
        .unwrap();
        // The window: a frame as often as the pacer lets it, each taking the queued events.
        let mut frames = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut ended = false;
        while !ended && Instant::now() < deadline {
            pacer.wait_to_draw();
            frames.push(Instant::now());
            while let Ok(event) = run.events().try_recv() {
                ended |= event.final_result().is_some();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let gates = gates.lock().unwrap().clone();
        let ends = ends.lock().unwrap().clone();
        Paced {
            gates,
            ends,
            frames,
            ended,
        }
    }
}

#[test]
fn every_epoch_waits_at_a_gate() {
    let Paced { gates, ends, .. } = Paced::get();
    assert_eq!(
        gates.len(),
        18,
        "a gate before each of 2 configs × 3 repeats × 3 epochs"
    );
    assert_eq!(ends.len(), gates.len());
}

#[test]
fn no_frame_starts_inside_a_measured_epoch() {
    let Paced {
        gates,
        ends,
        frames,
        ..
    } = Paced::get();
    // An epoch that runs past a frame interval may draw once in it, for the progress
    // line (a loaded machine stretches a few); every shorter one must draw none.
    let mut short = 0;
    for (start, end) in gates.iter().zip(ends) {
        if end.duration_since(*start) >= FRAME_INTERVAL {
            continue;
        }
        short += 1;
        let inside = frames.iter().filter(|f| *f > start && *f < end).count();
        assert_eq!(inside, 0, "a frame started inside an epoch");
    }
    assert!(
        short * 2 >= gates.len(),
        "{short} of {} epochs were short",
        gates.len()
    );
}

#[test]
fn a_run_draws_at_most_once_a_frame_interval() {
    let Paced {
        gates,
        ends,
        frames,
        ..
    } = Paced::get();
    let measuring = ends.last().unwrap().duration_since(gates[0]);
    let paced = frames.iter().filter(|f| **f > gates[0]).count();
    let allowed = measuring.as_secs_f64() / FRAME_INTERVAL.as_secs_f64() + 2.0;
    assert!(
        (paced as f64) <= allowed,
        "{paced} frames in {measuring:?} of measuring"
    );
}
