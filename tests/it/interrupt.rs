//! Ctrl-C in the CLI, as a terminal sends it (SIGINT to the whole process group, spawned
//! workers included): the run stops, every requested export holds the configs finished
//! so far with status `cancelled`, the exit code is 130 and no worker is left; a signal
//! repeated at once is the same request. Also the check those tests (and the other leak
//! checks) rely on: an exited process, reaped or a zombie, is not running.
#![cfg(target_os = "linux")]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use tempfile::TempDir;

use crate::common;
use common::process::{Seen, children_running, running};
use common::runs::{Exports, shared_dir};
use common::{loaderbench_command, path_str, run_args, stderr, wait_with_deadline};

/// The pids of `pid`'s children that run `loaderbench __worker`.
fn workers_of(pid: u32) -> Vec<u32> {
    children_running(pid, "__worker")
}

/// A sweep of four spawned-worker configs, each a few seconds long, in its own process
/// group so the test can signal the group as a terminal does.
fn start_run(dir: &Path, extra: &[&str]) -> Child {
    start_sweep(dir, "samples=6400", extra, |_| {})
}

/// [`start_run`]'s sweep on `samples` (a `--set`), its command set up by `configure`
/// before it starts.
fn start_sweep(
    dir: &Path,
    samples: &str,
    extra: &[&str],
    configure: impl FnOnce(&mut Command),
) -> Child {
    let journal = dir.join("journal.jsonl");
    let sets = [
        "worker_kind=spawn",
        "num_workers=2",
        samples,
        "batch_size=64",
        "epochs=2",
        "pipeline=[{\"custom\":{\"name\":\"slow\",\"ops\":[{\"cost\":{\"micros_per_sample\":500}}]}}]",
    ];
    let mut args = run_args("seed-light", &sets, &["--journal", path_str(&journal)]);
    args.extend_from_slice(extra);
    let mut command = loaderbench_command(&args);
    // Baselines it saves go to the test's folder.
    command
        .env("LOADERBENCH_DATA_DIR", dir)
        .stdout(Stdio::null())
        .process_group(0);
    configure(&mut command);
    command.spawn().expect("the program starts")
}

fn signal_group(child: &Child, signal: libc::c_int) {
    let group = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill takes a process group id and a signal number; no pointers.
    assert_eq!(unsafe { libc::kill(-group, signal) }, 0);
}

/// A sweep with every export stopped by Ctrl-C during its second config, and what was
/// seen as it ended; run once, by the first test that needs it.
struct Interrupted {
    dir: TempDir,
    /// The second config's workers, seen before the signal.
    workers: Vec<u32>,
    output: Output,
    /// The workers the CLI still had when it ended.
    workers_after: Vec<u32>,
    /// The workers still running when it ended.
    left: Vec<u32>,
}

static INTERRUPTED: OnceLock<Interrupted> = OnceLock::new();

impl Interrupted {
    fn get() -> &'static Interrupted {
        INTERRUPTED.get_or_init(|| {
            let dir = shared_dir();
            let exports = Exports::in_dir(dir.path(), "out");
            let mut args = exports.args().to_vec();
            args.extend(["--save-baseline", "cancelled"]);
            let child = start_run(dir.path(), &args);
            common::wait_for_configs(
                &dir.path().join("journal.jsonl"),
                1,
                Duration::from_secs(120),
            );
            // None seen in time is what `ctrl_c_leaves_no_worker_behind` reports.
            let workers = common::poll(Duration::from_secs(30), || {
                Some(workers_of(child.id())).filter(|workers| !workers.is_empty())
            })
            .unwrap_or_default();
            let seen: Vec<Seen> = workers.iter().filter_map(|&w| Seen::now(w)).collect();
            signal_group(&child, libc::SIGINT);
            let pid = child.id();
            let output = wait_with_deadline(child, Duration::from_secs(20));
            let workers_after = workers_of(pid);
            let left = seen
                .into_iter()
                .filter(Seen::running)
                .map(|s| s.pid)
                .collect();
            Interrupted {
                dir,
                workers,
                output,
                workers_after,
                left,
            }
        })
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The configs the JSON export holds.
    fn results(&self) -> Vec<serde_json::Value> {
        let result: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.file("out.json")).unwrap()).unwrap();
        result["results"].as_array().unwrap().clone()
    }
}

