//! Does the app measure what the CLI measures, and does the interference meter see
//! outside load? Part 1 runs seed-light and seed-heavy in the real window (under Xvfb
//! when there is no display, through `loaderbench gui PRESET --run --json FILE --exit`)
//! and through `loaderbench run`, interleaved for sixteen rounds of two repeats each (a
//! fresh process each time: on these VMs a process keeps the speed of the memory it was
//! given for its whole life, so more processes beat more repeats in one), and prints
//! app/CLI per config of the figures the analysis reports: the first epoch, a typical
//! (later) epoch and the first-batch latency, each the median over rounds and repeats.
//! Beside each epoch ratio it prints the CLI against itself (its even rounds against its
//! odd ones): the noise floor the app/CLI ratio should be read against; and the median
//! of the per-round app/CLI ratios (each round's app beside the CLI that ran next to it)
//! with its bootstrap interval (each at the confidence that makes all of them together
//! 95%, Bonferroni), which leaves out 1 only where the app differs beyond the rounds'
//! noise. The A/A criterion follows: it holds when every per-round interval
//! contains 1 and every app/CLI ratio lies within the CLI's own A/A band. Then the
//! configs each side marked disturbed, and each side's recommendation. Part 2 runs seed-light through the CLI on the quiet machine and then
//! beside a busy loop on one core, and prints each config's other load and whether it
//! was marked disturbed. Run with `cargo bench --bench parity` (`-- seed-heavy` for one
//! preset and no part 2); under `cargo test` (no `--bench`) it runs a 512-sample smoke
//! version of one round, and skips part 1 where there is neither a display nor Xvfb.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use loaderbench_analysis::Analysis;
use loaderbench_engine::preset::Preset;
use loaderbench_measure::results::RunResult;
use loaderbench_measure::stats;

fn main() {
    // `--bench seed-light` runs part 1 on that preset alone, and skips part 2.
    let (full, named) = common::bench_args();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let display = Display::find_or_start();
    let names: Vec<&str> = if named.is_empty() {
        vec!["seed-light", "seed-heavy"]
    } else {
        named.iter().map(String::as_str).collect()
    };
    for name in names {
        let preset = preset(dir.path(), name, full);
        match &display {
            Some(display) => app_against_cli(dir.path(), &preset, display, full),
            None => println!("parity: {name}: skipped the app (no display, no Xvfb on PATH)"),
        }
    }
    if named.is_empty() {
        meter_under_load(dir.path(), &preset(dir.path(), "seed-light", full));
    }
}

/// Rounds in the full benchmark: each round is one app process and one CLI process.
const ROUNDS: usize = 16;
/// Repeats per round in the full benchmark (light epochs last 30–70 ms, where a
/// millisecond of scheduling is already 2–3 %, so each round's figure is a median too).
const REPEATS: usize = 2;

/// The built-in preset saved to a file, made small for a smoke run.
fn preset(dir: &Path, name: &str, full: bool) -> PathBuf {
    let (preset, _) = loaderbench_engine::builtin::load(name).expect("a built-in preset");
    let preset = if full {
        Preset {
            repeats: REPEATS,
            ..preset
        }
    } else {
        Preset {
            samples: Some(512),
            ..preset
        }
    };
    let path = dir.join(format!("{name}.ron"));
    preset.save(&path).expect("writing the preset");
    path
}

/// An X display: the session's own, or an Xvfb started for this benchmark.
struct Display {
    name: String,
    server: Option<Child>,
}

