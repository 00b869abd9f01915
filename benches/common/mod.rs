//! What the benchmarks share: running a preset in-process on the runner, as the CLI
//! does, and taking its finished result; several rounds' results as one. Each benchmark
//! uses some of them.
#![allow(dead_code)]

use std::time::Duration;

use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_measure::results::RunResult;
use loaderbench_measure::{Event, RunOptions};

/// Runs `preset` to the end (its journal, named after `bench`, is removed afterwards);
/// panics if it fails or reports nothing for ten minutes.
pub fn run(preset: Preset, bench: &str) -> RunResult {
    let plan = Plan::from_preset(&preset, None).expect("a plan");
    let journal = std::env::temp_dir().join(format!("{bench}-bench-{}.jsonl", std::process::id()));
    let handle = loaderbench_measure::spawn(
        plan,
        RunOptions {
            journal: Some(journal.clone()),
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
