//! The PyTorch runtime for real: tiny configs through the real
//! `torch.utils.data.DataLoader` (no workers, fork and spawn workers) streaming the same
//! events as our loader; the synthetic dataset reaching PyTorch byte for byte; each way
//! it can fail (no Python, no torch, a failing script, a killed worker) ending as a clear
//! error rather than a hang; cancelling leaving no process behind; `compare` as a
//! process; and seed-light-pytorch recommending per runtime, with a PyTorch snippet that
//! builds a working DataLoader. Tests that start Python take turns: they find its
//! processes by parentage.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use loaderbench_analysis::Analysis;
use loaderbench_engine::dataset::{DatasetSpec, open};
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::{Cache, Preset};
use loaderbench_engine::transform::PipelineSpec;
use loaderbench_measure::pytorch::{self, DatasetRequest, Request};
use loaderbench_measure::results_file;
use loaderbench_measure::{Event, RunHandle, RunOptions};
use tempfile::TempDir;

use crate::common;
use crate::loader_snippet::Snippet;
use common::process::{
    Seen, children_of, children_running, marked, own_processes, python_in, python_turn,
    pytorch_scripts_of,
};
use common::runs::{SavedRun, shared_dir};
use common::{
    assert_error_line, json_file, loaderbench, loaderbench_command, loaderbench_with,
    noisy_image_folder, path_str, wait_with_deadline,
};

/// A tiny preset on the PyTorch runtime (256 samples in batches of 64), with `sets`.
fn pytorch_preset(sets: &[(&str, &str)]) -> Preset {
    let mut preset = Preset {
        name: "tiny-pytorch".to_owned(),
        samples: Some(256),
        batch_size: vec![64],
        ..Preset::default()
    };
    preset.set("runtime", "pytorch").unwrap();
    for (key, value) in sets {
        preset.set(key, value).unwrap();
    }
    preset
}

fn start(preset: &Preset, dir: &TempDir) -> (Plan, RunHandle) {
    let plan = Plan::from_preset(preset, None).unwrap();
    let options = RunOptions {
        journal: Some(dir.path().join("journal.jsonl")),
        ..RunOptions::default()
    };
    let handle = loaderbench_measure::spawn(plan.clone(), options, || {});
    (plan, handle)
}

/// Every event until the run ends, failing the test after `limit`.
fn events_until_end(handle: &RunHandle, limit: Duration) -> Vec<Event> {
    let deadline = Instant::now() + limit;
    let mut events = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = handle
            .events()
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no end within {limit:?}; got {events:#?}"));
        let end = event.final_result().is_some();
        events.push(event);
        if end {
            return events;
        }
    }
}

/// What one `loaderbench run` of a PyTorch preset did: the script processes it ran,
/// each with its parent, as /proc showed them every 20 ms, and its results.
struct ScriptsSeen {
    scripts: BTreeMap<u32, u32>,
    results: serde_json::Value,
}

