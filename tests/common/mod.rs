//! Helpers the integration tests share: running the `loaderbench` binary as a process
//! with a deadline (a hang fails the test instead of stalling the suite), reading what it
//! printed, and the loader settings the loader tests start from; the presets and saved
//! runs tests start from are in [`runs`], the processes they check in [`process`]. Each
//! test binary uses some of them.
#![allow(dead_code)]

#[cfg(feature = "gui")]
pub mod gui;
pub mod nginx;
pub mod process;
pub mod runs;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use loaderbench_engine::loader::LoaderSettings;
use loaderbench_engine::plan::Config;

/// `loaderbench ARGS` with no standard input and its output captured.
pub fn loaderbench_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_loaderbench"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// How long one `loaderbench` command in a test may take before it counts as hung.
pub const CLI_LIMIT: Duration = Duration::from_secs(240);

/// Runs `loaderbench ARGS`, failing the test if it takes longer than [`CLI_LIMIT`].
pub fn loaderbench(args: &[&str]) -> Output {
    loaderbench_with(args, &[])
}

/// Runs `loaderbench ARGS` with the environment variables `vars` set, failing the test
/// if it takes longer than [`CLI_LIMIT`].
pub fn loaderbench_with(args: &[&str], vars: &[(&str, &OsStr)]) -> Output {
    let mut command = loaderbench_command(args);
    command.envs(vars.iter().copied());
    run_with_deadline(&mut command, CLI_LIMIT)
}

/// Runs `command`, failing the test if it takes longer than `limit`.
pub fn run_with_deadline(command: &mut Command, limit: Duration) -> Output {
    wait_with_deadline(command.spawn().expect("the program starts"), limit)
}

/// Waits for `child`, killing it and failing the test after `limit`.
pub fn wait_with_deadline(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("waitable").is_none() {
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("the child process hung for {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Whether the tests run in CI, as CI services (and `.ci/run`'s callers) say with `CI`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.as_str(), "" | "false" | "0"))
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// Small shuffled batches of 8 on the CPU with `num_workers` workers.
pub fn loader_settings(num_workers: usize, persistent: bool) -> LoaderSettings {
    LoaderSettings {
        knobs: Config {
            batch_size: 8,
            num_workers,
            persistent_workers: persistent,
            ..Config::default()
        },
        shuffle: true,
        seed: 7,
        drop_last: false,
        worker_timeout: Duration::from_secs(30),
        shard: loaderbench_engine::loader::Shard::WHOLE,
    }
}
