//! The CLI stopped as schedulers stop it: under coreutils' `timeout`, which signals the
//! process and then its whole process group, so the signal arrives twice within
//! microseconds (Slurm's `scancel` and container runtimes do the same). Every try must
//! keep its exports (the JSON and CSV hold every config the journal holds, the run marked
//! cancelled), exit with 128 + the signal (143 for SIGTERM, 130 for SIGINT), and leave
//! no worker, rank or Python process behind. Five tries per signal on our engine's
//! spawned workers, each signalled at another moment of the run, one each on the PyTorch
//! runtime and on ranks. Also: a second signal
//! a second after the first quits at once, still writing the JSON.
#![cfg(target_os = "linux")]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::process::marked;
use common::{path_str, run_args, stderr, wait_with_deadline};

/// Marks every process a try starts (each inherits it), so none can hide.
const MARK_VAR: &str = "LOADERBENCH_TEST_TIMEOUT";

/// Tries per signal.
const TRIES: usize = 5;

/// How long the stopped run may take to end after the signal: its workers, ranks or
/// Python stop (within a second), then the tables, the analysis and the exports are
/// made, which in a debug build on a loaded 2-core machine take seconds. The tries print
/// the figure.
const STOP_LIMIT: Duration = Duration::from_secs(15);

/// A run of seed-light that outlasts any try's time limit: spawned workers on a slow
/// pipeline, four configs of 2 epochs (9 s in all), the first done after about 3 s.
const SLOW_RUN: &[&str] = &[
    "worker_kind=spawn",
    "num_workers=2,1",
    "persistent_workers=false,true",
    "pin_memory=false",
    "extra_configs=[]",
    "samples=1280",
    "batch_size=64",
    "epochs=2",
    "pipeline=[{\"custom\":{\"name\":\"slow\",\"ops\":[{\"cost\":{\"micros_per_sample\":500}}]}}]",
];

/// What one try left.
struct Try {
    output: Output,
    /// From the signal to the end of `timeout`.
    stop: Duration,
    json: serde_json::Value,
    csv: String,
    /// The configs the journal holds.
    journaled: usize,
}