fn run_seeing_scripts(preset: &str, saved: &SavedRun, preload: &str) -> ScriptsSeen {
    let mut cli = own_processes(&mut loaderbench_command(&saved.run_args(preset, &[])))
        .env(pytorch::PRELOAD_VAR, preload)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut scripts = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    while cli.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the run hung");
        for script in pytorch_scripts_of(cli.id()) {
            if let Some(parent) = parent_of(script as i32) {
                scripts.insert(script, parent as u32);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = cli.wait().unwrap();
    assert!(status.success(), "{status}");
    ScriptsSeen {
        scripts,
        results: saved.exported(),
    }
}

/// The peak resident and private bytes of each config's script, in config order.
fn scripts_peaks(results: &serde_json::Value) -> Vec<(u64, u64)> {
    let measured = results["results"].as_array().unwrap();
    measured
        .iter()
        .map(|result| {
            let processes = result["processes"].as_array().unwrap();
            let main = processes.iter().find(|p| p["kind"] == "main").unwrap();
            let epochs = main["epochs"].as_array().unwrap();
            let peak = |field: &str| {
                let peaks = epochs.iter().map(|e| e[field].as_u64().unwrap());
                peaks.max().unwrap()
            };
            (peak("peak_rss_bytes"), peak("peak_private_bytes"))
        })
        .collect()
}

#[test]
fn a_run_s_scripts_are_forked_by_one_preloaded_python_and_weigh_what_fresh_ones_do() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let preset = pytorch_preset(&[("num_workers", "0,2"), ("samples", "2048")]);
    let preset = write_preset(&dir, &preset);
    let saved = |name: &str| SavedRun {
        json: dir.path().join(format!("{name}.json")),
        journal: dir.path().join(format!("{name}.jsonl")),
    };
    let forked = run_seeing_scripts(&preset, &saved("forked"), "1");
    let fresh = run_seeing_scripts(&preset, &saved("fresh"), "0");

    // Two configs, two scripts: with preloading, both children of one process (itself a
    // child of loaderbench, which imported torch once); without, loaderbench's own.
    assert_eq!(forked.scripts.len(), 2, "{:?}", forked.scripts);
    let parents: BTreeSet<u32> = forked.scripts.values().copied().collect();
    assert_eq!(parents.len(), 1, "{:?}", forked.scripts);
    let preloaded = *parents.first().unwrap();
    assert_eq!(fresh.scripts.len(), 2, "{:?}", fresh.scripts);
    let fresh_parents: BTreeSet<u32> = fresh.scripts.values().copied().collect();
    assert_eq!(fresh_parents.len(), 1, "{:?}", fresh.scripts);
    assert!(!fresh_parents.contains(&preloaded));

    // The memory figures are proportional set sizes, which other processes mapping the
    // same libraries (libtorch: every test binary here) lower, so the runs are compared
    // on what makes them: the pages the script maps (resident bytes: a forked script
    // not given the library pages a fresh one maps has about 200 MB fewer) and those it
    // holds alone (private bytes: one still sharing its pages with the preloaded Python
    // holds a few MB alone, a fresh one hundreds).
    let (forked_peaks, fresh_peaks) = (
        scripts_peaks(&forked.results),
        scripts_peaks(&fresh.results),
    );
    let peaks = format!("forked {forked_peaks:?}, fresh {fresh_peaks:?} (resident, private)");
    for ((forked_rss, forked_private), (fresh_rss, fresh_private)) in
        forked_peaks.iter().zip(&fresh_peaks)
    {
        let resident = *forked_rss as f64 / *fresh_rss as f64;
        assert!((0.9..1.1).contains(&resident), "{peaks}");
        let private = *forked_private as f64 / *fresh_private as f64;
        assert!((0.5..2.0).contains(&private), "{peaks}");
    }
}

#[test]
#[cfg(target_os = "linux")]
fn a_tune_s_rounds_fork_their_scripts_from_one_shared_preloaded_python_and_count_them_as_theirs() {
    let dir = TempDir::new().unwrap();
    // Small configs, so that a loaded machine still fits several rounds in the budget. It
    // settles in about 10 s (four rounds) on a quiet machine; the budget is room for a
    // busy one, where the first round also waits for the preloaded Python's `import torch`
    // (20 s once left a single round; a loaded test run spends the whole budget).
    let preset = pytorch_preset(&[
        ("num_workers", "0,2"),
        ("samples", "512"),
        ("epochs", "1"),
        ("measure", "epochs"),
    ]);
    let preset = write_preset(&dir, &preset);
    let json = dir.path().join("tune.json");
    let journal = dir.path().join("tune.jsonl");
    let args = [
        "tune",
        &preset,
        "--budget",
        "30s",
        "-q",
        "--json",
        path_str(&json),
        "--journal",
        path_str(&journal),
    ];
    // Its processes are found below it.
    let mut tune = own_processes(&mut loaderbench_command(&args))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Each script seen, with its parent; and any Python a round's process started.
    let mut scripts = BTreeMap::new();
    let mut under_rounds = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    while tune.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the tune hung");
        for script in pytorch_scripts_of(tune.id()) {
            if let Some(parent) = parent_of(script as i32) {
                scripts.insert(script, parent);
            }
        }
        for round in children_running(tune.id(), "__measure") {
            under_rounds.extend(pytorch_scripts_of(round));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(tune.wait().unwrap().success());
    let results = json_file(&json);
    let rounds = results["tune"]["rounds"].as_u64().unwrap();
    assert!(rounds >= 2, "{rounds} rounds");
    let parents: BTreeSet<i32> = scripts.values().copied().collect();
    assert_eq!(
        parents.len(),
        1,
        "every round's scripts have one parent: {scripts:?}"
    );
    assert!(scripts.len() >= 3, "{scripts:?}");
    assert_eq!(
        under_rounds,
        Vec::<u32>::new(),
        "no round starts its own Python"
    );
    // The meter counts the scripts' CPU as the run's, though they are not below the
    // round's process: else every epoch reads as other load, and the run's own CPU is
    // the round's process waiting for its events. Summed over the tune: an epoch of a
    // tenth of a second is a few of the kernel's 10 ms ticks, and on a machine busy
    // with other tests the script gets a share of a core.
    let (mut own_cpu_s, mut seconds, mut epochs) = (0.0, 0.0, Vec::new());
    for result in results["results"].as_array().unwrap() {
        for epoch in result["epochs"].as_array().unwrap() {
            own_cpu_s += epoch["own_cpu_s"].as_f64().unwrap();
            seconds += epoch["seconds"].as_f64().unwrap();
            epochs.push(format!(
                "{} {}/{}",
                result["label"], epoch["own_cpu_s"], epoch["seconds"]
            ));
        }
    }
    assert!(
        own_cpu_s > 0.2 * seconds,
        "{own_cpu_s} s of CPU in {seconds} s of epochs: {epochs:?}"
    );
}

#[test]
#[cfg(target_os = "linux")]
fn a_recommended_run_and_the_rounds_that_resolve_it_import_torch_once() {
    let dir = TempDir::new().unwrap();
    // One measurement each of two close configs: the verdict needs rounds beyond it.
    let preset = pytorch_preset(&[("num_workers", "0,1"), ("epochs", "1")]);
    let preset = write_preset(&dir, &preset);
    let saved = SavedRun::in_dir(dir.path());
    let mut args = saved.run_args(&preset, &[]);
    args.retain(|arg| *arg != "-q");
    args.extend(["--recommend", "--resolve-for", "15s"]);
    // Its preloaded Pythons are found below it.
    let mut cli = own_processes(&mut loaderbench_command(&args))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let preloads = |pid: u32| {
        children_of(pid).into_iter().filter(|child| {
            std::fs::read(format!("/proc/{child}/cmdline"))
                .is_ok_and(|cmdline| cmdline.split(|&b| b == 0).any(|arg| arg == b"--preload"))
        })
    };
    let mut seen = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    while cli.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the run hung");
        seen.extend(preloads(cli.id()));
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = cli.wait_with_output().unwrap();
    let said = common::stderr(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("round 1:"),
        "no round resolved the sweep: {said}"
    );
    assert_eq!(seen.len(), 1, "preloaded Pythons {seen:?}");
}

/// A shared preloaded Python is handed over once it has imported torch: seconds of CPU
/// that the meter counts as the run's own, so `--recommend`'s sweep measured our engine's
/// configs beside them unseen, at 4 to 6 times their time.
#[test]
#[cfg(target_os = "linux")]
fn a_shared_preloaded_python_is_handed_over_serving() {
    let _turn = python_turn();
    let plan = Plan::from_preset(&pytorch_preset(&[]), None).unwrap();
    let shared = pytorch::share_preloaded(&plan, pytorch::IMPORT_LIMIT)
        .expect("a plan of the PyTorch runtime shares a preloaded Python");
    // Importing torch takes seconds; serving, it answers at once.
    assert!(shared.wait_serving(Duration::from_millis(300)));
}

#[test]
#[cfg(target_os = "linux")]
fn a_run_killed_while_it_shares_a_preloaded_python_leaves_none_of_its_processes() {
    let shared = common::shared_preloaded_python()
        .expect("the test binary shares a preloaded Python")
        .pid();
    let dir = TempDir::new().unwrap();
    let preset = pytorch_preset(&[
        ("pipeline", "heavy"),
        ("samples", "60000"),
        ("num_workers", "2"),
        ("measure", "epochs"),
    ]);
    let preset = write_preset(&dir, &preset);
    let saved = SavedRun::in_dir(dir.path());
    let mut cli = loaderbench_command(&saved.run_args(&preset, &[]))
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Its script is the shared Python's child that works in the run's directory.
    let here = dir.path().canonicalize().unwrap();
    let in_run =
        |pid: &u32| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|d| d == here);
    let script = common::poll(Duration::from_secs(120), || {
        children_of(shared)
            .into_iter()
            .filter(in_run)
            .find(|&script| children_of(script).len() >= 2)
    });
    // Where it is not found, what there is instead (a flake seen once: no such script
    // in 120 s, on a loaded machine).
    let script = script.unwrap_or_else(|| {
        let describe =
            |pids: Vec<i32>| -> Vec<String> { seen(&pids).iter().map(Seen::describe).collect() };
        let scripts: Vec<String> = children_of(shared)
            .into_iter()
            .map(|pid| {
                let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"));
                let workers = children_of(pid).len();
                format!("{pid} in {cwd:?} with {workers} children")
            })
            .collect();
        panic!(
            "waited 120 s for the script and its workers; the shared Python {shared} \
             running: {}; its scripts: {:#?}; the run's processes: {:#?}",
            common::process::running(shared),
            scripts,
            describe(descendants_of(cli.id() as i32)),
        )
    });
    let processes = seen(&[vec![script as i32], descendants_of(script as i32)].concat());
    let left = kill_leaving(&mut cli, &processes);
    assert_eq!(left, Vec::<String>::new(), "outlived the run");
    assert!(
        common::process::running(shared),
        "the shared preloaded Python serves on"
    );
}

#[test]
fn a_run_whose_preloaded_python_dies_measures_every_config_with_fresh_scripts() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let preset = pytorch_preset(&[("batch_size", "32,64,128"), ("samples", "2048")]);
    let preset = write_preset(&dir, &preset);
    let saved = SavedRun::in_dir(dir.path());
    let mark = "LOADERBENCH_PRELOAD_DIES_TEST";
    let cli = own_processes(&mut loaderbench_command(&saved.run_args(&preset, &[])))
        .env(mark, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Killed once it has forked the first config's script, which measures on.
    let preloaded = common::wait_for(Duration::from_secs(120), "the first script", || {
        let scripts = pytorch_scripts_of(cli.id());
        let parent = scripts.first().and_then(|&script| parent_of(script as i32));
        parent.filter(|&parent| parent != cli.id() as i32)
    });
    // SAFETY: sending a signal to a process this test's command started.
    unsafe {
        libc::kill(preloaded, libc::SIGKILL);
    }
    let output = wait_with_deadline(cli, Duration::from_secs(300));
    assert!(output.status.success(), "{}", common::stderr(&output));
    let results = saved.exported();
    let measured = results["results"].as_array().unwrap();
    assert_eq!(measured.len(), 3, "{results}");
    for result in measured {
        assert_eq!(result["epochs"].as_array().unwrap().len(), 2, "{result}");
    }
    let left = common::poll(Duration::from_secs(2), || {
        let left = marked(mark, "1");
        left.is_empty().then_some(())
    });
    assert!(left.is_some(), "left behind: {:?}", marked(mark, "1"));
}

/// Waits for the first batch of the run; returns the events so far.
fn events_until_batch(handle: &RunHandle, limit: Duration) -> Vec<Event> {
    let deadline = Instant::now() + limit;
    let mut events = Vec::new();
    while !events.iter().any(|e| matches!(e, Event::Batch { .. })) {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = handle.events().recv_timeout(left).expect("a batch in time");
        assert!(event.final_result().is_none(), "ended early: {event:#?}");
        events.push(event);
    }
    events
}

#[test]
fn pytorch_dataloader_streams_our_events_with_and_without_workers() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let preset = pytorch_preset(&[("num_workers", "0,2"), ("start_method", "fork,spawn")]);
    let (plan, handle) = start(&preset, &dir);
    let labels: Vec<String> = (0..plan.configs.len()).map(|i| plan.label(i)).collect();
    assert_eq!(labels, ["nw=0", "nw=2", "nw=2 spawn"]);
    let events = events_until_end(&handle, Duration::from_secs(240));
    let Some(Event::Finished { result }) = events.last() else {
        panic!("did not finish: {:#?}", events.last());
    };
    assert_eq!(result.results.len(), 3);
    for measured in &result.results {
        assert_eq!(measured.epochs.len(), 2, "{}", measured.label);
        for epoch in &measured.epochs {
            assert_eq!(
                (epoch.batches, epoch.samples),
                (4, 256),
                "{}",
                measured.label
            );
            assert!(epoch.first_batch_s > 0.0 && epoch.first_batch_s <= epoch.seconds);
            assert!(
                epoch.seconds < 120.0,
                "{}: {}",
                measured.label,
                epoch.seconds
            );
            let workers = if measured.config.num_workers > 0 {
                2
            } else {
                0
            };
            assert_eq!(epoch.worker_startups.len(), workers, "{}", measured.label);
        }
        assert!(measured.intra_op_threads >= 1);
    }
    let batches = events
        .iter()
        .filter(|e| matches!(e, Event::Batch { .. }))
        .count();
    let ready = events
        .iter()
        .filter(|e| matches!(e, Event::WorkerReady { .. }))
        .count();
    assert_eq!((batches, ready), (3 * 2 * 4, 2 * 2 * 2));
}

