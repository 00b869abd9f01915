//! The analysis through the CLI as a process, on real libtorch: `run --recommend` prints
//! the ledger, the scaling line and the recommendation and exports them in the JSON;
//! repeats show their intervals; baselines are saved (from a run, a JSON export or a
//! journal), listed and compared, all under a temporary `LOADERBENCH_DATA_DIR`; the
//! training step reports whether the loader keeps up; bad names and steps exit with 2.
//! Each sweep runs once, for the first test that needs it, and serves its other tests.

use std::path::Path;
use std::process::Output;
use std::sync::OnceLock;

use tempfile::TempDir;

use crate::common;
use common::runs::{SharedRun, as_measured_quietly, shared_dir};
use common::{
    assert_printed, assert_said, json_file, loaderbench_with, path_str, run_args, stderr, stdout,
};
use loaderbench_measure::DATA_DIR_ENV;

/// Runs `loaderbench ARGS` with its data under `data`.
fn in_data_dir(data: &Path, args: &[&str]) -> Output {
    loaderbench_with(args, &[(DATA_DIR_ENV, data.as_os_str())])
}

/// A small sweep's settings: no workers, two restarted workers, two persistent workers.
const SMALL_SWEEP: [&str; 5] = [
    "samples=1024",
    "batch_size=128",
    "num_workers=0,2",
    "pin_memory=false",
    "extra_configs=[{\"num_workers\":2,\"persistent_workers\":true}]",
];

/// The small sweep with its journal at `journal`, then `extra`.
fn small_sweep<'a>(journal: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = run_args("seed-light", &SMALL_SWEEP, &["--journal", journal]);
    args.extend_from_slice(extra);
    args
}

/// The small sweep measured in `dir`, journaled to `dir/j.jsonl`; returns the journal.
fn swept(dir: &Path) -> std::path::PathBuf {
    let journal = dir.join("j.jsonl");
    let output = in_data_dir(dir, &small_sweep(path_str(&journal), &[]));
    assert!(output.status.success(), "{}", stderr(&output));
    journal
}

/// The small sweep, recommending and measuring further for up to 6 s, exported to
/// `json`.
fn recommending_sweep<'a>(journal: &'a Path, json: &'a Path) -> Vec<&'a str> {
    let extra = [
        "--recommend",
        "--resolve-for",
        "6s",
        "--json",
        path_str(json),
    ];
    small_sweep(path_str(journal), &extra)
}

/// `report --recommend` on the run `run` measured in `dir/measured.json`, read back with
/// the meter's verdict cleared, exporting `dir/r.json`: a busy machine (other tests,
/// other builds) may mark configs disturbed, and then no config is named; cleared, the
/// same measurements name the config a quiet machine's would, so every test of it checks
/// one outcome.
fn recommended_quietly(dir: &Path, run: &[&str]) -> Output {
    let measured = dir.join("measured.json");
    let mut args = run.to_vec();
    args.extend(["--json", path_str(&measured)]);
    let output = in_data_dir(dir, &args);
    assert!(output.status.success(), "{}", stderr(&output));
    as_measured_quietly(&measured);
    let json = dir.join("r.json");
    let report = [
        "report",
        path_str(&measured),
        "--recommend",
        "--json",
        path_str(&json),
    ];
    in_data_dir(dir, &report)
}

/// A sweep with `--recommend` (two repeats, 20 planned epochs), read back as a quiet
/// machine's by `report --recommend` (see [`recommended_quietly`]), with its JSON; run
/// once by the first test that needs it.
fn recommended() -> &'static SharedRun {
    static RECOMMENDED: OnceLock<SharedRun> = OnceLock::new();
    SharedRun::once(&RECOMMENDED, |dir| {
        let journal = dir.join("j.jsonl");
        let extra = [
            "--set",
            "repeats=2",
            "--set",
            "planned_epochs=20",
            "--recommend",
            "--resolve-for",
            "0s",
        ];
        recommended_quietly(dir, &small_sweep(path_str(&journal), &extra))
    })
}

