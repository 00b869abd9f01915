//! Measurement truth, end to end: the interference meter marks configs measured beside a
//! busy loop as disturbed and warns; the consumer's intra-op threads follow the knob and
//! do not take the thread workers' one-thread setting; configs run interleaved across
//! repeats; and a run measured in a child process (as the app measures) streams the
//! same events, waits at each epoch's gate, keeps what it measured when cancelled and
//! leaves no process behind. With Xvfb on PATH, the real window runs a preset through
//! `gui --run --json --exit`.

use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::{IntraOpThreads, Preset};
use loaderbench_measure::measuring_child::ChildRun;
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::{Event, RunOptions};
use tempfile::TempDir;

use crate::common;
use common::runs::{shared_dir, tiny_preset};
use common::{assert_said, loaderbench_command, path_str, run_with_deadline, stderr};

fn run_to_end(plan: Plan, dir: &Path) -> RunResult {
    let options = RunOptions {
        journal: Some(dir.join("journal.jsonl")),
        ..RunOptions::default()
    };
    let handle = loaderbench_measure::spawn(plan, options, || {});
    let mut last = None;
    for event in handle.events().iter() {
        if let Some(result) = event.final_result() {
            last = Some(result.clone());
        }
    }
    last.expect("the run reported an outcome")
}

/// An epoch cut after its window takes the batches already in flight before it ends (out
/// of its time), so nothing of it is left for the next: persistent workers stay into the
/// next epoch, which starts none, and is projected as a whole epoch measures it. The cut
/// dropped the workers, and a persistent config's next epoch paid their start-up again.
#[test]
fn a_persistent_config_cut_after_its_window_keeps_its_workers() {
    let dir = TempDir::new().unwrap();
    let mut preset = tiny_preset(6400, 2);
    for (key, value) in [
        ("num_workers", "2"),
        ("persistent_workers", "true"),
        ("measure", "windows"),
        ("window_s", "0.3"),
        ("step", "fixed(40)"),
    ] {
        preset.set(key, value).unwrap();
    }
    let result = run_to_end(Plan::from_preset(&preset, None).unwrap(), dir.path());
    assert_eq!(result.status, RunStatus::Finished);
    let epochs = &result.results[0].epochs;
    assert!(epochs.iter().all(|e| e.projected.is_some()), "{epochs:#?}");
    assert_eq!(epochs[0].worker_startups.len(), 2);
    assert!(
        epochs[1].worker_startups.is_empty(),
        "{:?}",
        epochs[1].worker_startups
    );
}

/// Each config's result says what measuring it took, from its start to its end: more
/// than its epochs' measured seconds, which leave out its loader's set-up and the rest
/// before each epoch (nw=2 pytorch's windows measured 10.8 s of the 13.3 s it took), and
/// what `resolve` fits its rounds to and the verdicts count more measuring in.
#[test]
fn each_config_s_result_says_what_measuring_it_took() {
    let dir = TempDir::new().unwrap();
    let plan = Plan::from_preset(&tiny_preset(6400, 2), None).unwrap();
    let started = Instant::now();
    let result = run_to_end(plan, dir.path());
    let run_s = started.elapsed().as_secs_f64();
    assert_eq!(result.status, RunStatus::Finished);
    assert_eq!(result.results.len(), 2);
    for measured in &result.results {
        let epochs_s: f64 = (measured.warmup.iter().chain(&measured.epochs))
            .map(|e| e.measured_s())
            .sum();
        let took_s = measured.took_s.expect("what measuring it took");
        assert!(
            epochs_s < took_s && took_s < run_s,
            "{epochs_s} {took_s} {run_s}"
        );
        assert_eq!(measured.cost_s(), took_s);
    }
}

/// Keeps one core busy until dropped.
struct BusyLoop(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl BusyLoop {
    fn start() -> BusyLoop {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut x = 1u64;
            while !flag.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        });
        BusyLoop(stop, Some(thread))
    }
}

impl Drop for BusyLoop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        if let Some(thread) = self.1.take() {
            thread.join().expect("the busy loop ends");
        }
    }
}

/// A CLI run of a small sweep beside a busy core, with its JSON; run once, by the first
/// test that needs it.
#[cfg(target_os = "linux")]
fn beside_a_busy_core() -> &'static (TempDir, Output) {
    static BUSY: OnceLock<(TempDir, Output)> = OnceLock::new();
    let run = BUSY.get_or_init(|| {
        let dir = shared_dir();
        let preset = dir.path().join("small.ron");
        // Long enough epochs that one clock tick of the counters is well under the load.
        tiny_preset(16_384, 2).save(&preset).unwrap();
        let json = dir.path().join("out.json");
        let hog = BusyLoop::start();
        let output = run_with_deadline(
            loaderbench_command(&[
                "run",
                "-q",
                path_str(&preset),
                "--json",
                path_str(&json),
                "--journal",
                path_str(&dir.path().join("j.jsonl")),
            ])
            .current_dir(dir.path()),
            Duration::from_secs(240),
        );
        drop(hog);
        (dir, output)
    });
    assert!(run.1.status.success(), "{}", stderr(&run.1));
    run
}