#[test]
fn a_cold_pytorch_epoch_waits_for_our_eviction_and_reads_the_folder_from_storage() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    // On the build's disk: /tmp may be tmpfs, whose pages never leave.
    let (folder, bytes) = noisy_image_folder(Path::new(env!("CARGO_TARGET_TMPDIR")), 12);
    let preset = pytorch_preset(&[
        ("dataset.kind", "image_folder"),
        ("dataset.path", path_str(folder.path())),
        ("dataset.channels", "3"),
        ("num_workers", "2"),
        ("cache", "warm,cold"),
    ]);
    let (_, handle) = start(&preset, &dir);
    let events = events_until_end(&handle, Duration::from_secs(240));
    let Some(Event::Finished { result }) = events.last() else {
        panic!("did not finish: {:#?}", events.last());
    };
    let read = |cache: Cache| -> Vec<u64> {
        let measured = result.results.iter().find(|r| r.config.cache == cache);
        let measured = measured.unwrap_or_else(|| panic!("no {cache:?} config"));
        assert_eq!(measured.stayed_warm, None, "{}", measured.label);
        measured
            .epochs
            .iter()
            .map(|e| e.read_bytes.unwrap())
            .collect()
    };
    let (warm, cold) = (read(Cache::Warm), read(Cache::Cold));
    assert_eq!((warm.len(), cold.len()), (2, 2));
    // PyTorch's worker processes read the files; Python reaps them, and we count them
    // through it.
    assert!(
        cold.iter().all(|&b| b >= bytes * 9 / 10),
        "cold {cold:?} of {bytes}"
    );
    // A fresh Python's first epoch reads the libraries its workers import (PIL's PNG
    // plugin, and torch's own when the kernel has dropped them: 20 MB once in CI,
    // against a 1.3 MB folder), so only the second epoch is held to reading nothing.
    assert!(warm[1] < bytes / 10, "warm {warm:?} of {bytes}");
}