/// The recommendation's paragraph in `text`, below its heading.
fn paragraph(text: &str) -> String {
    text.split("\nRecommendation: ")
        .nth(1)
        .and_then(|rest| rest.split_once('\n'))
        .map(|(_, paragraph)| paragraph.to_owned())
        .unwrap_or_else(|| panic!("no recommendation in: {text}"))
}

#[test]
fn recommend_shows_the_interval_of_repeated_configs() {
    let text = recommended().text();
    let row = text
        .lines()
        .find(|l| l.starts_with("| 2 ") && l.contains("True"))
        .unwrap_or_else(|| panic!("no persistent row in: {text}"));
    assert!(row.contains(" ["), "repeats show an interval: {row}");
}

/// The start-up ledger, what persistent workers save and the scaling line, each printed
/// above the recommendation.
#[test]
fn recommend_prints_the_ledger_the_savings_and_the_scaling_line() {
    let text = recommended().text();
    let sections: [(&str, &[&str]); 3] = [
        (
            "the start-up ledger",
            &[
                "Start-up ledger (milliseconds, medians)",
                "| nw=2 persistent |",
            ],
        ),
        (
            "what persistent workers save",
            &[
                "Persistent workers save ",
                "for nw=2 (measured against nw=2 persistent",
            ],
        ),
        ("the scaling line", &["num_workers: 0 workers "]),
    ];
    for (section, fragments) in sections {
        for fragment in fragments {
            assert!(
                text.contains(fragment),
                "{section}: `{fragment}` missing from {text}"
            );
        }
    }
}

#[test]
fn recommend_prints_a_config_to_use() {
    let paragraph = paragraph(&recommended().text());
    assert!(paragraph.starts_with("Use nw="), "{paragraph}");
    assert!(
        paragraph.contains("Over 20 epochs it projects to"),
        "{paragraph}"
    );
    assert!(paragraph.contains("MiB of memory"), "{paragraph}");
}

#[test]
fn recommend_exports_the_ledger_and_the_estimates_in_the_json() {
    let exported = recommended().json("r.json");
    let analysis = &exported["analysis"];
    assert_eq!(analysis["planned_epochs"], 20);
    assert_eq!(analysis["ledger"].as_array().unwrap().len(), 3);
    assert_eq!(
        analysis["estimates"][0]["epoch_s"]["n"], 2,
        "2 repeats × epoch 2"
    );
    assert_eq!(exported["results"].as_array().unwrap().len(), 6);
}

#[test]
fn recommend_exports_the_printed_recommendation_in_the_json() {
    let run = recommended();
    let paragraph = paragraph(&run.text());
    let exported = run.json("r.json");
    let recommendations = exported["analysis"]["recommendations"].as_array().unwrap();
    assert_eq!(recommendations.len(), 1, "one runtime, one question");
    let recommendation = &recommendations[0];
    assert!(
        paragraph.starts_with(recommendation["text"].as_str().unwrap()),
        "the JSON holds the printed paragraph"
    );
    assert!(
        recommendation["group"]
            .as_str()
            .unwrap()
            .ends_with(" · loaderbench")
    );
    let verdict = recommendation["verdict"]["text"].as_str().unwrap();
    assert!(
        paragraph.contains(&format!("Verdict: {verdict}.")),
        "the verdict closes the paragraph: {paragraph}"
    );
    assert!(
        ["fastest", "equally_fast", "not_resolved"]
            .contains(&recommendation["verdict"]["kind"].as_str().unwrap()),
        "{recommendation}"
    );
    let snippet = recommendation["snippet"].as_str().unwrap();
    assert!(
        paragraph.contains(&snippet.replace('\n', "\n    ")),
        "the snippet is printed, indented: {paragraph}"
    );
    assert!(recommendation["config"].is_u64());
}

/// A sweep saved as baseline `before` (with its journal `j.jsonl` and JSON export
/// `r.json`) under a data folder of its own, `data`, run once by the first test that
/// needs it.
/// The epochs of the baselines' runs: three typical epochs a config, whose scatter a
/// comparison judges by.
const BASELINE_EPOCHS: &str = "epochs=4";

