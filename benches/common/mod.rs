//! What the benchmarks share: running a preset in-process on the runner, as the CLI
//! does, and taking its finished result; several rounds' results as one; running the
//! CLI as a process and reading its pick, its best set and paired ratios the way the
//! recommendation does, and judging a pick by a reference; folders of photo-like JPEGs; one preloaded Python for all the
//! PyTorch runs of a benchmark. Each benchmark uses some of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use image::codecs::jpeg::JpegEncoder;
use image::{Rgb, RgbImage};
use loaderbench_analysis::Analysis;
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_measure::pytorch::SharedPreloadedPython;
use loaderbench_measure::results::{ConfigResult, RunResult};
use loaderbench_measure::results_file;
use loaderbench_measure::stats;
use loaderbench_measure::{Event, RunOptions};

/// How the benchmark was started: `cargo bench` (`--bench`: the full benchmark, else the
/// smoke version `cargo test` runs), and the names given after `--` (parts or presets).
pub fn bench_args() -> (bool, Vec<String>) {
    let full = std::env::args().any(|a| a == "--bench");
    let named = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    (full, named)
}

/// The preloaded Python every run of the benchmark forks its PyTorch scripts from, as
/// tune's rounds do, started by the first: the runs, in this process or in a
/// `loaderbench` process of their own, then pay no `import torch` (seconds) each. The
/// first run waits until it serves: its import, seconds of CPU on every core, ran beside
/// the first runs of seed-light and disturbed half their measurements.
fn shared_preloaded_python() -> Option<&'static Arc<SharedPreloadedPython>> {
    static SHARED: OnceLock<Option<Arc<SharedPreloadedPython>>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let python = loaderbench_measure::pytorch::python_path();
            let shared = SharedPreloadedPython::start(&python).ok()??;
            shared
                .wait_serving(Duration::from_secs(120))
                .then(|| Arc::new(shared))
        })
        .as_ref()
}

/// Runs `preset` to the end (its journal, named after `bench`, is removed afterwards);
/// panics if it fails or reports nothing for ten minutes.
pub fn run(preset: Preset, bench: &str) -> RunResult {
    let plan = Plan::from_preset(&preset, None).expect("a plan");
    let runs_python = plan.configs.iter().any(|c| c.runtime.runs_python());
    let journal = std::env::temp_dir().join(format!("{bench}-bench-{}.jsonl", std::process::id()));
    let handle = loaderbench_measure::spawn(
        plan,
        RunOptions {
            journal: Some(journal.clone()),
            preloaded: runs_python.then(shared_preloaded_python).flatten().cloned(),
            ..RunOptions::default()
        },
        || {},
    );
    let mut outcome = None;
    while outcome.is_none() {
        match handle.events().recv_timeout(Duration::from_secs(600)) {
            Ok(Event::Finished { result }) => outcome = Some(*result),
            Ok(Event::Failed { error, .. }) => panic!("the run failed: {error}"),
            Ok(_) => {}
            Err(_) => panic!("the run stopped reporting"),
        }
    }
    let _ = std::fs::remove_file(journal);
    outcome.expect("an outcome")
}

/// The rounds as one run, their repeats numbered one after another.
pub fn merged(runs: &[RunResult]) -> RunResult {
    let mut all = runs[0].clone();
    let per_round = all.repeats;
    all.repeats = per_round * runs.len();
    all.results = runs
        .iter()
        .enumerate()
        .flat_map(|(round, run)| {
            run.results.iter().cloned().map(move |mut result| {
                result.repeat += round * per_round;
                result
            })
        })
        .collect();
    all
}

/// Runs `loaderbench ARGS --json JSON`; panics with its error output if it fails.
pub fn loaderbench(args: &[&str], json: &Path) {
    loaderbench_at(Path::new(env!("CARGO_BIN_EXE_loaderbench")), args, json);
}

