//! Ctrl-C in the CLI, as a terminal sends it (SIGINT to the whole process group, spawned
//! workers included): the run stops, every requested export holds the configs finished
//! so far with status `cancelled`, the exit code is 130 and no worker is left. Also the
//! check those tests (and the other leak checks) rely on: an exited process, reaped or a
//! zombie, is not running.
#![cfg(target_os = "linux")]

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::process::{children_of, running};
use common::{loaderbench_command, stderr, wait_with_deadline};

/// The pids of `pid`'s children that run `loaderbench __worker`.
fn workers_of(pid: u32) -> Vec<u32> {
    children_of(pid)
        .into_iter()
        .filter(|child| {
            std::fs::read(format!("/proc/{child}/cmdline"))
                .is_ok_and(|cmdline| cmdline.split(|&b| b == 0).any(|arg| arg == b"__worker"))
        })
        .collect()
}

/// A sweep of four spawned-worker configs, each a few seconds long, in its own process
/// group so the test can signal the group as a terminal does.
fn start_run(dir: &Path, extra: &[&str]) -> Child {
    let journal = dir.join("journal.jsonl");
    let mut args = vec![
        "run",
        "seed-light",
        "--quiet",
        "--set",
        "worker_kind=spawn",
        "--set",
        "num_workers=2",
        "--set",
        "samples=6400",
        "--set",
        "batch_size=64",
        "--set",
        "epochs=2",
        "--set",
        "pipeline=[{\"custom\":{\"name\":\"slow\",\"ops\":[{\"cost\":{\"micros_per_sample\":500}}]}}]",
        "--journal",
        journal.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut command = loaderbench_command(&args);
    command.stdout(Stdio::null()).process_group(0);
    command.spawn().expect("the program starts")
}

/// Waits until the journal holds `configs` finished configs.
fn wait_for_configs(dir: &Path, configs: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let journal = dir.join("journal.jsonl");
    while std::fs::read_to_string(&journal)
        .map(|text| {
            text.lines()
                .filter(|line| line.starts_with(r#"{"entry":"config""#))
                .count()
        })
        .unwrap_or(0)
        < configs
    {
        assert!(
            Instant::now() < deadline,
            "no config finished in two minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal_group(child: &Child, signal: libc::c_int) {
    let group = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill takes a process group id and a signal number; no pointers.
    assert_eq!(unsafe { libc::kill(-group, signal) }, 0);
}

#[test]
fn ctrl_c_writes_every_export_with_the_finished_configs_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv, md) = (
        dir.path().join("out.json"),
        dir.path().join("out.csv"),
        dir.path().join("out.md"),
    );
    let child = start_run(
        dir.path(),
        &[
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--md",
            md.to_str().unwrap(),
        ],
    );
    wait_for_configs(dir.path(), 1);
    let deadline = Instant::now() + Duration::from_secs(30);
    let workers = loop {
        let workers = workers_of(child.id());
        if !workers.is_empty() || Instant::now() > deadline {
            break workers;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(!workers.is_empty(), "the second config started no worker");
    signal_group(&child, libc::SIGINT);
    let pid = child.id();
    let output = wait_with_deadline(child, Duration::from_secs(20));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(workers_of(pid).is_empty());
    let left: Vec<u32> = workers.into_iter().filter(|&w| running(w)).collect();
    assert!(left.is_empty(), "workers {left:?} outlived the run");

    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(result["status"]["status"], "cancelled", "{result}");
    let results = result["results"].as_array().unwrap();
    assert!(
        !results.is_empty() && results.len() < 4,
        "{} configs",
        results.len()
    );
    for config in results {
        assert_eq!(config["epochs"].as_array().unwrap().len(), 2, "{config}");
    }
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.lines().count() > 1, "{csv}");
    let md = std::fs::read_to_string(&md).unwrap();
    let rows = md.lines().filter(|line| line.starts_with("| 2 ")).count();
    assert_eq!(rows, results.len(), "{md}");
}

#[test]
fn a_second_ctrl_c_exits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let child = start_run(dir.path(), &["--json", json.to_str().unwrap()]);
    wait_for_configs(dir.path(), 1);
    signal_group(&child, libc::SIGTERM);
    signal_group(&child, libc::SIGINT);
    let output = wait_with_deadline(child, Duration::from_secs(20));
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
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
    let deadline = Instant::now() + Duration::from_secs(10);
    // Not waited for, the exited child stays a zombie.
    while !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z ")) {
        assert!(Instant::now() < deadline, "`true` did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
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