/// The results of the run beside a busy core.
#[cfg(target_os = "linux")]
fn busy_result() -> RunResult {
    let json = beside_a_busy_core().0.path().join("out.json");
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

#[test]
#[cfg(target_os = "linux")]
fn a_cli_run_beside_a_busy_core_measures_the_other_load() {
    let result = busy_result();
    for config in &result.results {
        let load = config.other_load_cores.expect("Linux has counters");
        assert!(load > 0.5, "{}: other load {load}", config.label);
        for epoch in &config.epochs {
            assert!(epoch.other_load_cores.is_some() && epoch.own_cpu_s.unwrap() > 0.0);
        }
    }
}

#[test]
#[cfg(target_os = "linux")]
fn a_cli_run_beside_a_busy_core_marks_every_config_disturbed() {
    for config in &busy_result().results {
        assert!(config.disturbed, "{} is not marked disturbed", config.label);
    }
}

#[test]
#[cfg(target_os = "linux")]
fn a_cli_run_beside_a_busy_core_warns_that_it_is_disturbed() {
    let output = &beside_a_busy_core().1;
    assert_said(output, "warning: disturbed: nw=0");
}

#[test]
#[cfg(target_os = "linux")]
fn a_cli_run_exports_the_interference_counters_as_json() {
    let json = beside_a_busy_core().0.path().join("out.json");
    let json_text = std::fs::read_to_string(&json).unwrap();
    for field in [
        "other_load_cores",
        "own_cpu_s",
        "\"disturbed\"",
        "intra_op_threads",
    ] {
        assert!(json_text.contains(field), "the JSON lacks {field}");
    }
}

#[test]
fn the_consumer_runs_the_intra_op_threads_asked_for_and_workers_do_not_change_them() {
    let dir = tempfile::tempdir().unwrap();
    let preset = Preset {
        intra_op_threads: vec![IntraOpThreads::Auto, IntraOpThreads::Count(1)],
        step: loaderbench_engine::step::StepSpec::Mlp { hidden: 32 },
        ..tiny_preset(512, 2)
    };
    let result = run_to_end(Plan::from_preset(&preset, None).unwrap(), dir.path());
    assert_eq!(result.status, RunStatus::Finished);
    for config in &result.results {
        let expected = match config.config.intra_op_threads {
            IntraOpThreads::Auto => result.machine.default_intra_op_threads,
            IntraOpThreads::Count(count) => count as i32,
        };
        assert_eq!(
            config.intra_op_threads, expected,
            "{} (num_workers {})",
            config.label, config.config.num_workers
        );
    }
    assert!(result.labels.iter().any(|l| l.contains("threads=")));
}

#[test]
fn repeats_run_interleaved_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let preset = Preset {
        repeats: 2,
        epochs: 1,
        ..tiny_preset(256, 2)
    };
    let result = run_to_end(Plan::from_preset(&preset, None).unwrap(), dir.path());
    let order: Vec<(usize, usize)> = result
        .results
        .iter()
        .map(|r| (r.config_index, r.repeat))
        .collect();
    assert_eq!(order, [(0, 0), (1, 0), (0, 1), (1, 1)]);
}

/// Follows a child run to its end, answering each gate at once; returns the events and
/// the child's process id.
fn follow_child(plan: &Plan, dir: &Path, cancel_after_configs: Option<usize>) -> (Vec<Event>, u32) {
    let gates = Arc::new(AtomicUsize::new(0));
    let counted = gates.clone();
    let run = ChildRun::start(
        plan,
        Some(dir.join("child.jsonl")),
        Some(Path::new(env!("CARGO_BIN_EXE_loaderbench"))),
        None,
        move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        },
        |_| {},
    )
    .unwrap();
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    while Instant::now() < deadline {
        let Ok(event) = run.events().recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        let finished_configs = events
            .iter()
            .filter(|e| matches!(e, Event::ConfigFinished { .. }))
            .count();
        if matches!(event, Event::ConfigFinished { .. })
            && Some(finished_configs + 1) == cancel_after_configs
        {
            run.cancel();
        }
        let ended = event.final_result().is_some();
        events.push(event);
        if ended {
            break;
        }
    }
    if cancel_after_configs.is_none() {
        let epochs = plan.configs.len() * plan.preset.repeats * plan.preset.epochs;
        assert_eq!(gates.load(Ordering::SeqCst), epochs, "one gate per epoch");
    }
    let started = Instant::now();
    while !run.is_finished() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(run.is_finished(), "the child ended");
    (events, run.id().expect("a child process"))
}