impl Display {
    fn find_or_start() -> Option<Display> {
        if let Ok(name) = std::env::var("DISPLAY")
            && !name.is_empty()
        {
            return Some(Display { name, server: None });
        }
        let name = format!(":{}", 90 + std::process::id() % 100);
        let server = Command::new("Xvfb")
            .args([&name, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        std::thread::sleep(Duration::from_millis(500));
        Some(Display {
            name,
            server: Some(server),
        })
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        if let Some(server) = &mut self.server {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// Runs `loaderbench ARGS` and reads the results JSON it wrote.
fn measure(args: &[&str], json: &Path, display: Option<&Display>) -> RunResult {
    let mut command = Command::new(env!("CARGO_BIN_EXE_loaderbench"));
    command.args(args).arg("--json").arg(json);
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    if let Some(display) = display {
        command.env("DISPLAY", &display.name);
    }
    let output = command.output().expect("loaderbench runs");
    assert!(
        output.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read(json).expect("the results JSON");
    serde_json::from_slice(&text).expect("a run result")
}

fn app_against_cli(dir: &Path, preset: &Path, display: &Display, full: bool) {
    let preset_arg = preset.to_str().expect("a UTF-8 path");
    let journal_dir = dir.to_str().expect("a UTF-8 path");
    let (mut app, mut cli) = (Vec::new(), Vec::new());
    for round in 0..if full { ROUNDS } else { 1 } {
        // Each preset's runs have names of their own: a journal is never reused.
        let name = preset
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("preset");
        let app_json = dir.join(format!("app-{name}-{round}.json"));
        let cli_json = dir.join(format!("cli-{name}-{round}.json"));
        let journal = dir.join(format!("cli-{name}-{round}.jsonl"));
        let app_run = || {
            measure(
                &[
                    "gui",
                    preset_arg,
                    "--run",
                    "--exit",
                    "--journal-dir",
                    journal_dir,
                ],
                &app_json,
                Some(display),
            )
        };
        let cli_run = || {
            measure(
                &[
                    "run",
                    "-q",
                    preset_arg,
                    "--journal",
                    journal.to_str().expect("UTF-8"),
                ],
                &cli_json,
                None,
            )
        };
        // Alternate which goes first, so drift between the two does not favour one.
        if round % 2 == 0 {
            app.push(app_run());
            cli.push(cli_run());
        } else {
            cli.push(cli_run());
            app.push(app_run());
        }
    }
    let labels = app[0].labels.clone();
    println!(
        "parity: {} ({}), {} round(s) of {} repeat(s), medians over rounds and repeats:",
        app[0].preset,
        app[0].dataset,
        app.len(),
        app[0].repeats
    );
    println!(
        "  {:<28} {:>8} {:>8} {:>7} {:>7} {:>17}   {:>8} {:>8} {:>7} {:>7} {:>17}   {:>8} {:>8} {:>7}",
        "config",
        "app ep.1",
        "cli ep.1",
        "app/cli",
        "cli A/A",
        "paired int.",
        "app lat.",
        "cli lat.",
        "app/cli",
        "cli A/A",
        "paired int.",
        "app 1st",
        "cli 1st",
        "app/cli"
    );
    let (cli_even, cli_odd) = halves(&cli);
    // Two epoch figures per config, each with its interval: 95% for all of them together.
    let confidence = per_interval_confidence(2 * labels.len());
    let (mut ratios, mut floor, mut systematic) = (Vec::new(), Vec::new(), 0);
    for (index, label) in labels.iter().enumerate() {
        let mut cells = Vec::new();
        for figure in [Figure::FirstEpoch, Figure::LaterEpochs, Figure::FirstBatch] {
            let (a, c) = (figure.median(&app, index), figure.median(&cli, index));
            let mut cell = format!("{a:>8.4} {c:>8.4} {:>7.3}", a / c);
            if !matches!(figure, Figure::FirstBatch) {
                ratios.push(a / c);
                let aa = figure.median(&cli_even, index) / figure.median(&cli_odd, index);
                floor.push(aa);
                cell.push_str(&format!(" {aa:>7.3}"));
                let paired = Paired::of(figure, &app, &cli, index, confidence);
                systematic += usize::from(paired.excludes_one());
                cell.push_str(&format!(" {paired}"));
            }
            cells.push(cell);
        }
        println!("  {label:<28} {}", cells.join("   "));
    }
    let within = |r: &[f64]| r.iter().filter(|r| (0.95..=1.05).contains(*r)).count();
    println!(
        "  epoch app/cli (first and later) within 0.95-1.05: {} of {}; cli A/A (even against odd rounds): {} of {}",
        within(&ratios),
        ratios.len(),
        within(&floor),
        floor.len()
    );
    println!(
        "  paired per-round app/cli, interval of the median excluding 1 (a systematic difference): {systematic} of {} ({:.2}% intervals, 95% for the {} together)",
        ratios.len(),
        confidence * 100.0,
        ratios.len()
    );
    let criterion = AaCriterion::of(&ratios, &floor, systematic);
    println!("  {criterion}");
    for (side, runs) in [("app", &app), ("cli", &cli)] {
        let disturbed: Vec<&str> = runs
            .iter()
            .flat_map(|r| &r.results)
            .filter(|r| r.disturbed)
            .map(|r| r.label.as_str())
            .collect();
        let load: Vec<f64> = runs
            .iter()
            .flat_map(|r| &r.results)
            .filter_map(|r| r.other_load_cores)
            .collect();
        println!(
            "  {side}: other load median {:.2} cores, max {:.2}; disturbed: {:?}",
            stats::median(&load).unwrap_or(f64::NAN),
            stats::min_max(&load).map_or(f64::NAN, |(_, max)| max),
            disturbed
        );
        for recommendation in Analysis::of(&common::merged(runs)).recommendations {
            println!(
                "  {side} recommends for {}: {}",
                recommendation.group,
                recommendation
                    .label
                    .as_deref()
                    .unwrap_or("nothing (undecided)")
            );
        }
    }
}

/// Parity as it can be shown on a noisy machine: every config's per-round app/CLI
/// interval contains 1, and every app/CLI ratio lies within the band the CLI measured
/// against itself (its even rounds against its odd ones) in the same benchmark, the
/// band being as wide on both sides as its widest A/A ratio.
struct AaCriterion {
    compared: usize,
    systematic: usize,
    band: (f64, f64),
    within_band: usize,
}

impl AaCriterion {
    fn of(ratios: &[f64], floor: &[f64], systematic: usize) -> AaCriterion {
        let widest = floor.iter().map(|aa| aa.max(1.0 / aa)).fold(1.0, f64::max);
        let band = (1.0 / widest, widest);
        AaCriterion {
            compared: ratios.len(),
            systematic,
            band,
            within_band: ratios
                .iter()
                .filter(|r| (band.0..=band.1).contains(*r))
                .count(),
        }
    }

    fn holds(&self) -> bool {
        self.systematic == 0 && self.within_band == self.compared
    }
}

impl std::fmt::Display for AaCriterion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "A/A criterion: per-round intervals containing 1: {} of {}; app/cli within the \
             cli A/A band {:.3}-{:.3}: {} of {}: {}",
            self.compared - self.systematic,
            self.compared,
            self.band.0,
            self.band.1,
            self.within_band,
            self.compared,
            if self.holds() {
                "holds"
            } else {
                "does NOT hold"
            }
        )
    }
}

/// The figures compared, as the analysis reports them.
#[derive(Clone, Copy)]
enum Figure {
    /// Each repeat's first epoch.
    FirstEpoch,
    /// Every epoch after the first.
    LaterEpochs,
    /// The first batch's latency in each repeat's first epoch.
    FirstBatch,
}

impl Figure {
    /// The median over config `index`'s repeats in every round.
    fn median(self, runs: &[RunResult], index: usize) -> f64 {
        self.median_of(runs.iter(), index)
    }

    /// Each round's median for config `index`, one per run.
    fn round_medians(self, runs: &[RunResult], index: usize) -> Vec<f64> {
        runs.iter()
            .map(|run| self.median_of(std::iter::once(run), index))
            .collect()
    }

    fn median_of<'a>(self, runs: impl Iterator<Item = &'a RunResult>, index: usize) -> f64 {
        let values: Vec<f64> = runs
            .flat_map(|r| &r.results)
            .filter(|r| r.config_index == index)
            .flat_map(|r| -> Vec<f64> {
                match self {
                    Figure::FirstEpoch => r.epochs.iter().take(1).map(|e| e.seconds).collect(),
                    Figure::LaterEpochs => r.epochs.iter().skip(1).map(|e| e.seconds).collect(),
                    Figure::FirstBatch => {
                        r.epochs.iter().take(1).map(|e| e.first_batch_s).collect()
                    }
                }
            })
            .collect();
        stats::median(&values).unwrap_or(f64::NAN)
    }
}

/// The confidence of each of `intervals` intervals such that all of them hold together
/// with 95% confidence (Bonferroni): at 95% each, one of 14 intervals leaves out 1 by
/// chance about every other time even where nothing differs.
fn per_interval_confidence(intervals: usize) -> f64 {
    1.0 - 0.05 / intervals.max(1) as f64
}

/// App against CLI round by round: each round's app median over the same round's CLI
/// median (the two ran next to each other, so slow drift between rounds cancels), with
/// the bootstrap interval of the median of those ratios at `confidence`. An interval
/// that leaves out 1 says the app differs from the CLI beyond the rounds' noise.
struct Paired {
    median: f64,
    interval: (f64, f64),
}

impl Paired {
    fn of(
        figure: Figure,
        app: &[RunResult],
        cli: &[RunResult],
        index: usize,
        confidence: f64,
    ) -> Paired {
        let ratios: Vec<f64> = figure
            .round_medians(app, index)
            .iter()
            .zip(figure.round_medians(cli, index))
            .map(|(a, c)| a / c)
            .collect();
        Paired {
            median: stats::median(&ratios).unwrap_or(f64::NAN),
            interval: stats::bootstrap_median_interval(&ratios, confidence)
                .unwrap_or((f64::NAN, f64::NAN)),
        }
    }

    fn excludes_one(&self) -> bool {
        self.interval.0 > 1.0 || self.interval.1 < 1.0
    }
}

impl std::fmt::Display for Paired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (lo, hi) = self.interval;
        let cell = format!("{:.2} [{lo:.2},{hi:.2}]", self.median);
        write!(f, "{cell:>17}")
    }
}

