//! Helpers the integration tests share: running the `loaderbench` binary as a process
//! with a deadline (a hang fails the test instead of stalling the suite), the words of a
//! run, waiting on a condition, reading what a command printed (its one error line
//! included), and the loader settings and light-pipeline loader the loader tests start
//! from; the presets and saved
//! runs tests start from are in [`runs`], the processes they check in [`process`], the
//! JPEGs of every coding in [`jpeg`]. Each test binary uses some of them.
#![allow(dead_code)]

#[cfg(feature = "gui")]
pub mod gui;
pub mod jpeg;
pub mod nginx;
pub mod process;
pub mod runs;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::Dataset;
use loaderbench_engine::loader::{Loader, LoaderSettings};
use loaderbench_engine::transform::{Normalize, Pipeline, PipelineSpec};
use loaderbench_measure::pytorch;

/// `loaderbench ARGS` with no standard input and its output captured, offered the test
/// binary's [shared preloaded Python](shared_preloaded_python).
pub fn loaderbench_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_loaderbench"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(preloaded) = shared_preloaded_python() {
        preloaded.share_with(&mut command);
    }
    command
}

/// The preloaded Python every loaderbench process a test starts is offered, as tune
/// offers its rounds one, started with the first: a PyTorch run forks its scripts from it
/// instead of importing torch again (seconds of CPU a run). A run given other
/// environment variables starts its own; a test that looks at a run's processes takes
/// the offer away ([`process::own_processes`]).
pub fn shared_preloaded_python() -> Option<&'static pytorch::SharedPreloadedPython> {
    static SHARED: std::sync::OnceLock<Option<pytorch::SharedPreloadedPython>> =
        std::sync::OnceLock::new();
    SHARED
        .get_or_init(|| pytorch::SharedPreloadedPython::start(&pytorch::python_path()).ok()?)
        .as_ref()
}

/// `run PRESET -q`, each of `sets` as `--set KEY=VALUE`, then `extra`: the words of a
/// quiet run as the tests write it.
pub fn run_args<'a>(preset: &'a str, sets: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", preset, "-q"];
    for set in sets {
        args.extend(["--set", set]);
    }
    args.extend_from_slice(extra);
    args
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

/// The variable that tells a test binary it runs as [`in_own_process`]'s child.
const OWN_PROCESS_VAR: &str = "LOADERBENCH_TEST_IN_OWN_PROCESS";

/// For a test that needs a process of its own (an environment of its own, say): in the
/// test binary as run, runs the test `name` of `module` (its `module_path!()`) again in a
/// child process of this binary, with `configure` applied to its command, checks that it
/// passed there and returns `false`, so the caller returns; in that child, returns `true`
/// and the caller goes on with the test.
pub fn in_own_process(module: &str, name: &str, configure: impl FnOnce(&mut Command)) -> bool {
    // Test names are module paths without the crate's name.
    let module = module.split_once("::").map_or("", |(_, inner)| inner);
    let test = format!("{module}::{name}");
    if std::env::var(OWN_PROCESS_VAR).is_ok_and(|value| value == test) {
        return true;
    }
    let mut command = Command::new(std::env::current_exe().expect("this test binary"));
    command
        .args([test.as_str(), "--exact", "--nocapture"])
        .env(OWN_PROCESS_VAR, &test)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    configure(&mut command);
    let output = run_with_deadline(&mut command, Duration::from_secs(240));
    let (out, err) = (stdout(&output), stderr(&output));
    assert!(
        output.status.success(),
        "{test} in its own process: {out}{err}"
    );
    assert!(out.contains("1 passed"), "the child ran {test}: {out}");
    false
}

/// Polls `ready` every 10 ms until it gives a value, or `None` once `limit` has passed:
/// the one deadline loop, for a test that says itself what a value never given means.
pub fn poll<T>(limit: Duration, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = ready() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `ready` until it gives a value, failing the test after `limit` with `what` it
/// waited for: a wait on a condition, never a guess at how long something takes.
pub fn wait_for<T>(limit: Duration, what: &str, ready: impl FnMut() -> Option<T>) -> T {
    poll(limit, ready).unwrap_or_else(|| panic!("waited {limit:?} for {what}"))
}

/// Polls until `condition` holds (see [`wait_for`]).
pub fn wait_until(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    wait_for(limit, what, || condition().then_some(()));
}

/// The configs a run's journal says are finished so far.
pub fn journaled_configs(journal: &Path) -> usize {
    std::fs::read_to_string(journal).map_or(0, |text| {
        text.lines()
            .filter(|line| line.starts_with(r#"{"entry":"config""#))
            .count()
    })
}

/// Waits until `journal` holds `configs` finished configs.
pub fn wait_for_configs(journal: &Path, configs: usize, limit: Duration) {
    let what = format!("{configs} finished configs in {}", journal.display());
    wait_until(limit, &what, || journaled_configs(journal) >= configs);
}

/// The PNG at `path` once a background thread has written it: a saved file appears
/// whole or not at all, so the first one seen must decode.
pub fn whole_png(path: &Path) -> image::RgbaImage {
    let what = format!("a PNG at {}", path.display());
    wait_until(Duration::from_secs(60), &what, || path.exists());
    image::open(path)
        .unwrap_or_else(|err| panic!("{} is not a whole PNG: {err}", path.display()))
        .to_rgba8()
}

/// Whether the tests run in CI, as CI services (and `.ci/run`'s callers) say with `CI`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.as_str(), "" | "false" | "0"))
}

/// The one `error:` line a command printed (without its prefix) and its exit code,
/// after checking that it did not panic and printed exactly one such line.
pub fn error_line(output: &Output) -> (String, i32) {
    let err = stderr(output);
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("error: "))
        .collect();
    assert_eq!(lines.len(), 1, "one error line: {err}");
    (lines[0].to_owned(), output.status.code().unwrap_or(-1))
}

/// The one `error:` line of a command that exited with `code`, holding each of
/// `fragments` (see [`error_line`]).
pub fn assert_error_line(output: &Output, code: i32, fragments: &[&str]) -> String {
    let (line, status) = error_line(output);
    assert_eq!(status, code, "exit code for `{line}`");
    for fragment in fragments {
        assert!(line.contains(fragment), "`{fragment}` missing from: {line}");
    }
    line
}

/// The row of a printed table (a line of `text`) that starts with `start`, its first
/// cell, failing the test with the whole text when there is none.
pub fn table_row<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|line| line.starts_with(start))
        .unwrap_or_else(|| panic!("no row starting `{start}` in: {text}"))
}