#[test]
fn the_synthetic_dataset_reaches_pytorch_byte_for_byte() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let synthetic = open(&DatasetSpec::default(), Some(128)).unwrap();
    let (images, labels) = pytorch::write_idx(synthetic.as_ref(), dir.path()).unwrap();
    let mut preset = pytorch_preset(&[("shuffle", "false")]);
    preset.pipeline = vec![PipelineSpec::Custom {
        name: "identity".to_owned(),
        ops: Vec::new(),
    }];
    let plan = Plan::from_preset(&preset, None).unwrap();
    let request = Request::new(
        &plan,
        &plan.configs[0],
        DatasetRequest::Idx { images, labels },
    );
    let first_batch = python_first_batch(&request, &dir);
    let mut want_pixels = Vec::new();
    let mut want_labels = Vec::new();
    let mut pixels = vec![0; 784];
    for index in 0..64 {
        want_labels.push(synthetic.read(index, &mut pixels).unwrap());
        want_pixels.extend_from_slice(&pixels);
    }
    assert_eq!(first_batch["labels"], serde_json::json!(want_labels));
    assert_eq!(first_batch["pixels"], serde_json::json!(want_pixels));
}

/// The first batch of the script's own dataset and DataLoader for `request`, as bytes.
/// It is written to a file: more than a pipe holds.
fn python_first_batch(request: &Request, dir: &TempDir) -> serde_json::Value {
    let snippet = "import json, sys; sys.path.insert(0, sys.argv[1]); import pytorch_loader as r\n\
        request = json.loads(sys.stdin.readline())\n\
        loader = r.build_loader(request, r.build_dataset(request))\n\
        images, labels = next(iter(loader))\n\
        pixels = (images * 255).round().to(r.torch.uint8).flatten().tolist()\n\
        json.dump({'labels': labels.tolist(), 'pixels': pixels}, open(sys.argv[2], 'w'))";
    let out = dir.path().join("first-batch.json");
    Snippet::start(snippet, std::slice::from_ref(request), &out, &[])
        .result(Duration::from_secs(120))
}