fn baselines() -> &'static SharedRun {
    static BASELINES: OnceLock<SharedRun> = OnceLock::new();
    SharedRun::once(&BASELINES, |dir| {
        let journal = dir.join("j.jsonl");
        let json = dir.join("r.json");
        let args = small_sweep(
            path_str(&journal),
            &[
                "--set",
                BASELINE_EPOCHS,
                "--save-baseline",
                "before",
                "--json",
                path_str(&json),
            ],
        );
        in_data_dir(&dir.join("data"), &args)
    })
}

/// `baseline save kept --from-journal` and `baseline save exported` on the baselines'
/// sweep's journal and export, once.
fn saved_from_files() -> &'static (Output, Output) {
    static SAVED: OnceLock<(Output, Output)> = OnceLock::new();
    let baselines = baselines();
    SAVED.get_or_init(|| {
        let (data, journal, json) = (
            baselines.path("data"),
            baselines.path("j.jsonl"),
            baselines.path("r.json"),
        );
        let from_journal = in_data_dir(
            &data,
            &[
                "baseline",
                "save",
                "kept",
                "--from-journal",
                path_str(&journal),
            ],
        );
        let from_export = in_data_dir(&data, &["baseline", "save", "exported", path_str(&json)]);
        (from_journal, from_export)
    })
}

/// The repeats of each config in a journal's config lines.
fn journaled_repeats(journal: &Path) -> Vec<(usize, usize)> {
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|entry| entry["entry"] == "config")
        .map(|entry| {
            let result = &entry["result"];
            let number = |key: &str| result[key].as_u64().unwrap() as usize;
            (number("config_index"), number("repeat"))
        })
        .collect()
}

#[test]
fn an_unresolved_recommendation_is_measured_further_within_its_limit() {
    // One round with two epochs shows nothing of the noise: every config stays open, so
    // `--recommend` measures them again, appending the new rounds to the journal.
    let dir = shared_dir();
    let journal = dir.path().join("j.jsonl");
    let json = dir.path().join("r.json");
    let mut args = recommending_sweep(&journal, &json);
    args.retain(|arg| *arg != "-q");
    let output = in_data_dir(dir.path(), &args);
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("not resolved yet: measuring the configs it hinges on for up to 6s"),
        "{err}"
    );
    // Every config, or on a busy machine those whose one round was disturbed.
    assert!(err.contains("round 1: nw="), "{err}");
    let repeats = journaled_repeats(&journal);
    assert!(
        repeats.iter().any(|&(_, repeat)| repeat >= 1),
        "{repeats:?}"
    );
    let exported = json_file(&json);
    let results = exported["results"].as_array().unwrap();
    assert_eq!(
        results.len(),
        repeats.len(),
        "the export holds every round measured"
    );
    // Without a limit, nothing more is measured, and the verdict (read as a quiet
    // machine's: the meter may mark configs disturbed here) says why it is open.
    let journal = dir.path().join("none.jsonl");
    let args = small_sweep(path_str(&journal), &["--recommend", "--resolve-for", "0s"]);
    let output = in_data_dir(dir.path(), &args);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(journaled_repeats(&journal).len(), 3);
    let mut once = loaderbench_measure::results_file::read(&journal).unwrap();
    for run in &mut once.results {
        run.disturbed = false;
    }
    let verdict = &loaderbench_analysis::Analysis::of(&once).recommendations[0].verdict;
    assert!(
        verdict
            .text
            .contains("one round shows nothing of this machine's noise"),
        "{verdict:?}"
    );
    // The pick (nw=0, fewest workers) first, then the likeliest challengers.
    let mut hinges = verdict.hinges_on.clone();
    assert_eq!(hinges[0], 0, "{verdict:?}");
    hinges.sort_unstable();
    assert_eq!(hinges, [0, 1, 2]);
}

