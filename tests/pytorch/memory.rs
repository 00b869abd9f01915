//! The job's memory on the PyTorch runtime, through the CLI as a process: a Dataset that
//! keeps its index as 300,000 Python dicts and one that keeps it as numpy arrays
//! (tests/data/memory/index_of_objects.py), each at 0, 2 and 4 forked DataLoader workers.
//! The dicts' workers grow within the epoch and the analysis names copy-on-access; the
//! arrays hold no Python object per record and it says nothing. Meanwhile the test reads the workers' private
//! memory from /proc itself, and loaderbench's growth per worker must be within 20% of
//! what it saw (from its first reading, at most 50 ms after the fork). Persistent workers
//! are counted in a last epoch too short for any periodic sweep. A `samples` cut that ends
//! the epoch before the copies reach 32 MiB a worker is named from its projection.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::common;
use common::process::{children_of, own_processes, python_turn, pytorch_scripts_of};
use common::runs::SavedRun;
use common::{loaderbench, loaderbench_command, path_str, stderr, stdout};

fn module() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/memory/index_of_objects.py")
}

/// What one run printed and wrote, and what the test read from /proc meanwhile: each
/// Python script (one per config, in the order they started) with its workers.
struct Watched {
    output: Output,
    exported: serde_json::Value,
    /// Each script's workers: their private bytes when last read.
    scripts: Vec<BTreeMap<u32, u64>>,
}