/// The standard output of a run that must have succeeded.
fn succeeded(output: &Output) -> String {
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

fn write_preset(dir: &TempDir, preset: &Preset) -> String {
    let path = dir.path().join("tiny.ron");
    preset.save(&path).unwrap();
    path.to_str().unwrap().to_owned()
}

/// `loaderbench run` of `preset`, written to `dir` with the run's journal, with `vars` in
/// its environment.
fn run_preset(dir: &TempDir, preset: &Preset, vars: &[(&str, &OsStr)]) -> Output {
    let preset = write_preset(dir, preset);
    let journal = dir.path().join("run.jsonl");
    loaderbench_with(
        &["run", &preset, "-q", "--journal", path_str(&journal)],
        vars,
    )
}

/// The error line of a tiny pytorch run with `python` as the Python to use.
fn error_with_python(python: impl FnOnce(&Path) -> String) -> String {
    let dir = TempDir::new().unwrap();
    let python = python(dir.path());
    let vars = [(pytorch::PYTHON_VAR, OsStr::new(&python))];
    assert_error_line(&run_preset(&dir, &pytorch_preset(&[]), &vars), 2, &[])
}

#[test]
fn a_missing_python_is_named() {
    let _turn = python_turn();
    let line = error_with_python(|dir| path_str(&dir.join("no-such-python")).to_owned());
    assert!(
        line.contains("no-such-python") && line.contains("not found"),
        "{line}"
    );
}

#[test]
fn a_python_without_torch_is_named() {
    let _turn = python_turn();
    // The system python3 has no torch.
    let line = error_with_python(|_| "python3".to_owned());
    assert!(line.contains("cannot import torch"), "{line}");
}

#[test]
fn a_failing_script_is_one_line_and_exit_1() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let mut preset = pytorch_preset(&[]);
    preset.pipeline = vec![PipelineSpec::Custom {
        name: "oversized-crop".to_owned(),
        ops: vec![loaderbench_engine::transform::Op::Crop {
            size: [64, 64],
            padding: 0,
        }],
    }];
    let output = run_preset(&dir, &preset, &[]);
    assert_error_line(&output, 1, &["PyTorch DataLoader", "crop"]);
}