/// Measuring further that cannot start (here: no scratch folder, as a full or missing
/// temporary directory gives) fails the command, but after the finished sweep's tables
/// and exports, which keep the sweep's status: the error used to end the command
/// before either was written.
#[test]
fn a_resolve_that_cannot_start_still_prints_and_exports_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.jsonl");
    let json = dir.path().join("r.json");
    let args = recommending_sweep(&journal, &json);
    let missing = dir.path().join("no-such-tmp");
    let output = loaderbench_with(
        &args,
        &[
            (DATA_DIR_ENV, dir.path().as_os_str()),
            ("TMPDIR", missing.as_os_str()),
        ],
    );
    common::assert_error_line(
        &output,
        1,
        &[
            "cannot measure further: no scratch folder in",
            "no-such-tmp",
        ],
    );
    let tables = String::from_utf8_lossy(&output.stdout);
    assert!(tables.contains("| num_workers |"), "{tables}");
    let exported = json_file(&json);
    assert_eq!(
        exported["status"]["status"], "finished",
        "{}",
        exported["status"]
    );
    assert_eq!(exported["results"].as_array().unwrap().len(), 3);
}

/// `loaderbench resolve RUN --resolve-for LIMIT --json JSON` in `dir`, succeeded.
fn resolved(dir: &Path, run: &Path, limit: &str, json: &Path) -> Output {
    let args = [
        "resolve",
        path_str(run),
        "--resolve-for",
        limit,
        "--json",
        path_str(json),
    ];
    let output = in_data_dir(dir, &args);
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

/// `resolve` on a journal cut mid-write (the run killed as it wrote its last config)
/// says so, as `report` does, and measures the config the run never finished with the
/// ones the answer hinges on: the verdict named the one config measured "the only
/// config of this question", resolved.
#[test]
fn resolving_a_cut_journal_measures_the_configs_it_never_finished() {
    let dir = tempfile::tempdir().unwrap();
    let journal = swept(dir.path());
    // The run's header and first two configs whole, the third cut, no end.
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[3].starts_with(r#"{"entry":"config""#),
        "{}",
        &lines[3][..40]
    );
    let cut = format!("{}\n{}", lines[..3].join("\n"), &lines[3][..200]);
    std::fs::write(&journal, cut).unwrap();
    let report = in_data_dir(dir.path(), &["report", path_str(&journal), "--recommend"]);
    assert!(report.status.success(), "{}", stderr(&report));
    assert_printed(
        &report,
        "nw=2 persistent was not measured (the run ended before it)",
    );
    let json = dir.path().join("r.json");
    let output = resolved(dir.path(), &journal, "5s", &json);
    assert_said(
        &output,
        "line 4 is cut: the run stopped mid-write; 2 configs kept",
    );
    let measured: Vec<u64> = json_file(&json)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["config_index"].as_u64().unwrap())
        .collect();
    assert!(measured.contains(&2), "{measured:?}");
}

/// A wide tune's results are measured further like any run's: its saved preset is the
/// widened one, whose plan measures the config without workers once.
#[test]
fn a_wide_tune_can_be_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let tuned = dir.path().join("t.json");
    let mut tune = vec![
        "tune",
        "seed-light",
        "--space",
        "wide",
        "--budget",
        "3s",
        "-q",
    ];
    tune.extend(["--set", "samples=1024", "--json", path_str(&tuned)]);
    let output = in_data_dir(dir.path(), &tune);
    assert!(output.status.success(), "{}", stderr(&output));
    let json = dir.path().join("r.json");
    resolved(dir.path(), &tuned, "2s", &json);
    let (before, after) = (json_file(&tuned), json_file(&json));
    assert_eq!(before["configs"], after["configs"]);
}

#[test]
fn a_run_saves_a_baseline_in_the_data_dir() {
    let baselines = baselines();
    assert!(baselines.text().contains("saved baseline `before`"));
    assert!(baselines.path("data/baselines/before.json").is_file());
}

#[test]
fn saving_a_baseline_under_a_taken_name_says_it_replaced_it() {
    let json = baselines().path("r.json");
    let data = tempfile::tempdir().unwrap();
    let save = || in_data_dir(data.path(), &["baseline", "save", "twice", path_str(&json)]);
    let (first, second) = (stdout(&save()), stdout(&save()));
    assert!(
        first.starts_with("saved baseline `twice`: ") && !first.contains("in place of"),
        "{first}"
    );
    assert!(
        second.starts_with("saved baseline `twice` (in place of the one saved before): "),
        "{second}"
    );
}