/// Private bytes (clean and dirty) of `pid` from its smaps_rollup.
fn private_bytes(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let kib = |field: &str| -> Option<u64> {
        let line = rollup.lines().find(|l| l.starts_with(field))?;
        line[field.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    Some((kib("Private_Clean:")? + kib("Private_Dirty:")?) * 1024)
}

/// `loaderbench run` of `factory` over 300,000 records at nw=0, 2 and 4 forked workers,
/// one epoch each, reading every DataLoader worker's private memory every 50 ms.
/// A preset over `factory` of tests/data/memory/index_of_objects.py (with `args`, a
/// JSON object): forked DataLoader workers, batches of 1024, one whole epoch, and
/// `knobs` (RON fields) for the rest.
fn index_preset(dir: &Path, factory: &str, args: &str, knobs: &str) -> PathBuf {
    let preset = dir.join("index.ron");
    std::fs::write(
        &preset,
        format!(
            r#"(
    version: 1,
    name: "index-{factory}",
    dataset: (kind: python, path: "{}", factory: "{factory}", args: {args}),
    runtime: [pytorch],
    start_method: [fork],
    batch_size: [1024],
    epochs: 1,
    measure: epochs,
    {knobs}
)"#,
            module().display()
        ),
    )
    .unwrap();
    preset
}

/// `run --recommend` of a preset of one config over `factory` ([`index_preset`]): what it
/// printed, and the analysis's memory of the config.
fn one_config_memory(factory: &str, args: &str, knobs: &str) -> (Output, serde_json::Value) {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let preset = index_preset(dir.path(), factory, args, knobs);
    let saved = SavedRun::in_dir(dir.path());
    let output = loaderbench_command(&recommend_args(&saved, &preset))
        .output()
        .expect("loaderbench runs");
    assert!(output.status.success(), "{}", stderr(&output));
    let config = saved.exported()["analysis"]["memory"]["configs"][0].clone();
    (output, config)
}

/// A run of `preset` saved in `saved`, with the analysis and no resolving rounds.
fn recommend_args<'a>(saved: &'a SavedRun, preset: &'a Path) -> Vec<&'a str> {
    let mut args = saved.run_args(path_str(preset), &[]);
    args.extend(["--recommend", "--resolve-for", "0s"]);
    args
}

fn run_watched(factory: &str) -> Watched {
    let dir = TempDir::new().unwrap();
    let preset = index_preset(
        dir.path(),
        factory,
        r#"{"size": 300000}"#,
        "num_workers: [0, 2, 4],",
    );
    let saved = SavedRun::in_dir(dir.path());
    let args = recommend_args(&saved, &preset);
    // The scripts are found below the CLI.
    let mut child = own_processes(&mut loaderbench_command(&args))
        .spawn()
        .expect("loaderbench starts");
    let mut scripts: Vec<(u32, BTreeMap<u32, u64>)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    while child.try_wait().expect("waitable").is_none() {
        assert!(Instant::now() < deadline, "the run hung");
        for script in pytorch_scripts_of(child.id()) {
            let index = match scripts.iter().position(|(pid, _)| *pid == script) {
                Some(index) => index,
                None => {
                    scripts.push((script, BTreeMap::new()));
                    scripts.len() - 1
                }
            };
            for worker in children_of(script) {
                if let Some(bytes) = private_bytes(worker) {
                    scripts[index].1.insert(worker, bytes);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("output");
    assert!(output.status.success(), "{}", stderr(&output));
    let exported = saved.exported();
    Watched {
        output,
        exported,
        scripts: scripts.into_iter().map(|(_, workers)| workers).collect(),
    }
}

impl Watched {
    /// The analysis's memory of the config with `workers` workers.
    fn config(&self, workers: usize) -> &serde_json::Value {
        let index = [0, 2, 4].iter().position(|&w| w == workers).unwrap();
        let configs = self.exported["analysis"]["memory"]["configs"]
            .as_array()
            .unwrap();
        configs
            .iter()
            .find(|c| c["config"] == index)
            .unwrap_or_else(|| panic!("no memory for nw={workers}: {configs:?}"))
    }

    /// The median growth of the workers of the script with workers that started
    /// `nth` (0 for nw=2, 1 for nw=4), as the test read it: their private bytes when
    /// last read, since a forked worker starts with none of its own (from its first
    /// read, the growth lost the copies made before it: 57 MB against the 70 MB that
    /// loaderbench, counting from nothing as well, measured for nw=4).
    fn seen_growth(&self, nth: usize) -> u64 {
        let with_workers: Vec<&BTreeMap<u32, u64>> =
            self.scripts.iter().filter(|w| !w.is_empty()).collect();
        let mut growth: Vec<u64> = with_workers[nth].values().copied().collect();
        growth.sort_unstable();
        growth[growth.len() / 2]
    }
}

#[test]
fn an_index_of_dicts_grows_in_forked_workers_and_is_named_copy_on_access() {
    let _turn = python_turn();
    let dicts = run_watched("make_dicts");
    let text = stdout(&dicts.output);
    assert!(text.contains("\nMemory\nCopy-on-access: "), "{text}");
    assert!(text.contains("numpy arrays or a torch.Tensor"), "{text}");
    for (nth, workers) in [2, 4].into_iter().enumerate() {
        let config = dicts.config(workers);
        assert_eq!(config["copy_on_access"], true, "{config}");
        let objects = config["dataset_object_bytes"].as_u64().unwrap();
        assert!(objects > 64 << 20, "300,000 small dicts: {objects} bytes");
        let measured = config["worker_growth_bytes"].as_u64().unwrap() as f64;
        let seen = dicts.seen_growth(nth) as f64;
        assert!(
            seen > 32.0 * 1048576.0,
            "nw={workers}: the test saw {seen} bytes"
        );
        // The script has the workers swept after the last batch, before DataLoader
        // ends them: without that sweep the growth after the last periodic one (up to
        // 2 s of it) was lost, and 4 workers on 2 cores measured 62-65% of it.
        assert!(
            measured <= 1.2 * seen && measured >= 0.8 * seen,
            "nw={workers}: loaderbench measured {measured} bytes a worker, /proc showed {seen}"
        );
        // Every process counted: the workers' share is in the config's memory.
        assert!(config["worker_bytes"].as_u64().unwrap() > 0, "{config}");
    }
    assert_eq!(
        dicts.config(0)["worker_growth_bytes"],
        serde_json::Value::Null
    );
    let nw4 = common::table_row(&text, "| 4 ");
    assert!(nw4.contains("(workers "), "{nw4}");
}

/// A `samples` cut of a twentieth ends the epoch before the dicts' workers have copied
/// 32 MiB each (15 MiB at 600,000 records; 195 MiB over the whole epoch): judged on what
/// they grew, copy-on-access went unnamed and the config was projected at what it measured.
#[test]
fn copy_on_access_is_named_from_a_samples_cut_that_ends_before_it_shows() {
    let knobs = "num_workers: [2], samples: Some(15000),";
    let (output, config) = one_config_memory("make_dicts", r#"{"size": 300000}"#, knobs);
    let number = |field: &str| config[field].as_u64().unwrap_or(0);
    assert!(
        number("worker_growth_bytes") < 32 << 20,
        "the cut shows under the mark: {config}"
    );
    assert_eq!(config["copy_on_access"], true, "{config}");
    assert!(
        number("projected_growth_bytes") > 4 * number("worker_growth_bytes")
            && number("projected_bytes") > number("measured_bytes"),
        "{config}"
    );
    assert!(
        stdout(&output).contains("\nCopy-on-access: "),
        "{}",
        stdout(&output)
    );
}

/// Workers that copy the whole index while making their last batch of an epoch grow
/// after the last periodic sweep and end right after: only the sweep the script asks
/// for after its last batch, before DataLoader ends them, sees that growth.
#[test]
fn workers_that_grow_in_their_last_batch_are_swept_before_they_end() {
    let (_, config) = one_config_memory(
        "make_dicts_read_at_the_end",
        r#"{"size": 300000, "batch_size": 1024}"#,
        "num_workers: [2], shuffle: false,",
    );
    let objects = config["dataset_object_bytes"].as_u64().unwrap() as f64;
    let growth = config["worker_growth_bytes"].as_u64().unwrap_or(0) as f64;
    assert!(
        growth >= 0.5 * objects,
        "a worker grew {growth} bytes by its last batch; the index holds {objects} bytes \
         of objects: {config}"
    );
}

#[test]
fn an_index_of_numpy_arrays_does_not_grow_and_gets_no_warning() {
    let _turn = python_turn();
    let arrays = run_watched("make_arrays");
    let text = stdout(&arrays.output);
    assert!(!text.to_lowercase().contains("copy-on-access"), "{text}");
    for workers in [2, 4] {
        let config = arrays.config(workers);
        assert_eq!(config["copy_on_access"], false, "{config}");
        // Three arrays: no Python object per record. (The workers still copy the
        // interpreter's own objects on their first full garbage collection.)
        let objects = config["dataset_object_bytes"].as_u64().unwrap();
        assert!(
            objects < 1 << 20,
            "nw={workers}: {objects} bytes of objects"
        );
    }
}

/// `validate` loads the Dataset and says what forked workers would copy, before any run.
#[test]
fn validate_warns_of_a_dataset_of_python_objects_that_forked_workers_copy() {
    let dir = TempDir::new().unwrap();
    let validate = |factory: &str| {
        let knobs = "num_workers: [0, 2],";
        let preset = index_preset(dir.path(), factory, r#"{"size": 300000}"#, knobs);
        let methods = "start_method=fork,spawn";
        let output = loaderbench(&["validate", path_str(&preset), "--set", methods]);
        assert!(output.status.success(), "{}", stderr(&output));
        (stdout(&output), stderr(&output))
    };
    let (printed, warned) = validate("make_dicts");
    assert!(
        printed.contains("\n  dataset: 300000 samples, about "),
        "{printed}"
    );
    let warning = "warning: the Dataset keeps about ";
    assert!(warned.contains(warning), "{warned}");
    // Only the forked workers copy: spawned ones unpickle their own.
    assert!(
        warned.contains("forked workers (nw=2) copy their pages"),
        "{warned}"
    );
    let (printed, warned) = validate("make_arrays");
    let small = "\n  dataset: 300000 samples, under 1 MiB of Python objects\n";
    assert!(printed.contains(small), "{printed}");
    assert!(!warned.contains("warning"), "{warned}");
}

/// Persistent workers end with the loader, right after the last epoch. In an epoch too
/// short for a periodic sweep to fall while they lived, no sweep saw them, and the
/// config's memory left them out: 0 MiB of workers beside 271 MiB for the same workers
/// not persisting, which made persistent configs look the lighter to the tie rule.
#[test]
fn persistent_workers_are_counted_in_a_short_last_epoch() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let saved = SavedRun::in_dir(dir.path());
    let sets = [
        "runtime=pytorch",
        "samples=256",
        "batch_size=64",
        "epochs=1",
        "num_workers=2",
        "persistent_workers=true,false",
        "extra_configs=[]",
    ];
    let output = loaderbench(&saved.run_args("seed-light", &sets));
    assert!(output.status.success(), "{}", stderr(&output));
    let exported = saved.exported();
    for result in exported["results"].as_array().unwrap() {
        let processes = result["processes"].as_array().unwrap();
        let workers = processes.iter().filter(|p| p["kind"] == "worker").count();
        let memory = &result["epochs"][0]["memory"];
        assert!(
            workers == 2 && memory["worker_pss_bytes"].as_u64().unwrap() > 0,
            "{}: {workers} workers seen, {memory}",
            result["label"]
        );
    }
}

/// A run starts its own preloaded Python below it, to fork its PyTorch scripts from,
/// and keeps it, idle, to the end: every config of our engine measured after a PyTorch
/// one counted it as a worker (368 MiB at nw=0), which the tie rule's "least memory"
/// then weighed.
#[test]
fn our_engine_s_config_after_a_pytorch_one_has_no_worker_at_nw_0() {
    let dir = tempfile::tempdir().unwrap();
    let (json, journal) = (dir.path().join("run.json"), dir.path().join("run.jsonl"));
    let sets = [
        "runtime=pytorch,loaderbench",
        "num_workers=0",
        "samples=512",
        "extra_configs=[]",
    ];
    let extra = ["--json", path_str(&json), "--journal", path_str(&journal)];
    let args = common::run_args("seed-light", &sets, &extra);
    let output = common::run_with_deadline(
        own_processes(&mut loaderbench_command(&args)),
        Duration::from_secs(120),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let run = common::json_file(&json);
    let results = run["results"].as_array().unwrap();
    let runtimes: Vec<&str> = results
        .iter()
        .map(|r| r["config"]["runtime"].as_str().unwrap())
        .collect();
    assert_eq!(
        runtimes,
        ["pytorch", "loaderbench"],
        "measured in this order"
    );
    let kinds: Vec<&str> = results[1]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["main"], "{:#}", results[1]["processes"]);
}