/// `timeout -s SIGNAL AFTER loaderbench run seed-light ...` with `sets` (each a
/// `--set KEY=VALUE`) and JSON and CSV exports, in a fresh folder.
fn try_under_timeout(signal: &str, after: Duration, sets: &[&str]) -> Try {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| dir.path().join(name);
    let mark = path_str(dir.path());
    let mut command = Command::new("timeout");
    command
        .args(["--preserve-status", "-s", signal])
        .arg(format!("{}", after.as_secs_f64()))
        .arg(env!("CARGO_BIN_EXE_loaderbench"))
        .args(run_args("seed-light", sets, &[]))
        .args(["--journal", path_str(&file("journal.jsonl"))])
        .args(["--json", path_str(&file("out.json"))])
        .args(["--csv", path_str(&file("out.csv"))])
        .env(MARK_VAR, mark)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let child = command.spawn().expect("timeout starts");
    let output = wait_with_deadline(child, after + Duration::from_secs(60));
    let stop = started.elapsed().saturating_sub(after);
    let left = marked(MARK_VAR, mark);
    assert!(left.is_empty(), "processes {left:?} outlived the run");
    let json = std::fs::read(file("out.json"))
        .unwrap_or_else(|err| panic!("no JSON export ({err}): {}", stderr(&output)));
    let journal = std::fs::read_to_string(file("journal.jsonl")).unwrap();
    Try {
        json: serde_json::from_slice(&json).expect("a whole JSON export"),
        csv: std::fs::read_to_string(file("out.csv")).expect("a CSV export"),
        journaled: journal
            .lines()
            .filter(|line| line.starts_with(r#"{"entry":"config""#))
            .count(),
        output,
        stop,
    }
}

/// Checks one try: exit code, exports with every journaled config, the stop's length.
fn assert_kept(run: &Try, code: i32, what: &str) {
    let err = stderr(&run.output);
    assert_eq!(run.output.status.code(), Some(code), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_eq!(run.json["status"]["status"], "cancelled", "{what}: {err}");
    let results = run.json["results"].as_array().unwrap();
    assert_eq!(results.len(), run.journaled, "{what}: JSON against journal");
    let csv_rows = run.csv.lines().count() - 1;
    let epochs: usize = results
        .iter()
        .map(|config| config["epochs"].as_array().unwrap().len())
        .sum();
    assert_eq!(csv_rows, epochs, "{what}: a CSV row per epoch");
    assert!(
        run.stop < STOP_LIMIT,
        "{what}: ended {:?} after the signal",
        run.stop
    );
}

/// A try (see [`try_under_timeout`]), said and checked as `what` (see [`assert_kept`]).
fn try_and_check(what: &str, signal: &str, after: Duration, sets: &[&str], code: i32) {
    let run = try_under_timeout(signal, after, sets);
    eprintln!(
        "{what}: {} config(s) kept, ended {:.2} s after the signal",
        run.journaled,
        run.stop.as_secs_f64()
    );
    assert_kept(&run, code, what);
}

/// [`TRIES`] tries of [`SLOW_RUN`] under `timeout -s SIGNAL`, each signalled later than
/// the one before, from 2 s (its spawned workers starting, nothing measured yet) to 4 s
/// (the first config journaled, the next measuring). Not sooner: the debug binary loads
/// libtorch before `main` (0.4-0.5 s here, past 1 s while CI's other lanes run), and a
/// signal then meets no handler yet (a CI run failed that way at 1 s).
fn tries(signal: &str, code: i32) {
    for attempt in 1..=TRIES {
        let what = format!("SIG{signal} try {attempt}");
        let after = Duration::from_secs_f64(2.0 + 2.0 * (attempt - 1) as f64 / (TRIES - 1) as f64);
        try_and_check(&what, signal, after, SLOW_RUN, code);
    }
}

#[test]
fn sigterm_from_timeout_keeps_the_exports_and_exits_143_every_time() {
    tries("TERM", 143);
}

#[test]
fn sigint_from_timeout_keeps_the_exports_and_exits_130_every_time() {
    tries("INT", 130);
}

#[test]
fn sigterm_stops_the_pytorch_runtime_and_keeps_its_exports() {
    let mut sets = SLOW_RUN.to_vec();
    sets.extend([
        "runtime=pytorch",
        "pipeline=[light]",
        "samples=60000",
        "epochs=3",
    ]);
    // Past `import torch` (about 3 s) and into the epochs.
    try_and_check("pytorch", "TERM", Duration::from_secs(8), &sets, 143);
}

#[test]
fn sigterm_stops_the_ranks_and_keeps_their_exports() {
    let mut sets = SLOW_RUN.to_vec();
    sets.push("ranks=2");
    try_and_check("ranks", "TERM", Duration::from_secs(4), &sets, 143);
}

#[test]
fn a_second_signal_a_second_later_quits_at_once_and_still_writes_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let journal = dir.path().join("journal.jsonl");
    let mut command = Command::new(env!("CARGO_BIN_EXE_loaderbench"));
    // Two configs of one and two batches, behind a 4-second training step: a graceful
    // stop waits for the step in hand, so the second signal comes while it waits.
    command
        .args(["run", "seed-light", "--quiet"])
        .args(["--set", "num_workers=0", "--set", "extra_configs=[]"])
        .args(["--set", "pin_memory=false", "--set", "samples=64"])
        .args(["--set", "batch_size=64,32", "--set", "epochs=1"])
        .args(["--set", "step=fixed(4000)"])
        .args(["--journal", path_str(&journal), "--json", path_str(&json)])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = command.spawn().expect("the program starts");
    common::wait_for_configs(&journal, 1, Duration::from_secs(60));
    // Into the second config's first step (its loader is built and settled by then,
    // even on a loaded machine; the step lasts 4 s).
    std::thread::sleep(Duration::from_millis(1500));
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    signal(pid, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(1200));
    let second = Instant::now();
    signal(pid, libc::SIGINT);
    let output = wait_with_deadline(child, Duration::from_secs(20));
    let err = stderr(&output);
    assert!(
        second.elapsed() < Duration::from_millis(1500),
        "the second signal did not quit at once: {err}"
    );
    assert!(err.contains("quitting at once"), "{err}");
    assert_eq!(output.status.code(), Some(130), "{err}");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("the JSON export")).unwrap();
    assert_eq!(result["status"]["status"], "cancelled", "{err}");
    assert_eq!(result["results"].as_array().unwrap().len(), 1, "{err}");
}

fn signal(pid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill takes a pid and a signal number; no pointers.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}