#[test]
fn a_run_compares_each_config_with_a_baseline() {
    let baselines = baselines();
    // A journal of its own: the saved sweep's is read by the tests that save from it.
    let journal = baselines.path("compared.jsonl");
    let extra = ["--set", BASELINE_EPOCHS, "--baseline", "before"];
    let args = small_sweep(path_str(&journal), &extra);
    let compared = in_data_dir(&baselines.path("data"), &args);
    assert!(compared.status.success(), "{}", stderr(&compared));
    let text = stdout(&compared);
    let section = text
        .split("Against baseline `before` (typical epoch time, medians)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no comparison in: {text}"));
    let lines: Vec<&str> = section.lines().collect();
    assert_eq!(lines.len(), 3, "{section}");
    // Three typical epochs on each side: every change is judged, by its interval.
    for (line, label) in lines.iter().zip(["nw=0:", "nw=2:", "nw=2 persistent:"]) {
        assert!(line.starts_with(label), "{line}");
        let (_, verdict) = line.split_once("%): ").unwrap_or_else(|| panic!("{line}"));
        let judged = [
            "faster, beyond the noise (±",
            "slower, beyond the noise (±",
            "as fast, within ±5% (measured to ±",
            "not resolved (±",
        ];
        assert!(
            judged.iter().any(|start| verdict.starts_with(start)),
            "{line}"
        );
    }
}

/// Single typical epochs are not judged; configs one side measured alone are named
/// (the persistent extra config gives way to nw=1 here).
#[test]
fn a_change_of_single_typical_epochs_is_not_judged() {
    let baselines = baselines();
    let journal = baselines.path("single.jsonl");
    let extra = [
        "--set",
        "extra_configs=[(num_workers: 1)]",
        "--baseline",
        "before",
    ];
    let args = small_sweep(path_str(&journal), &extra);
    let compared = in_data_dir(&baselines.path("data"), &args);
    assert!(compared.status.success(), "{}", stderr(&compared));
    assert_printed(
        &compared,
        "%): not judged: one typical epoch on a side shows no scatter; measure three epochs or more (`--set epochs=4`)",
    );
    assert_printed(&compared, "\nnot in the baseline: nw=1\n");
    assert_printed(&compared, "\nin the baseline only: nw=2 persistent\n");
}

#[test]
fn a_baseline_is_saved_from_a_journal() {
    let (from_journal, _) = saved_from_files();
    assert!(from_journal.status.success(), "{}", stderr(from_journal));
}

#[test]
fn a_baseline_is_saved_from_a_json_export() {
    let (_, from_export) = saved_from_files();
    assert!(from_export.status.success(), "{}", stderr(from_export));
}

#[test]
fn saved_baselines_are_listed_by_name() {
    let baselines = baselines();
    saved_from_files();
    let listed = in_data_dir(&baselines.path("data"), &["baseline", "list"]);
    assert_eq!(stdout(&listed), "before\nexported\nkept\n");
}

#[test]
fn a_run_compared_with_its_own_baseline_is_no_change() {
    let baselines = baselines();
    saved_from_files();
    let same = in_data_dir(
        &baselines.path("data"),
        &[
            "baseline",
            "compare",
            "exported",
            path_str(&baselines.path("r.json")),
        ],
    );
    assert!(same.status.success(), "{}", stderr(&same));
    assert_printed(&same, "nw=2 persistent: ");
    assert_printed(&same, "(+0.0%): ");
    // The same epochs on both sides: never a change, and always judged.
    let text = stdout(&same);
    assert!(!text.contains("beyond the noise"), "{text}");
    assert!(!text.contains("not judged"), "{text}");
}

/// Asserts the small sweep with `extra` exits with 2 and an error holding each of
/// `fragments`, before it runs (no journal).
fn assert_refused_before_running(extra: &[&str], fragments: &[&str]) {
    let dir = TempDir::new().unwrap();
    let journal = dir.path().join("j.jsonl");
    let output = in_data_dir(dir.path(), &small_sweep(path_str(&journal), extra));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{extra:?}: {err}");
    for fragment in fragments {
        assert!(
            err.contains(fragment),
            "{extra:?}: `{fragment}` missing from {err}"
        );
    }
    assert!(!journal.exists(), "{extra:?} ran before failing");
}