/// Checks that a command's standard error holds `fragment` (a warning, a note), showing
/// all of it otherwise.
pub fn assert_said(output: &Output, fragment: &str) {
    let err = stderr(output);
    assert!(err.contains(fragment), "`{fragment}` missing from: {err}");
}

/// Checks that a command's standard output holds `fragment`, showing all of it
/// otherwise.
pub fn assert_printed(output: &Output, fragment: &str) {
    let out = stdout(output);
    assert!(out.contains(fragment), "`{fragment}` missing from: {out}");
}

/// Checks that a command exited with `code` and that its one `error:` line ends with
/// `message` (the user's file, line and problem, as user code errors read).
pub fn assert_fails(output: &Output, message: &str, code: i32) {
    let (line, status) = error_line(output);
    assert!(
        line.ends_with(message),
        "`{line}` should end with `{message}`"
    );
    assert_eq!(status, code, "exit code for `{line}`");
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The JSON file at `path`, as a value.
pub fn json_file(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// Small shuffled batches of 8 on the CPU with `num_workers` workers.
pub fn loader_settings(num_workers: usize, persistent: bool) -> LoaderSettings {
    LoaderSettings {
        batch_size: 8,
        num_workers,
        persistent_workers: persistent,
        shuffle: true,
        seed: 7,
        drop_last: false,
        worker_timeout: Duration::from_secs(30),
        shard: loaderbench_engine::loader::Shard::WHOLE,
        shuffle_buffer: 0,
        ..LoaderSettings::default()
    }
}

/// The first error an epoch of `loader` yields, failing the test if the epoch ends
/// without one.
pub fn first_error(loader: &mut Loader) -> loaderbench_engine::Error {
    let mut epoch = loader.epoch().unwrap();
    epoch
        .find_map(|batch| batch.err())
        .expect("the epoch ended without an error")
}

/// Every sample of `dataset` read in index order: its label and pixels (channels-first
/// bytes).
pub fn every_sample(dataset: &dyn Dataset) -> Vec<(i64, Vec<u8>)> {
    (0..dataset.len())
        .map(|index| {
            let mut pixels = vec![0; dataset.shape().sample_bytes()];
            let label = dataset.read(index, &mut pixels).unwrap();
            (label, pixels)
        })
        .collect()
}

/// A loader of `dataset` (samples of `channels` channels) through the light pipeline,
/// normalized as by default, with `settings`, stopped by `cancel`.
pub fn light_loader(
    dataset: Arc<dyn Dataset>,
    channels: usize,
    settings: LoaderSettings,
    cancel: CancelToken,
) -> Loader {
    let pipeline = Pipeline::new(&PipelineSpec::Light, &Normalize::default(), channels).unwrap();
    Loader::new(dataset, Arc::new(pipeline), settings, cancel).unwrap()
}

/// An image folder of two classes with `per_class` 128×128 PNGs of noise each (which PNG
/// cannot compress, so every file is about 48 KiB), written and synced in a new folder
/// inside `parent`; with the bytes of all its images.
pub fn noisy_image_folder(parent: &Path, per_class: u32) -> (tempfile::TempDir, u64) {
    let dir = tempfile::TempDir::new_in(parent).expect("a folder");
    let mut seed = 1u32;
    let mut total = 0;
    for class in ["cat", "dog"] {
        std::fs::create_dir(dir.path().join(class)).expect("a class folder");
        for i in 0..per_class {
            let image = image::RgbImage::from_fn(128, 128, |_, _| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let [r, g, b, _] = seed.to_le_bytes();
                image::Rgb([r, g, b])
            });
            let path = dir.path().join(class).join(format!("{i}.png"));
            image.save(&path).expect("a PNG");
            let file = std::fs::File::open(&path).expect("the PNG");
            file.sync_all().expect("synced");
            total += file.metadata().expect("its size").len();
        }
    }
    (dir, total)
}
