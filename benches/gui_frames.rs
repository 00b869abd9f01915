//! Part 1, frame times of the desktop app while a run streams events: the app runs
//! headless in an egui_kittest harness, a synthetic run (400,000 samples, light pipeline, batch 64,
//! num_workers 0 and 2, persistent or not: about 50,000 batch events) starts,
//! and every frame's UI pass (draining events within the budget, layout, plots, table)
//! is timed until the run ends. Prints p50, p95 and max.
//!
//! Part 2, does the app disturb the measurement? The seed-light preset runs in the app
//! (stepped at 60 frames a second) and through the CLI as a process, interleaved, three
//! times each, after a warm-up epoch; the median epoch times of each config are compared. Run with
//! `cargo bench --bench gui_frames`; under `cargo test` (no `--bench` argument) it runs a
//! 4,000-sample smoke version.

use std::time::{Duration, Instant};

use egui::{Key, Modifiers};
use egui_kittest::Harness;

use loaderbench::gui::{App, Launch};
use loaderbench::preset::Preset;
use loaderbench::results::RunResult;
use loaderbench::stats;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    frame_times(full);
    app_against_cli(full);
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
        ..Preset::default()
    };
    let path = dir.path().join("frames.ron");
    preset.save(&path).expect("writing the preset");
    let launch = Launch {
        preset: Some(path.display().to_string()),
        run_now: false,
        journal_dir: Some(dir.path().to_path_buf()),
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

/// Median epoch seconds per config label, from every result of every round.
fn epoch_medians(rounds: &[RunResult]) -> Vec<(String, f64)> {
    let Some(first) = rounds.first() else {
        return Vec::new();
    };
    first
        .labels
        .iter()
        .enumerate()
        .map(|(index, label)| {
            let seconds: Vec<f64> = rounds
                .iter()
                .flat_map(|r| &r.results)
                .filter(|c| c.config_index == index)
                .flat_map(|c| c.epochs.iter().map(|e| e.seconds))
                .collect();
            (label.clone(), stats::median(&seconds).unwrap_or(f64::NAN))
        })
        .collect()
}

fn app_against_cli(full: bool) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let samples = if full { 60_000 } else { 2_048 };
    let (mut app_rounds, mut cli_rounds) = (Vec::new(), Vec::new());
    let (preset, _) = loaderbench::builtin::load("seed-light").expect("seed-light");
    // A fresh CLI process pays cold caches in its first epoch, which the app, warm from
    // earlier runs, does not: both leave one unmeasured warm-up epoch out.
    let preset = Preset {
        samples: Some(samples),
        warmup: true,
        ..preset
    };
    let path = dir.path().join("seed-light.ron");
    preset.save(&path).expect("writing the preset");
    for round in 0..if full { 3 } else { 1 } {
        let launch = Launch {
            preset: Some(path.display().to_string()),
            run_now: false,
            journal_dir: Some(dir.path().to_path_buf()),
        };
        let harness = run_in_app(launch, |_| {});
        app_rounds.push(harness.state().result().expect("the app's run").clone());

        let json = dir.path().join(format!("cli-{round}.json"));
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_loaderbench"))
            .args(["run", "-q", "--json"])
            .arg(&json)
            .arg("--journal")
            .arg(dir.path().join(format!("cli-{round}.jsonl")))
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("the CLI runs");
        assert!(status.success(), "the CLI run failed");
        let text = std::fs::read(&json).expect("the CLI's JSON");
        cli_rounds.push(serde_json::from_slice::<RunResult>(&text).expect("a run result"));
    }
    let app = epoch_medians(&app_rounds);
    let cli = epoch_medians(&cli_rounds);
    println!("app vs CLI, seed-light with {samples} samples, median epoch seconds:");
    let (mut app_total, mut cli_total) = (0.0, 0.0);
    for ((label, app), (_, cli)) in app.iter().zip(&cli) {
        println!(
            "  {label:<22} app {app:.4} s  cli {cli:.4} s  app/cli {:.2}",
            app / cli
        );
        app_total += app;
        cli_total += cli;
    }
    println!(
        "  all configs            app {app_total:.4} s  cli {cli_total:.4} s  app/cli {:.3} (goal within 5%)",
        app_total / cli_total
    );
}
