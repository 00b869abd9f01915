//! A long run's footprint: 1,000 epochs of one config each for thread, fork and spawn
//! workers, persistent and not, run by the runner as `loaderbench run` runs them (with
//! its journal). Before epochs 11, 101 and 1,001 (after 10, 100 and 1,000 epochs) the
//! epoch gate samples the whole process tree, this process and its workers: resident
//! memory, open descriptors and threads. Beside them, the bytes the config's epochs take
//! in the journal so far (its line is written when the config ends; the file's size is
//! printed then). Prints one table, and for each figure its growth from epoch 100 to
//! 1,000 against the goal of under 5%. Run with `make soak` (`cargo bench --bench
//! soak`); under `cargo test` (no `--bench` argument) it runs 9 epochs per config,
//! sampled after 2, 4 and 8.

use std::path::Path;
use std::sync::{Arc, Mutex};

use loaderbench_engine::builtin;
use loaderbench_engine::loader::process::WORKER_EXE_VAR;
use loaderbench_engine::plan::Plan;
use loaderbench_measure::results::EpochResult;
use loaderbench_measure::timeline_budget::TimelineBudget;
use loaderbench_measure::{Event, RunOptions};

/// The allowed growth of each figure from the second sample to the last.
const GROWTH_GOAL: f64 = 0.05;

/// The worker setups soaked: worker kind and persistent_workers.
const SETUPS: [(&str, bool); 6] = [
    ("thread", false),
    ("thread", true),
    ("fork", false),
    ("fork", true),
    ("spawn", false),
    ("spawn", true),
];

/// What the process tree holds at one moment.
#[derive(Debug, Clone, Copy, Default)]
struct Footprint {
    rss_bytes: u64,
    fds: usize,
    threads: usize,
}

/// One sample: after how many epochs, the tree's footprint and the journal bytes the
/// config's epochs take so far.
#[derive(Debug, Clone, Copy)]
struct Sample {
    epochs: usize,
    footprint: Footprint,
    results_bytes: usize,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let checkpoints: [usize; 3] = if full { [10, 100, 1_000] } else { [2, 4, 8] };
    // SAFETY: no other thread exists yet, so none can read the environment meanwhile.
    unsafe { std::env::set_var(WORKER_EXE_VAR, env!("CARGO_BIN_EXE_loaderbench")) };
    let dir = tempfile::tempdir().expect("a temporary directory");
    println!(
        "soak: {} epochs per config, samples after {checkpoints:?}; growth from {} to {} epochs (goal under {:.0}%)",
        checkpoints[2],
        checkpoints[1],
        checkpoints[2],
        GROWTH_GOAL * 100.0
    );
    println!(
        "{:<18} {:>7} {:>9} {:>5} {:>8} {:>12}",
        "workers", "epochs", "RSS MB", "fds", "threads", "results KB"
    );
    let mut misses = Vec::new();
    for (kind, persistent) in SETUPS {
        let name = format!("{kind}{}", if persistent { " persistent" } else { "" });
        let journal = dir.path().join(format!("{kind}-{persistent}.jsonl"));
        let samples = soak(kind, persistent, &checkpoints, &journal);
        for sample in &samples {
            let f = sample.footprint;
            println!(
                "{name:<18} {:>7} {:>9.1} {:>5} {:>8} {:>12.1}",
                sample.epochs,
                f.rss_bytes as f64 / 1e6,
                f.fds,
                f.threads,
                sample.results_bytes as f64 / 1e3
            );
        }
        let journal_kb = std::fs::metadata(&journal).map_or(0.0, |m| m.len() as f64 / 1e3);
        println!("{name:<18} journal at the end: {journal_kb:.1} KB");
        let [.., before, last] = samples.as_slice() else {
            panic!("{name}: the run ended before its samples were taken");
        };
        let (a, b) = (before.footprint, last.footprint);
        for (figure, from, to) in [
            ("RSS", a.rss_bytes as f64, b.rss_bytes as f64),
            ("fds", a.fds as f64, b.fds as f64),
            ("threads", a.threads as f64, b.threads as f64),
        ] {
            let growth = to / from - 1.0;
            if growth >= GROWTH_GOAL {
                misses.push(format!("{name} {figure} grew {:.1}%", growth * 100.0));
            }
        }
    }
    if misses.is_empty() {
        println!("soak: every figure grew under {:.0}%", GROWTH_GOAL * 100.0);
    } else {
        println!("soak: MISSED the goal: {}", misses.join("; "));
    }
}