#[test]
fn a_missing_baseline_exits_2_before_running() {
    assert_refused_before_running(
        &["--baseline", "missing"],
        &["missing.json", "no baseline named `missing`"],
    );
}

#[test]
fn a_baseline_name_that_leaves_the_folder_exits_2_before_running() {
    assert_refused_before_running(
        &["--save-baseline", "../escape"],
        &["baseline name `../escape`"],
    );
}

#[test]
fn a_negative_step_exits_2_before_running() {
    assert_refused_before_running(
        &["--set", "step={\"fixed\":-1}"],
        &["field `step`", "fixed(MS) -1 is out of range"],
    );
}

#[test]
fn zero_planned_epochs_exit_2_before_running() {
    assert_refused_before_running(&["--set", "planned_epochs=0"], &["field `planned_epochs`"]);
}

#[test]
fn a_file_that_is_not_a_result_is_not_saved_as_a_baseline() {
    let dir = TempDir::new().unwrap();
    let not_a_result = dir.path().join("x.json");
    std::fs::write(&not_a_result, "{}").unwrap();
    let output = in_data_dir(
        dir.path(),
        &["baseline", "save", "x", path_str(&not_a_result)],
    );
    assert_eq!(output.status.code(), Some(2));
    assert_said(&output, "x.json: not a loaderbench results file");
}

/// A sweep with a model step (an MLP of 32 hidden units) and its JSON `r.json`, run once
/// by the first test that needs it.
fn model_step() -> &'static SharedRun {
    static MODEL_STEP: OnceLock<SharedRun> = OnceLock::new();
    SharedRun::once(&MODEL_STEP, |dir| {
        let journal = dir.join("j.jsonl");
        let json = dir.join("r.json");
        let extra = [
            "--set",
            "step={\"mlp\":{\"hidden\":32}}",
            "--json",
            path_str(&json),
        ];
        in_data_dir(dir, &small_sweep(path_str(&journal), &extra))
    })
}

#[test]
fn a_model_step_prints_whether_each_config_is_input_bound() {
    let text = model_step().text();
    assert!(text.contains("Training step: mlp 32"), "{text}");
    let verdicts: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(": input-bound: "))
        .collect();
    assert_eq!(verdicts.len(), 3, "{text}");
}

#[test]
fn a_model_step_compares_its_time_with_workers_against_nw0() {
    let step = model_step();
    let text = step.text();
    let compared: Vec<&str> = text.lines().filter(|l| l.contains(" ms at nw=0")).collect();
    assert_eq!(compared.len(), 2, "the two configs with workers: {text}");
    assert!(
        compared
            .iter()
            .all(|l| l.contains("2 workers slow your step by")
                || l.contains("2 workers leave your step's time as it is, within 5%")
                || l.contains("2 workers may slow your step by")
                || l.contains("your step is")
                || l.contains("your step may be")),
        "{compared:?}"
    );
    assert!(text.contains("input-bound "), "{text}");
    let exported = step.json("r.json");
    let contention = exported["analysis"]["contention"].as_array().unwrap();
    assert_eq!(contention.len(), 2);
    for row in contention {
        assert!(row["step_per_batch_s"].as_f64().unwrap() > 0.0, "{row}");
        assert_eq!(row["alone_label"], "nw=0");
    }
}

#[test]
fn a_model_step_exports_the_step_and_the_stall_share() {
    let exported = model_step().json("r.json");
    assert_eq!(exported["step"]["mlp"]["hidden"], 32);
    let share = exported["analysis"]["input_bound"][0]["stall_share"]
        .as_f64()
        .unwrap();
    assert!((0.0..=1.0).contains(&share), "{share}");
}

