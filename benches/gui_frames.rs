//! Frame times of the desktop app while a run streams events: the app runs headless in
//! an egui_kittest harness, a synthetic run (400,000 samples, light pipeline, batch 64,
//! num_workers 0 and 2, persistent or not: about 50,000 batches) starts in its measuring
//! child process, and every frame's UI pass (draining events within the budget, layout,
//! plots, table) is timed until the run ends. Prints p50, p95 and max. Whether the app
//! measures what the CLI measures is `benches/parity.rs`. Run with
//! `cargo bench --bench gui_frames`; under `cargo test` (no `--bench` argument) it runs a
//! 4,000-sample smoke version without the resolving rounds after the run.

use std::time::{Duration, Instant};

use egui::{Key, Modifiers};
use egui_kittest::Harness;

use loaderbench_engine::preset::Preset;
use loaderbench_gui::{App, Launch};
use loaderbench_measure::stats;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    frame_times(full);
}

/// The app in a harness, started with Ctrl+R and stepped at a 60 Hz display's pace
/// until its run ends; `on_frame` gets each frame's UI-pass time.
fn run_in_app(launch: Launch, mut on_frame: impl FnMut(Duration)) -> Harness<'static, App> {
    let mut harness = Harness::builder()
        .with_size([1280.0, 720.0])
        .build_eframe(move |cc| App::new(cc, launch));
    harness.key_press_modifiers(Modifiers::COMMAND, Key::R);
    harness.step();
    let started = Instant::now();
    while harness.state().is_running() && started.elapsed() < Duration::from_secs(600) {
        let frame = Instant::now();
        harness.step();
        on_frame(frame.elapsed());
        // A 60 Hz display asks for a frame every 16.7 ms at most.
        std::thread::sleep(Duration::from_millis(16).saturating_sub(frame.elapsed()));
    }
    harness
}

fn frame_times(full: bool) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let preset = Preset {
        name: "frames".to_owned(),
        samples: Some(if full { 400_000 } else { 4_000 }),
        epochs: 2,
        batch_size: vec![64],
        num_workers: vec![0, 2],
        persistent_workers: vec![false, true],
        // The smoke version ends with the run: on a machine that other tests load, the
        // app's resolving rounds would otherwise go on for their whole minute.
        resolve_for_s: if full {
            Preset::default().resolve_for_s
        } else {
            0.0
        },
        ..Preset::default()
    };
    let path = dir.path().join("frames.ron");
    preset.save(&path).expect("writing the preset");
    let launch = Launch {
        preset: Some(path.display().to_string()),
        run_now: false,
        journal_dir: Some(dir.path().to_path_buf()),
        measurer: Some(env!("CARGO_BIN_EXE_loaderbench").into()),
        ..Launch::default()
    };
    let mut frames_ms = Vec::new();
    let started = Instant::now();
    let harness = run_in_app(launch, |frame| frames_ms.push(frame.as_secs_f64() * 1000.0));
    println!(
        "run: {:?}, messages: {:?}",
        harness.state().phase(),
        harness.state().messages()
    );
    let batches = harness.state().result().map_or(0, |r| {
        r.results
            .iter()
            .flat_map(|c| &c.epochs)
            .map(|e| e.batches)
            .sum::<usize>()
    });
    println!(
        "gui_frames: {} frames over {:.1} s while {batches} batches streamed",
        frames_ms.len(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "frame (UI pass) p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        stats::percentile(&frames_ms, 50.0).unwrap_or(f64::NAN),
        stats::percentile(&frames_ms, 95.0).unwrap_or(f64::NAN),
        stats::min_max(&frames_ms).map_or(f64::NAN, |(_, max)| max),
    );
}