/// Runs `checkpoints[2] + 1` epochs of seed-light (2 workers of `kind`, a small dataset so
/// that epochs are short) and samples before the epochs after each checkpoint.
fn soak(kind: &str, persistent: bool, checkpoints: &[usize; 3], journal: &Path) -> Vec<Sample> {
    let (mut preset, origin) = builtin::load("seed-light").expect("the built-in preset");
    for (key, value) in [
        ("worker_kind", kind.to_owned()),
        ("persistent_workers", persistent.to_string()),
        ("num_workers", "2".to_owned()),
        ("samples", "2048".to_owned()),
        ("batch_size", "64".to_owned()),
        ("pin_memory", "false".to_owned()),
        ("extra_configs", "[]".to_owned()),
        ("epochs", (checkpoints[2] + 1).to_string()),
    ] {
        preset.set(key, &value).expect("a valid soak setting");
    }
    let plan = Plan::from_preset(&preset, Some(&origin)).expect("a valid soak plan");
    let samples = Arc::new(Mutex::new(Vec::new()));
    let results_bytes = Arc::new(Mutex::new(0_usize));
    let gate = {
        let (samples, results_bytes) = (samples.clone(), results_bytes.clone());
        let checkpoints = *checkpoints;
        let mut started = 0;
        Box::new(move || {
            // Before epoch `started + 1`: `started` epochs are done.
            if checkpoints.contains(&started) {
                samples.lock().unwrap().push(Sample {
                    epochs: started,
                    footprint: footprint(),
                    results_bytes: *results_bytes.lock().unwrap(),
                });
            }
            started += 1;
        })
    };
    let options = RunOptions {
        journal: Some(journal.to_path_buf()),
        before_epoch: Some(gate),
        ..RunOptions::default()
    };
    let handle = loaderbench_measure::spawn(plan, options, || {});
    let mut budget = TimelineBudget::default();
    for event in handle.events() {
        match event {
            Event::EpochFinished { result, .. } => {
                *results_bytes.lock().unwrap() += journal_bytes(*result, &mut budget);
            }
            Event::Failed { error, .. } => panic!("the soak run failed: {error}"),
            Event::Finished { .. } | Event::Cancelled { .. } => break,
            _ => {}
        }
    }
    handle.join();
    samples.lock().unwrap().clone()
}

/// The bytes an epoch takes in its config's journal line, its timeline kept as the
/// runner keeps it.
fn journal_bytes(mut epoch: EpochResult, budget: &mut TimelineBudget) -> usize {
    budget.apply(&mut epoch);
    serde_json::to_vec(&epoch).map_or(0, |json| json.len())
}

/// This process and all its descendants: resident memory, open descriptors, threads.
fn footprint() -> Footprint {
    let mut total = Footprint::default();
    for pid in process_tree(std::process::id()) {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|value| value.parse::<u64>().ok())
                .unwrap_or(0)
        };
        total.rss_bytes += field("VmRSS:") * 1024;
        total.threads += field("Threads:") as usize;
        total.fds += std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |fds| fds.count());
    }
    total
}

/// `root` and every process descended from it, from /proc's parent links.
fn process_tree(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // The parent is the second field after the parenthesised command name.
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut tree = vec![root];
    let mut next = 0;
    while next < tree.len() {
        let parent = tree[next];
        tree.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(pid, _)| *pid),
        );
        next += 1;
    }
    tree
}