/// What Python leaves in its temporary directory goes with the run: a forkserver's
/// `pymp-*` folders (the server dies with the script's process group before it removes
/// them) and torch's `torchinductor_*` cache are in the run's scratch folder, which the
/// run removes, so the temporary directory it was given is as empty as before.
#[test]
fn a_pytorch_run_leaves_nothing_in_the_temporary_directory() {
    let _turn = python_turn();
    let temp = TempDir::new().unwrap();
    let out = TempDir::new().unwrap();
    let preset = pytorch_preset(&[
        ("num_workers", "2"),
        ("start_method", "forkserver"),
        ("epochs", "1"),
    ]);
    succeeded(&run_preset(
        &out,
        &preset,
        &[("TMPDIR", temp.path().as_os_str())],
    ));
    let left: Vec<String> = std::fs::read_dir(temp.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        Vec::<String>::new(),
        "left in the temporary directory"
    );
}

/// The PyTorch runtime's script that this test runs in this process (forked by the
/// run's preloaded Python; such tests take turns, while other tests' commands may be our
/// children too) and the processes below it, by /proc: the script first.
fn script_processes() -> Vec<i32> {
    pytorch_scripts_of(std::process::id())
        .into_iter()
        .flat_map(|script| {
            let script = script as i32;
            std::iter::once(script).chain(descendants_of(script))
        })
        .collect()
}

/// This process's children that run the PyTorch runtime's script: the run's preloaded
/// Python (not the shared one other tests' commands use).
fn run_pythons() -> Vec<i32> {
    let shared = common::shared_preloaded_python().map(|python| python.pid());
    let runs_the_script = |pid: &u32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains("pytorch_loader.py"))
    };
    children_of(std::process::id())
        .into_iter()
        .filter(|&pid| Some(pid) != shared)
        .filter(runs_the_script)
        .map(|pid| pid as i32)
        .collect()
}

/// The parent of process `pid`, by /proc.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(1)?.parse().ok()
}

/// Pids of `root`'s children and their children, by /proc.
fn descendants_of(root: i32) -> Vec<i32> {
    let all: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let mut found = vec![root];
    let mut grew = true;
    while grew {
        grew = false;
        for &pid in &all {
            if !found.contains(&pid) && parent_of(pid).is_some_and(|p| found.contains(&p)) {
                found.push(pid);
                grew = true;
            }
        }
    }
    found.remove(0);
    found
}

/// The processes `pids` as they are now (those already gone left out), to be asked
/// later whether they still run.
fn seen(pids: &[i32]) -> Vec<Seen> {
    pids.iter()
        .filter_map(|&pid| Seen::now(u32::try_from(pid).ok()?))
        .collect()
}

#[test]
#[cfg(target_os = "linux")]
fn python_and_its_workers_end_when_loaderbench_is_killed() {
    // Python and its two DataLoader workers.
    assert_nothing_outlives_a_killed_loaderbench("fork", 3);
    // Python, its fork server and resource tracker, and the two workers the server
    // forked: the server, held alive by its workers, outlived the script with them.
    assert_nothing_outlives_a_killed_loaderbench("forkserver", 5);
}

/// Kills loaderbench (SIGKILL, nothing of its own code runs) once a run of two workers
/// started by `start_method` has `processes` processes under it, and checks that every
/// one of them ends at once.
#[cfg(target_os = "linux")]
fn assert_nothing_outlives_a_killed_loaderbench(start_method: &str, processes: usize) {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let preset = pytorch_preset(&[
        ("pipeline", "heavy"),
        ("samples", "60000"),
        ("num_workers", "2"),
        ("start_method", start_method),
        ("measure", "epochs"),
    ]);
    // Its processes are found below it.
    let mut cli = own_processes(&mut loaderbench_command(&[
        "run",
        &write_preset(&dir, &preset),
        "--quiet",
    ]))
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let cli_pid = cli.id() as i32;
    let what = format!("{processes} processes of a {start_method} run");
    let seen_before = common::wait_for(Duration::from_secs(120), &what, || {
        let seen = seen(&descendants_of(cli_pid));
        (seen.len() >= processes).then_some(seen)
    });
    // At once: the workers die with the script (their parent-death signal), not at
    // DataLoader's next status check (every 5 s), whichever of loaderbench's own
    // parent-death signal and the script's end of its process group comes first.
    let left = kill_leaving(&mut cli, &seen_before);
    assert!(
        left.is_empty(),
        "{start_method}: {left:?} outlived the killed loaderbench"
    );
}