#[test]
fn ctrl_c_exits_130_without_a_panic() {
    let output = &Interrupted::get().output;
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn ctrl_c_leaves_no_worker_behind() {
    let run = Interrupted::get();
    assert!(
        !run.workers.is_empty(),
        "the second config started no worker"
    );
    assert!(run.workers_after.is_empty());
    assert!(
        run.left.is_empty(),
        "workers {:?} outlived the run",
        run.left
    );
}

#[test]
fn ctrl_c_writes_the_json_with_the_finished_configs_as_cancelled() {
    let run = Interrupted::get();
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.file("out.json")).unwrap()).unwrap();
    assert_eq!(result["status"]["status"], "cancelled", "{result}");
    let results = run.results();
    assert!(
        !results.is_empty() && results.len() < 4,
        "{} configs",
        results.len()
    );
    for config in &results {
        assert_eq!(config["epochs"].as_array().unwrap().len(), 2, "{config}");
    }
}

#[test]
fn ctrl_c_writes_the_csv_with_the_finished_configs() {
    let csv = std::fs::read_to_string(Interrupted::get().file("out.csv")).unwrap();
    assert!(csv.lines().count() > 1, "{csv}");
}

#[test]
fn ctrl_c_writes_the_markdown_with_the_finished_configs() {
    let run = Interrupted::get();
    let md = std::fs::read_to_string(run.file("out.md")).unwrap();
    let rows = md.lines().filter(|line| line.starts_with("| 2 ")).count();
    assert_eq!(rows, run.results().len(), "{md}");
}

#[test]
fn ctrl_c_saves_no_baseline_so_a_whole_one_of_that_name_is_kept() {
    let run = Interrupted::get();
    let err = stderr(&run.output);
    assert!(
        err.contains(
            "baseline `cancelled` not saved: the run was cancelled; a baseline keeps a \
             finished run"
        ),
        "{err}"
    );
    assert!(!run.file("baselines/cancelled.json").exists());
}

#[test]
fn a_run_under_nohup_outlives_its_terminal_s_hangup() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    // As `nohup` starts it: SIGHUP ignored. It runs to its end, so on a fifth of the
    // samples: its three configs after the hangup still take seconds (each epoch starts
    // its spawned workers), where the whole sweep of `start_run` burns 30 s of CPU.
    let json_args = ["--json", path_str(&json)];
    let child = start_sweep(dir.path(), "samples=1280", &json_args, |command| {
        // SAFETY: between fork and exec only signal(), which is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                Ok(())
            });
        }
    });
    common::wait_for_configs(
        &dir.path().join("journal.jsonl"),
        1,
        Duration::from_secs(120),
    );
    // A closed terminal hangs up the whole group, mid-sweep (three configs to go).
    signal_group(&child, libc::SIGHUP);
    let output = wait_with_deadline(child, Duration::from_secs(180));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("the JSON export")).unwrap();
    assert_eq!(result["status"]["status"], "finished", "{err}");
    let configs = result["configs"].as_array().unwrap().len();
    let repeats = result["repeats"].as_u64().unwrap() as usize;
    assert_eq!(
        result["results"].as_array().unwrap().len(),
        configs * repeats
    );
}

#[test]
fn a_signal_repeated_at_once_is_one_request_and_sigterm_exits_143() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let child = start_run(dir.path(), &["--json", json.to_str().unwrap()]);
    common::wait_for_configs(
        &dir.path().join("journal.jsonl"),
        1,
        Duration::from_secs(120),
    );
    // As a scheduler stops a job: SIGTERM to the process, then to its group.
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill takes a pid and a signal number; no pointers.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    signal_group(&child, libc::SIGTERM);
    let output = wait_with_deadline(child, Duration::from_secs(20));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(143), "{err}");
    assert!(!err.contains("quitting at once"), "{err}");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("the JSON export")).unwrap();
    assert_eq!(result["status"]["status"], "cancelled", "{err}");
}

/// Starts `program ARGS` as a child of this test.
fn child(program: &str, args: &[&str]) -> Child {
    std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("the program starts")
}