/// Thread and fork workers at 2 on our engine, read back as a quiet machine's (as
/// [`recommended`] does): the analysis compares them in the text and the JSON, speed,
/// memory and CPU time, without a GIL line, since our engine runs no Python.
#[test]
fn thread_and_fork_workers_are_compared_in_the_text_and_the_json() {
    let dir = TempDir::new().unwrap();
    // Epochs long enough that their CPU time is counted: the kernel counts it in ticks
    // of 10 ms, and 512 samples took 10 ms with threads.
    let sets = [
        "samples=4096",
        "batch_size=128",
        "num_workers=2",
        "worker_kind=thread,fork",
        "pin_memory=false",
    ];
    let output = recommended_quietly(dir.path(), &run_args("seed-light", &sets, &[]));
    assert!(output.status.success(), "{}", stderr(&output));

    let text = stdout(&output);
    let heading = "\nWorker kinds: threads against fork workers (synthetic ";
    let paragraph = text
        .split_once(heading)
        .and_then(|(_, rest)| rest.lines().nth(1))
        .unwrap_or_else(|| panic!("no comparison in: {text}"));
    assert!(
        paragraph.starts_with("At 2 workers, threads "),
        "{paragraph}"
    );
    assert!(
        paragraph.contains("; they use ") && paragraph.contains(" CPU time per epoch ("),
        "memory and CPU time: {paragraph}"
    );
    assert!(!text.contains("GIL"), "our engine runs no Python: {text}");

    let exported = json_file(&dir.path().join("r.json"));
    let comparisons = exported["analysis"]["worker_kinds"].as_array().unwrap();
    assert_eq!(comparisons.len(), 1, "{comparisons:?}");
    let comparison = &comparisons[0];
    assert_eq!(
        comparison["text"], paragraph,
        "the JSON holds the printed paragraph"
    );
    assert_eq!(comparison["threads"], "threads");
    assert_eq!(comparison["processes"], "fork workers");
    assert!(comparison["gil"].is_null(), "{comparison}");
    let point = &comparison["points"][0];
    assert_eq!(point["num_workers"], 2);
    for side in ["threads", "processes"] {
        let memory = point[format!("{side}_memory_bytes")].as_u64().unwrap();
        assert!(memory > 1 << 20, "{side}: {point}");
        let cpu = point[format!("{side}_cpu_s")].as_f64().unwrap();
        assert!(cpu > 0.0, "{side}: {point}");
    }
}

/// `loaderbench resolve --events` (the app's resolve) stops before each epoch its rounds
/// measure, writes `gate` and waits for `go` on its standard input, so that the app's
/// window draws only between epochs: held at its first gate, it reports nothing, and it
/// passes a gate before each config it measures.
#[test]
fn an_events_resolve_waits_at_each_gate_for_the_app() {
    use std::io::{BufRead, Write};
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let journal = swept(dir.path());
    let json = dir.path().join("r.json");
    let args = [
        "resolve",
        path_str(&journal),
        "--resolve-for",
        "4s",
        "--json",
        path_str(&json),
        "--events",
        "--quiet",
    ];
    let mut child = common::loaderbench_command(&args)
        .env(DATA_DIR_ENV, dir.path())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (lines, received) = crossbeam_channel::unbounded();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let next = |limit: Duration| received.recv_timeout(limit).ok();
    // Up to the first gate: the round starting.
    let mut seen = Vec::new();
    loop {
        let line = next(Duration::from_secs(60)).expect("a gate before the first epoch");
        if line == "gate" {
            break;
        }
        seen.push(line);
    }
    assert!(
        seen.iter().all(|l| !l.contains(r#""event":"measured""#)),
        "measured before any gate: {seen:?}"
    );
    // Held there for a second (the child waits two at most), it measures nothing.
    let held = Instant::now();
    while held.elapsed() < Duration::from_secs(1) {
        if let Some(line) = next(Duration::from_millis(50)) {
            panic!("the resolve went on without its go: {line}");
        }
    }
    writeln!(stdin, "go").unwrap();
    let (mut gates, mut measured) = (1, 0);
    while let Some(line) = next(Duration::from_secs(60)) {
        if line == "gate" {
            gates += 1;
            let _ = writeln!(stdin, "go");
        } else if line.contains(r#""event":"measured""#) {
            measured += 1;
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(measured > 0, "the resolve measured nothing");
    assert!(
        gates >= measured,
        "{gates} gates for {measured} configs measured"
    );
}