/// Kills loaderbench (SIGKILL) and gives `processes` of its run two seconds to end:
/// those still running then, described.
fn kill_leaving(cli: &mut std::process::Child, processes: &[Seen]) -> Vec<String> {
    cli.kill().unwrap();
    cli.wait().unwrap();
    let killed = Instant::now();
    while processes.iter().any(Seen::running) && killed.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(50));
    }
    processes
        .iter()
        .filter(|p| p.running())
        .map(Seen::describe)
        .collect()
}

/// A run long enough to act on (the heavy pipeline with two fork workers), at its first
/// batch: its folder, its handle, and the processes of its script (the script first,
/// its workers after).
fn long_run_at_first_batch() -> (TempDir, RunHandle, Vec<i32>) {
    let dir = TempDir::new().unwrap();
    let preset = pytorch_preset(&[
        ("pipeline", "heavy"),
        ("samples", "60000"),
        ("num_workers", "2"),
        ("worker_timeout_s", "30"),
    ]);
    let handle = start(&preset, &dir).1;
    events_until_batch(&handle, Duration::from_secs(120));
    let processes = script_processes();
    assert!(
        processes.len() >= 3,
        "python and its workers: {processes:?}"
    );
    (dir, handle, processes)
}

#[test]
fn a_killed_worker_fails_the_run_with_a_message() {
    let _turn = python_turn();
    let (_dir, handle, processes) = long_run_at_first_batch();
    // The script comes first; its workers are its children.
    let worker = *processes.last().unwrap();
    // SAFETY: sending a signal to a process this test started.
    unsafe {
        libc::kill(worker, libc::SIGKILL);
    }
    let events = events_until_end(&handle, Duration::from_secs(60));
    let Some(Event::Failed { error, .. }) = events.last() else {
        panic!("did not fail: {:#?}", events.last());
    };
    assert!(error.contains("worker"), "{error}");
    assert!(!error.contains('\n'), "{error}");
}

/// The script's peak memory is its own: Linux's `ru_maxrss` kept the peak of the
/// process it was forked from (the runner, here this test) from before its exec, so a
/// runner holding 1.5 GiB made every config's peak at least that.
#[test]
#[cfg(target_os = "linux")]
fn the_script_s_peak_memory_is_its_own() {
    let _turn = python_turn();
    let ballast = std::hint::black_box(vec![1u8; 1536 << 20]);
    let dir = TempDir::new().unwrap();
    let (_, handle) = start(&pytorch_preset(&[]), &dir);
    let events = events_until_end(&handle, Duration::from_secs(120));
    drop(ballast);
    let Some(Event::Finished { result }) = events.last() else {
        panic!("did not finish: {:#?}", events.last());
    };
    let peak = result.results[0].peak_rss_bytes.expect("the script's peak");
    assert!(peak < 1 << 30, "{} MiB", peak >> 20);
}

/// The script killed from outside (as the out-of-memory killer does) fails the run
/// saying how it ended; with one rank the signal was left out.
#[test]
fn a_killed_script_fails_the_run_naming_the_signal() {
    let _turn = python_turn();
    let (_dir, handle, processes) = long_run_at_first_batch();
    let killed = Instant::now();
    // SAFETY: sending a signal to a process this test started.
    unsafe {
        libc::kill(processes[0], libc::SIGKILL);
    }
    let events = events_until_end(&handle, Duration::from_secs(60));
    let Some(Event::Failed { error, .. }) = events.last() else {
        panic!("did not fail: {:#?}", events.last());
    };
    assert!(
        error.contains("exited before finishing (signal: 9"),
        "{error}"
    );
    // Its preloaded Python was asked to release it twice (once on describing its end,
    // once on dropping it); the second time it knew no such script and said nothing,
    // and the run waited 10 s for the answer before it ended.
    assert!(
        killed.elapsed() < Duration::from_secs(8),
        "failed {:?} after the kill",
        killed.elapsed()
    );
}