#[test]
fn a_live_child_is_running() {
    let mut sleeper = child("sleep", &["30"]);
    let is_running = running(sleeper.id());
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    assert!(is_running);
}

#[test]
fn an_exited_child_not_yet_reaped_is_not_running() {
    let mut done = child("true", &[]);
    let pid = done.id();
    // Not waited for, the exited child stays a zombie.
    common::wait_until(Duration::from_secs(10), "`true` to exit", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
    });
    let zombie_running = running(pid);
    done.wait().unwrap();
    assert!(!zombie_running, "a zombie counted as running");
}

#[test]
fn a_reaped_child_is_not_running() {
    let mut done = child("true", &[]);
    done.wait().unwrap();
    assert!(!running(done.id()));
}

/// Ctrl-C while a finished sweep is measured further (`run --recommend`) stops the
/// rounds and exits 130, and the results keep the run's status, `finished`: its sweep
/// finished, and so did every round kept (the app showed such a run as cancelled).
#[test]
fn ctrl_c_while_resolving_keeps_the_finished_run_finished() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    // A run whose sweep decides the question (a machine busy enough for one config to
    // beat the other beyond the noise) measures no round: it is run again, three times
    // at most, each attempt's lines kept for the failure's message.
    let mut attempts = Vec::new();
    let (child, lines, mut seen) = loop {
        assert!(
            attempts.len() < 3,
            "no resolving round began: {attempts:#?}"
        );
        let mut child = resolving_run(dir.path(), &json, attempts.len())
            .spawn()
            .expect("starts");
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
        let mut seen = Vec::new();
        let round = lines.by_ref().map_while(Result::ok).find(|line| {
            seen.push(line.clone());
            line.starts_with("round ")
        });
        if round.is_some() {
            break (child, lines, seen);
        }
        wait_with_deadline(child, Duration::from_secs(60));
        attempts.push(seen);
    };
    // While a round's measuring process runs, as a terminal's Ctrl-C finds it. That
    // process leaves the signals to this one, which stops it and keeps its round: killed
    // by the signal, its round was lost and the run said failed ("the measuring process
    // ended without finishing", or "cannot hand the plan over" when it died starting),
    // as often as not, by which of the two processes saw the signal first.
    let mut measuring = Vec::new();
    common::wait_until(
        Duration::from_secs(60),
        "a round's measuring process",
        || {
            measuring = children_running(child.id(), "__measure");
            !measuring.is_empty()
        },
    );
    let ignored = std::fs::read_to_string(format!("/proc/{}/status", measuring[0]))
        .ok()
        .and_then(|status| {
            let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        });
    if let Some(ignored) = ignored {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert!(
                ignored & (1 << (signal - 1)) != 0,
                "signal {signal} reaches the measuring process (ignored: {ignored:#x})"
            );
        }
    }
    signal_group(&child, libc::SIGINT);
    let output = wait_with_deadline(child, Duration::from_secs(60));
    seen.extend(lines.map_while(Result::ok));
    assert_eq!(output.status.code(), Some(130), "{seen:#?}");
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        result["status"]["status"], "finished",
        "{}",
        result["status"]
    );
    assert!(
        result["results"].as_array().unwrap().len() >= 2,
        "{}",
        result["labels"]
    );
}

/// `run --recommend` on two configs about as fast (one worker, a prefetch queue of 2 or
/// 3 batches), one round each, and no tie margin: the question stays open, so it is
/// measured further; in its own process group, standard error piped, journaled apart
/// for each `attempt`.
fn resolving_run(dir: &Path, json: &Path, attempt: usize) -> std::process::Command {
    let mut command = loaderbench_command(&[
        "run",
        "seed-light",
        "--recommend",
        "--resolve-for",
        "10m",
        "--set",
        "samples=2048",
        "--set",
        "num_workers=1",
        "--set",
        "prefetch_factor=2,3",
        "--set",
        "extra_configs=[]",
        "--set",
        "repeats=1",
        "--set",
        "tie_margin=0",
        "--journal",
        path_str(&dir.join(format!("journal-{attempt}.jsonl"))),
        "--json",
        path_str(json),
    ]);
    command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    command
}