#[test]
fn a_measuring_process_killed_before_it_starts_ends_the_run_failed() {
    let dir = tempfile::tempdir().unwrap();
    // Takes the plan, then dies as the OOM killer would end it, before a word.
    let program = dir.path().join("dies-at-once");
    std::fs::write(&program, "#!/bin/sh\nread plan\nkill -9 $$\n").unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let plan = Plan::from_preset(&tiny_preset(256, 1), None).unwrap();
    // Another test's fork may hold the new file open for a moment ("text file busy").
    let run = common::wait_for(Duration::from_secs(10), "the script to start", || {
        ChildRun::start(
            &plan,
            Some(dir.path().join("child.jsonl")),
            Some(&program),
            None,
            |_| {},
            |_| {},
        )
        .ok()
    });
    let event = common::wait_for(Duration::from_secs(60), "the run's last event", || {
        run.events()
            .recv_timeout(Duration::from_millis(100))
            .ok()
            .filter(|event| event.final_result().is_some())
    });
    let Event::Failed {
        error,
        bad_input,
        field,
        result,
    } = event
    else {
        panic!("not a failure: {event:?}");
    };
    assert!(
        error.starts_with("the measuring process ended without finishing (signal: 9 (SIGKILL))"),
        "{error}"
    );
    assert!(!bad_input);
    assert_eq!(field, None);
    assert!(result.results.is_empty());
    assert_eq!(result.configs.len(), plan.configs.len());
}

#[test]
fn a_child_process_measures_with_a_gate_before_every_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan::from_preset(&tiny_preset(512, 2), None).unwrap();
    let (events, _) = follow_child(&plan, dir.path(), None);
    let Some(Event::Finished { result }) = events.last() else {
        panic!("the run did not finish: {:?}", events.last());
    };
    assert_eq!(result.results.len(), 2);
    assert!(result.results.iter().all(|r| r.epochs.len() == 2));
    let epochs = events
        .iter()
        .filter(|e| matches!(e, Event::EpochFinished { .. }))
        .count();
    assert_eq!(epochs, 4);
}

/// A child run of four configs cancelled after its first, run once by the first test
/// that needs it: its events, how many configs it planned, and the child's /proc stat
/// line as it ended (empty once it is gone).
fn cancelled_child_run() -> &'static (Vec<Event>, usize, String) {
    static CANCELLED: OnceLock<(Vec<Event>, usize, String)> = OnceLock::new();
    CANCELLED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let preset = Preset {
            num_workers: vec![0, 2, 0],
            extra_configs: Vec::new(),
            worker_kind: vec![loaderbench_engine::preset::WorkerKind::Spawn],
            ..tiny_preset(20_000, 2)
        };
        let mut plan = Plan::from_preset(&preset, None).unwrap();
        plan.configs.push(plan.configs[0].clone());
        let (events, child) = follow_child(&plan, dir.path(), Some(1));
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        (events, plan.configs.len(), stat)
    })
}

#[test]
fn a_cancelled_child_run_keeps_what_it_measured() {
    let (events, configs, _) = cancelled_child_run();
    let Some(Event::Cancelled { result }) = events.last() else {
        panic!("the run was not cancelled: {:?}", events.last());
    };
    assert!(!result.results.is_empty(), "measured configs are kept");
    assert!(result.results.len() < *configs);
}

#[test]
fn a_cancelled_child_run_leaves_no_process() {
    let (_, _, stat) = cancelled_child_run();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "the measuring child still runs: {stat}"
    );
}

#[test]
#[cfg(feature = "gui")]
fn the_window_runs_a_preset_writes_json_and_exits_with_the_run_s_code() {
    let dir = tempfile::tempdir().unwrap();
    let preset = dir.path().join("small.ron");
    tiny_preset(512, 2).save(&preset).unwrap();
    let json = dir.path().join("app.json");
    let limit = Duration::from_secs(240);
    let Some(output) = common::gui::run_in_window(&preset, &json, dir.path(), limit) else {
        return;
    };
    assert!(output.status.success(), "{}", stderr(&output));
    let result: RunResult = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(result.status, RunStatus::Finished);
    assert_eq!(result.results.len(), 2);
    // A scripted run is not the user's session: the app remembers nothing of it.
    let remembered = dir.path().join(common::gui::DATA_HOME).join("loaderbench");
    let files: Vec<_> = std::fs::read_dir(&remembered)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(files.is_empty(), "{files:?}");
}

#[test]
fn the_aa_check_reports_the_difference_of_a_config_from_its_copy() {
    let dir = tempfile::tempdir().unwrap();
    let output = run_with_deadline(
        &mut loaderbench_command(&[
            "run",
            "aa-check",
            "-q",
            "--set",
            "samples=2048",
            "--set",
            "repeats=2",
            "--journal",
            path_str(&dir.path().join("aa.jsonl")),
        ]),
        Duration::from_secs(240),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = common::stdout(&output);
    assert!(
        printed.contains("A/A check: `nw=0 copy 1` against `nw=0` differs by "),
        "{printed}"
    );
    assert!(printed.contains("over 2 round(s)"), "{printed}");
}