#[test]
fn cancelling_kills_python_and_its_workers_within_a_second() {
    let _turn = python_turn();
    let (_dir, handle, processes) = long_run_at_first_batch();
    let processes = seen(&[processes, run_pythons()].concat());
    let cancelled = Instant::now();
    handle.cancel();
    let events = events_until_end(&handle, Duration::from_secs(5));
    assert!(matches!(events.last(), Some(Event::Cancelled { .. })));
    while processes.iter().any(Seen::running) {
        assert!(
            cancelled.elapsed() < Duration::from_secs(1),
            "still running: {:?}",
            processes.iter().filter(|p| p.running()).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn compare_prints_ours_against_pytorch_per_config() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let mut preset = pytorch_preset(&[]);
    preset.set("runtime", "loaderbench").unwrap();
    let preset = write_preset(&dir, &preset);
    let journal = dir.path().join("j.jsonl");
    let output = loaderbench(&[
        "compare",
        &preset,
        "-q",
        "--journal",
        journal.to_str().unwrap(),
    ]);
    let out = succeeded(&output);
    let row = out
        .lines()
        .find(|l| l.starts_with("| nw=0 "))
        .unwrap_or_else(|| panic!("no compare row in: {out}"));
    assert_eq!(row.matches('×').count(), 3, "{row}");
}

/// seed-light-pytorch (num_workers 0 and 2, spawned) with `--recommend`, run once by the
/// first test that needs it (in its Python turn): the folder holding its JSON as
/// `run.json`, and its output.
fn seed_light_pytorch() -> &'static (TempDir, Output) {
    static RUN: OnceLock<(TempDir, Output)> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = shared_dir();
        let json = dir.path().join("run.json");
        let journal = dir.path().join("j.jsonl");
        let output = loaderbench(&[
            "run",
            "seed-light-pytorch",
            "-q",
            "--recommend",
            "--resolve-for",
            "0s",
            "--set",
            "samples=1024",
            "--set",
            "num_workers=0,2",
            "--set",
            "extra_configs=[]",
            "--set",
            "start_method=spawn",
            "--json",
            json.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ]);
        (dir, output)
    })
}

#[test]
fn seed_light_pytorch_recommends_per_runtime() {
    let _turn = python_turn();
    let (dir, output) = seed_light_pytorch();
    let out = succeeded(output);
    let result = results_file::read(&dir.path().join("run.json")).unwrap();
    let groups: Vec<String> = Analysis::of(&result)
        .recommendations
        .into_iter()
        .map(|r| r.group)
        .collect();
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert!(groups[0].ends_with(" · light · loaderbench"), "{groups:?}");
    assert!(groups[1].ends_with(" · light · pytorch"), "{groups:?}");
    for group in &groups {
        assert!(
            out.contains(&format!("Recommendation: {group}\n")),
            "printed per runtime: {out}"
        );
    }
}

#[test]
fn seed_light_pytorch_s_snippet_builds_a_working_dataloader() {
    let _turn = python_turn();
    let (shared, output) = seed_light_pytorch();
    succeeded(output);
    let dir = TempDir::new().unwrap();
    let mut result = results_file::read(&shared.path().join("run.json")).unwrap();
    // A busy machine (other tests, other builds) may leave the question undecided; the
    // snippet is then the one the same measurements give on a quiet machine.
    for run in &mut result.results {
        run.disturbed = false;
    }
    let recommendations = Analysis::of(&result).recommendations;
    let snippet = recommendations[1].snippet.as_deref().unwrap();
    assert!(
        snippet.contains("loader = DataLoader(dataset, batch_size=256"),
        "{snippet}"
    );

    // The snippet as a user pastes it: below their dataset (the test module's map-style
    // Dataset over IDX files, with PIL and torchvision transforms), in a script of their
    // own (spawned workers import the script again, hence the main guard).
    let data = dir.path().join("mnist");
    std::fs::create_dir(&data).unwrap();
    let samples = open(&DatasetSpec::default(), Some(1000)).unwrap();
    pytorch::write_idx(samples.as_ref(), &data).unwrap();
    let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/user_dataset");
    let script = dir.path().join("train.py");
    std::fs::write(
        &script,
        format!(
            "import sys\nsys.path.insert(0, {module:?})\nfrom mnist_user import make_dataset\n\
             dataset = make_dataset(root={data:?})\n{snippet}\n\
             if __name__ == '__main__':\n    print('batches', sum(1 for _ in loader))\n"
        ),
    )
    .unwrap();
    let child = python_in(dir.path())
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    let ran = wait_with_deadline(child, Duration::from_secs(120));
    assert!(
        ran.status.success(),
        "{snippet}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "batches 4\n",
        "{snippet}"
    );
}
