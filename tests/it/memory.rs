//! Memory through the CLI as a process, on our engine: each worker process is sampled as
//! a process of its config (the JSON keeps every process's series, the table's memory
//! column sums their PSS and shows the workers' part); a `--memory-limit` between two
//! configs' measured memory keeps the bigger one out of the recommendation and says so;
//! workers that end with an epoch too short for a periodic sweep are still counted, on
//! one rank and on two; a limit that is no size, or out of range, is refused before
//! anything runs.

use std::sync::OnceLock;

use loaderbench_analysis::measured_configs;
use loaderbench_analysis::memory::MemoryReport;
use loaderbench_measure::process_memory::ProcessKind;
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file;

use crate::common;
use common::runs::{SavedRun, SharedRun, as_measured_quietly};
use common::{assert_error_line, loaderbench, path_str, stderr, stdout, table_row};

/// nw=0 and nw=2 persistent spawned workers (each a process of its own, libtorch and
/// all) over 2,048 samples of a pipeline of 400 µs a sample (two workers on two cores
/// take about half as long), three repeats, measured once with `--recommend`, its
/// JSON with the meter's verdicts cleared (a busy machine may mark configs disturbed,
/// and then none is named).
fn measured() -> &'static SharedRun {
    static MEASURED: OnceLock<SharedRun> = OnceLock::new();
    SharedRun::once(&MEASURED, |dir| {
        let saved = SavedRun::in_dir(dir);
        let sets = [
            "samples=2048",
            "batch_size=64",
            "num_workers=0,2",
            "worker_kind=spawn",
            "persistent_workers=true",
            "extra_configs=[]",
            "pin_memory=false",
            "repeats=3",
            "pipeline=[{\"custom\":{\"name\":\"costly\",\"ops\":[{\"cost\":{\"micros_per_sample\":400}}]}}]",
        ];
        let output = loaderbench(&saved.run_args("seed-light", &sets));
        if output.status.success() {
            as_measured_quietly(&saved.json);
        }
        output
    })
}

/// The measurements, as a quiet machine's.
fn result() -> RunResult {
    results_file::read(&SavedRun::in_dir(measured().dir.path()).json).unwrap()
}

/// `report --recommend` on the measurements, with `extra` arguments.
fn recommend(extra: &[&str]) -> String {
    let json = SavedRun::in_dir(measured().dir.path()).json;
    let mut args = vec!["report", path_str(&json), "--recommend"];
    args.extend_from_slice(extra);
    let output = loaderbench(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    text.split("\nRecommendation: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no recommendation in: {text}"))
        .to_owned()
}

#[test]
fn worker_processes_are_sampled_as_processes_of_their_config() {
    let result = result();
    for run in &result.results {
        let kinds: Vec<ProcessKind> = run.processes.iter().map(|p| p.kind).collect();
        let workers = kinds.iter().filter(|&&k| k == ProcessKind::Worker).count();
        assert_eq!(kinds[0], ProcessKind::Main, "{kinds:?}");
        // Persistent: the same two through every epoch.
        assert_eq!(workers, run.config.num_workers, "{kinds:?}");
        for process in &run.processes {
            assert_eq!(process.epochs.len(), run.epochs.len(), "{process:?}");
            for epoch in &process.epochs {
                assert!(!epoch.series.is_empty(), "{process:?}");
                assert!(epoch.peak_pss_bytes > 0 && epoch.peak_private_bytes > 0);
            }
        }
        for epoch in &run.epochs {
            let memory = epoch.memory.expect("every epoch's memory");
            assert!(memory.sweeps >= 2, "{memory:?}");
            assert_eq!(
                memory.worker_pss_bytes > 0,
                run.config.num_workers > 0,
                "{memory:?}"
            );
            assert_eq!(
                memory.peak_pss_bytes,
                memory.main_pss_bytes + memory.worker_pss_bytes + memory.helper_pss_bytes
            );
        }
    }
    let table = measured().text();
    let nw2 = table_row(&table, "| 2 ");
    assert!(nw2.contains(" MiB (workers "), "{nw2}");
}

/// Workers that end with the epoch (forked, not persistent) are swept after its last
/// batch: in an epoch far shorter than the watch's interval, as here, no periodic sweep
/// saw them, and the config's memory left them out (0 MiB of workers beside 50 MiB for
/// the same workers persisting).
#[test]
fn workers_that_end_with_a_short_epoch_are_counted() {
    assert_each_worker_seen_in_a_short_epoch(1);
}

/// Likewise below each rank: a rank asks its coordinator for the sweep, and waits for it,
/// before its workers end.
#[test]
fn workers_of_ranks_that_end_with_a_short_epoch_are_counted() {
    assert_each_worker_seen_in_a_short_epoch(2);
}

/// One short epoch of `ranks` ranks, each with two forked workers that end with it:
/// every worker is seen, with its memory.
fn assert_each_worker_seen_in_a_short_epoch(ranks: usize) {
    let dir = tempfile::TempDir::new().unwrap();
    let saved = SavedRun::in_dir(dir.path());
    let ranks_set = format!("ranks={ranks}");
    let sets = [
        "samples=256",
        "batch_size=64",
        "epochs=1",
        "num_workers=2",
        "worker_kind=fork",
        "persistent_workers=false",
        "extra_configs=[]",
        &ranks_set,
    ];
    let output = loaderbench(&saved.run_args("seed-light", &sets));
    assert!(output.status.success(), "{}", stderr(&output));
    let result = results_file::read(&saved.json).unwrap();
    let run = &result.results[0];
    // The epoch's own figures are those of its peak, which may come after the workers
    // ended (the main process still growing): their share there can be none.
    let workers: Vec<_> = run
        .processes
        .iter()
        .filter(|p| p.kind == ProcessKind::Worker)
        .collect();
    let peaks: Vec<u64> = workers
        .iter()
        .flat_map(|worker| worker.epochs.iter().map(|epoch| epoch.peak_pss_bytes))
        .collect();
    assert!(
        workers.len() == 2 * ranks
            && peaks.len() == 2 * ranks
            && peaks.iter().all(|&peak| peak > 0),
        "{:?}",
        run.processes
    );
}

#[test]
fn a_memory_limit_between_two_configs_keeps_the_bigger_out_of_the_recommendation() {
    // Without a limit, two workers are faster and recommended: the limit is what
    // changes the answer below.
    let free = recommend(&[]);
    assert!(free.contains("\nUse nw=2 persistent."), "{free}");
    let result = result();
    let memory = MemoryReport::of(&result, &measured_configs(&result));
    let [nw0, nw2] = [0, 1].map(|i| memory.configs[i].projected_bytes);
    assert!(
        nw2 > nw0 + (32 << 20),
        "workers cost memory: {nw0} against {nw2}"
    );
    let between = format!("{}B", (nw0 + nw2) / 2);
    let limited = recommend(&["--memory-limit", &between]);
    assert!(limited.contains("\nUse nw=0."), "{limited}");
    assert!(
        limited.contains("nw=2 persistent (")
            && limited.contains("does not fit the memory limit of"),
        "{limited}"
    );
    assert!(limited.contains("(memory_limit)"), "{limited}");
}

#[test]
fn a_memory_limit_that_is_no_size_or_out_of_range_is_refused() {
    for (limit, problem) in [
        ("lots", "--memory-limit lots:"),
        ("1KiB", "--memory-limit 1KiB: 1.0 KiB is out of range"),
    ] {
        let output = loaderbench(&["validate", "seed-light", "--memory-limit", limit]);
        assert_error_line(&output, 2, &[problem]);
    }
}