/// The even rounds and the odd rounds (with one round, both are that round).
fn halves(runs: &[RunResult]) -> (Vec<RunResult>, Vec<RunResult>) {
    if runs.len() < 2 {
        return (runs.to_vec(), runs.to_vec());
    }
    let pick = |parity| runs.iter().skip(parity).step_by(2).cloned().collect();
    (pick(0), pick(1))
}

fn meter_under_load(dir: &Path, preset: &Path) {
    let preset_arg = preset.to_str().expect("a UTF-8 path");
    // Each run its own journal, beside its results: a journal is never reused.
    let run = |json: &Path| {
        let journal = json.with_extension("jsonl");
        measure(
            &[
                "run",
                "-q",
                preset_arg,
                "--journal",
                journal.to_str().expect("UTF-8"),
            ],
            json,
            None,
        )
    };
    let quiet = run(&dir.join("quiet.json"));
    let hog = BusyLoop::start();
    let loaded = run(&dir.join("loaded.json"));
    drop(hog);
    println!("meter: seed-light through the CLI, other load in cores (* = disturbed):");
    println!("  {:<28} {:>8} {:>8}", "config", "quiet", "1 hog");
    for (quiet, loaded) in quiet.results.iter().zip(&loaded.results) {
        let shown = |r: &loaderbench_measure::results::ConfigResult| {
            format!(
                "{:.2}{}",
                r.other_load_cores.unwrap_or(f64::NAN),
                if r.disturbed { "*" } else { " " }
            )
        };
        println!(
            "  {:<28} {:>8} {:>8}",
            quiet.label,
            shown(quiet),
            shown(loaded)
        );
    }
    let count = |r: &RunResult| r.results.iter().filter(|c| c.disturbed).count();
    println!(
        "  disturbed: quiet {} of {}, with the hog {} of {}; hog warning: {}",
        count(&quiet),
        quiet.results.len(),
        count(&loaded),
        loaded.results.len(),
        loaded.warnings.iter().any(|w| w.starts_with("disturbed:"))
    );
}

/// A thread that keeps one core busy until dropped.
struct BusyLoop {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BusyLoop {
    fn start() -> BusyLoop {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut x = 0u64;
            while !flag.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        });
        BusyLoop {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for BusyLoop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