/// [`loaderbench`] with another build's binary.
pub fn loaderbench_at(binary: &Path, args: &[&str], json: &Path) {
    let journal = json.with_extension("jsonl");
    let mut command = Command::new(binary);
    if let Some(preloaded) = shared_preloaded_python() {
        preloaded.share_with(&mut command);
    }
    let output = command
        .args(args)
        .arg("--json")
        .arg(json)
        .arg("--journal")
        .arg(&journal)
        .output()
        .expect("loaderbench starts");
    assert!(
        output.status.success(),
        "loaderbench {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The best set and the pick of the first question, read as if nothing were disturbed.
pub fn best_set(result: &RunResult) -> (Vec<usize>, Option<usize>) {
    let mut view = result.clone();
    for config in &mut view.results {
        config.disturbed = false;
    }
    let Some(recommendation) = Analysis::of(&view).recommendations.into_iter().next() else {
        return (Vec::new(), None);
    };
    let index_of = |label: &String| view.labels.iter().position(|l| l == label);
    let mut best: Vec<usize> = recommendation
        .equally_fast
        .iter()
        .filter_map(index_of)
        .collect();
    best.extend(recommendation.config);
    best.sort_unstable();
    (best, recommendation.config)
}

/// The median over rounds of `a`'s epoch time over `b`'s, where both ran in the round.
pub fn paired_ratio(result: &RunResult, a: usize, b: usize) -> Option<f64> {
    let total = |index: usize, round: usize| -> Option<f64> {
        let run = result
            .results
            .iter()
            .find(|r| r.config_index == index && r.repeat == round)?;
        Some(run.epochs.iter().map(|e| e.seconds).sum())
    };
    let rounds = result.results.iter().map(|r| r.repeat).max()? + 1;
    let ratios: Vec<f64> = (0..rounds)
        .filter_map(|round| Some(total(a, round)? / total(b, round)?))
        .collect();
    stats::median(&ratios)
}

pub fn names(result: &RunResult, configs: &[usize]) -> String {
    let names: Vec<&str> = configs.iter().map(|&i| result.labels[i].as_str()).collect();
    names.join(", ")
}

/// Writes `images` JPEGs (quality 90) of `size(i)` pixels for image `i` into `classes`
/// class folders under `root`; returns their paths.
pub fn write_jpeg_folder(
    root: &Path,
    images: usize,
    classes: usize,
    size: fn(usize) -> (u32, u32),
) -> Vec<PathBuf> {
    (0..images)
        .map(|i| {
            let folder = root.join(format!("class{}", i % classes));
            std::fs::create_dir_all(&folder).expect("a class folder");
            let (width, height) = size(i);
            let path = folder.join(format!("{i:06}.jpg"));
            let mut bytes = Vec::new();
            JpegEncoder::new_with_quality(&mut bytes, 90)
                .encode_image(&photo_like(width, height, i as u32))
                .expect("JPEG encoding");
            std::fs::write(&path, bytes).expect("the image is written");
            path
        })
        .collect()
}

/// A smooth picture with some detail: a colour gradient, a disc of the inverse colours
/// and mild noise, different for every `seed`.
pub fn photo_like(width: u32, height: u32, seed: u32) -> RgbImage {
    let mut state = seed.wrapping_mul(2_654_435_761) | 1;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let (cx, cy) = ((random() % width) as f32, (random() % height) as f32);
    let radius = (random() % (width / 2) + 8) as f32;
    let base = [random() % 256, random() % 256, random() % 256].map(|c| c as f32);
    RgbImage::from_fn(width, height, |x, y| {
        let (fx, fy) = (x as f32 / width as f32, y as f32 / height as f32);
        let inside = (x as f32 - cx).hypot(y as f32 - cy) < radius;
        let noise = (random() % 7) as f32 - 3.0;
        Rgb(base.map(|c| {
            let value = c * fx + (255.0 - c) * fy * 0.5;
            let value = if inside { 255.0 - value } else { value };
            (value + noise).clamp(0.0, 255.0) as u8
        }))
    })
}

/// The reference of `references` that measured the configs of `run`'s `question`-th
/// question most, and that reference's view of the question (only its configs): each
/// question is judged by what measured it most (a long reference of our engine's configs
/// beside a few rounds of a preset whose PyTorch configs take a minute).
pub fn judge<'a>(
    references: &'a [RunResult],
    run: &RunResult,
    question: usize,
) -> Option<(&'a RunResult, RunResult)> {
    let own = only_question(run, question);
    let labels: Vec<&str> = own.results.iter().map(|r| r.label.as_str()).collect();
    let measured_in = |reference: &RunResult| {
        let in_question = |r: &&ConfigResult| labels.contains(&r.label.as_str());
        reference.results.iter().filter(in_question).count()
    };
    let judge = references.iter().max_by_key(|r| measured_in(r))?;
    let judged = (0..Analysis::of(judge).recommendations.len())
        .map(|j| only_question(judge, j))
        .find(|view| {
            view.results
                .iter()
                .any(|r| labels.contains(&r.label.as_str()))
        })
        .unwrap_or_else(|| judge.clone());
    Some((judge, judged))
}

/// How much slower the config labelled `pick` is than the reference's fastest config of
/// its question: the median of their per-round ratio in the reference, less one (0 when
/// it is the fastest).
pub fn regret(reference: &RunResult, pick: &str) -> Option<f64> {
    let pick = reference.labels.iter().position(|l| l == pick)?;
    let question = reference.configs.get(pick)?;
    let fastest = (0..reference.configs.len())
        .filter(|&i| {
            let c = &reference.configs[i];
            c.runtime == question.runtime && c.pipeline == question.pipeline
        })
        .filter_map(|i| Some((i, level(reference, i)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?
        .0;
    Some(paired_ratio(reference, pick, fastest)? - 1.0)
}

/// A config's median time per round in `result`.
fn level(result: &RunResult, index: usize) -> Option<f64> {
    let totals: Vec<f64> = result
        .results
        .iter()
        .filter(|r| r.config_index == index)
        .map(|r| r.epochs.iter().map(|e| e.seconds).sum())
        .collect();
    stats::median(&totals)
}

/// `result` as if nothing were disturbed: the benchmark's own load is not the question.
pub fn undisturbed(result: &RunResult) -> RunResult {
    let mut view = result.clone();
    for config in &mut view.results {
        config.disturbed = false;
    }
    view
}

/// `result` with only the configs of its `question`-th recommendation's question.
pub fn only_question(result: &RunResult, question: usize) -> RunResult {
    let recommendations = Analysis::of(result).recommendations;
    let Some(first) = recommendations
        .get(question)
        .and_then(|r| r.config)
        .map(|i| result.configs[i].clone())
    else {
        return result.clone();
    };
    let mut view = result.clone();
    view.results.retain(|r| {
        r.config.runtime == first.runtime
            && r.config.pipeline == first.pipeline
            && r.config.ranks == first.ranks
            && r.config.cache == first.cache
    });
    view
}

/// Runs the rounds of `references` (each a preset run `rounds` times with `sets`, in a
/// fresh process) that fall in `slot` of `slots`: each reference's rounds spread evenly
/// before, between and after the runs they judge (this machine's speed drifts by half
/// over minutes). Each round goes to its reference's list in `measured`.
pub fn reference_rounds(
    dir: &Path,
    name: &str,
    references: &[(&str, usize)],
    sets: &[&str],
    (slot, slots): (usize, usize),
    measured: &mut [Vec<RunResult>],
) {
    for (which, &(reference, rounds)) in references.iter().enumerate() {
        for round in (0..rounds).filter(|r| r * slots / rounds == slot) {
            let json = dir.join(format!("{name}-reference-{reference}-{round}.json"));
            let mut args = vec!["run", reference, "--quiet"];
            args.extend_from_slice(sets);
            loaderbench(&args, &json);
            measured[which].push(results_file::read(&json).expect("a reference round"));
        }
    }
}
