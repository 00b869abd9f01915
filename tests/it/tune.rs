//! `loaderbench tune` as a process: it stops at its budget (within 10%), leaves its
//! trail in the JSON export and the journal (which `report` reads back like any run),
//! and a stop keeps the trail and every config measured.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common;
use common::process::children_running;
use common::{
    assert_said, loaderbench, loaderbench_command, path_str, stderr, stdout, wait_with_deadline,
};

/// A wide space: far more configs than any budget here measures, on a dataset whose
/// epochs are long enough that no budget here sees five rounds (the least a settled
/// answer needs), so the budget ends the search.
const WIDE: [&str; 6] = [
    "--space",
    "wide",
    "--set",
    "samples=30000",
    "--set",
    "epochs=2",
];

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("the JSON export")).expect("JSON")
}

/// Tests that hold tune to wall-clock time, or need measurements the meter finds
/// undisturbed: `scripts/test` runs them after every other test, one at a time, where
/// nothing else loads the machine.
mod on_a_quiet_machine {
    use super::*;

    /// The built-in A/A check tuned with three more copies: every copy is its original
    /// measured again, so all four are the best set (the trail said of a copy "slower than
    /// the best set beyond the noise", and of copies measured faster than the pick too).
    /// Halving still sets the slower half of them aside after the first round, which the
    /// progress says as "set aside", not "out": a config set aside comes back if the answer
    /// comes to hinge on it, and the verdict counts its rounds either way. On a quiet
    /// machine: beside other tests the meter set most measurements aside as disturbed, and
    /// the copies measured only while disturbed kept the tune open to its budget.
    #[test]
    fn a_tuned_a_a_check_keeps_its_copies_in_the_best_set_and_says_which_were_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("t.json");
        let copies = "extra_configs=[(copy: 1), (copy: 2), (copy: 3)]";
        let mut args = vec!["tune", "aa-check", "--budget", "20"];
        args.extend(["--set", "samples=2048", "--set", copies]);
        args.extend(["--json", path_str(&json)]);
        let output = loaderbench(&args);
        let err = stderr(&output);
        assert!(output.status.success(), "{err}");
        let result = read_json(&json);
        let trail = &result["tune"];
        let fates: Vec<&str> = trail["configs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["fate"]["fate"].as_str().unwrap())
            .collect();
        assert_eq!(fates, ["best"; 4], "{trail}");
        let set_aside: Vec<&str> = err
            .lines()
            .filter_map(|line| line.strip_prefix("  set aside: "))
            .collect();
        // Halving sets aside the slower half of the four (fewer where the meter set a
        // measurement aside as disturbed, and the config was measured again first).
        assert!(!set_aside.is_empty(), "{err}");
        assert!(
            set_aside.iter().all(|line| line
                .ends_with("(in the slower half; back in if the answer comes to hinge on it)")),
            "{err}"
        );
        assert!(!err.contains("  out: "), "{err}");
    }

    #[test]
    fn tune_stops_at_its_budget_and_leaves_its_trail_where_report_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let (json, journal) = (dir.path().join("t.json"), dir.path().join("t.jsonl"));
        let budget_s = 12.0;
        let mut args = vec!["tune", "seed-light", "--budget", "12s"];
        args.extend(WIDE);
        args.extend(["--json", path_str(&json), "--journal", path_str(&journal)]);
        let started = Instant::now();
        let output = loaderbench(&args);
        let wall_s = started.elapsed().as_secs_f64();
        assert!(output.status.success(), "{}", stderr(&output));
        let result = read_json(&json);
        let trail = &result["tune"];
        assert_eq!(trail["stop"], "budget", "{trail}");
        let used_s = trail["used_s"].as_f64().unwrap();
        assert!(
            (0.9 * budget_s..=1.1 * budget_s).contains(&used_s),
            "used {used_s:.1} s of {budget_s} s"
        );
        // Beyond the search: the process starting, the tables and the export.
        assert!(
            wall_s < 1.1 * budget_s + 5.0,
            "the process took {wall_s:.1} s"
        );
        assert_rounds_begun(trail, &stderr(&output));
        let configs = result["configs"].as_array().unwrap().len();
        assert_eq!(trail["configs"].as_array().unwrap().len(), configs);
        assert!(configs > 40, "the wide space has {configs} configs");
        assert_eq!(
            result["results"].as_array().unwrap().len(),
            common::journaled_configs(&journal),
            "the JSON holds what the journal holds"
        );
        let report = loaderbench(&["report", path_str(&journal)]);
        assert!(report.status.success(), "{}", stderr(&report));
        let text = stdout(&report);
        assert!(
            text.contains(&format!("tune: {configs} configs"))
                && text.contains("the budget was spent"),
            "{text}"
        );
        assert!(
            text.contains("| config") && text.contains("| fate"),
            "{text}"
        );
        // The dataset the rounds opened, though the header was written before any did.
        let dataset = result["dataset"].as_str().unwrap();
        assert!(
            dataset.starts_with("synthetic FashionMNIST-shaped ("),
            "{dataset}"
        );
        assert!(text.contains(&format!("\nlight — {dataset}\n")), "{text}");
    }

    /// Two questions whose configs differ some ten times in cost: the light pipeline's
    /// and the heavy one's (unoptimized, as `make test` builds it, a hundred times). The
    /// anchors' round measures each question's first anchor, then the light one's others,
    /// and ends before the heavy one's: the light question has a round before the heavy
    /// one's other anchors, rather than waiting for them (a 60 s tune of
    /// `seed-heavy-pytorch` spent its budget on the PyTorch runtime's anchors and measured
    /// our engine's question in one round). Any light config counts: the meter may set
    /// one's measurement aside as disturbed.
    #[test]
    fn a_quick_question_has_its_rounds_before_a_slow_one_s_anchors() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("t.json");
        let mut args = vec!["tune", "seed-light", "--budget", "30s"];
        args.extend(["--set", "pipeline=[light, heavy]", "--set", "samples=30000"]);
        args.extend(["--json", path_str(&json)]);
        let output = loaderbench(&args);
        let err = stderr(&output);
        assert!(output.status.success(), "{err}");
        let result = read_json(&json);
        let labels = result["labels"].as_array().unwrap();
        let rounds_of = |of: &dyn Fn(&str) -> bool| -> Vec<u64> {
            let results = result["results"].as_array().unwrap();
            let label = |r: &serde_json::Value| {
                labels[r["config_index"].as_u64().unwrap() as usize]
                    .as_str()
                    .unwrap()
            };
            (results.iter())
                .filter(|r| of(label(r)))
                .map(|r| r["repeat"].as_u64().unwrap())
                .collect()
        };
        let light = rounds_of(&|label| !label.contains("heavy"));
        let heavy_rest = rounds_of(&|label| label.contains("heavy") && label != "nw=0 heavy");
        let heavy_rest_first = heavy_rest.into_iter().min();
        assert!(
            light
                .iter()
                .any(|&r| r > 0 && heavy_rest_first.is_none_or(|h| r < h)),
            "light in rounds {light:?}, heavy's other anchors first in round \
             {heavy_rest_first:?}: {err}"
        );
    }
}

/// The trail counts the rounds that ran, each announced as it began: it counted one
/// more where the budget ended the search before a round, as it does in a budget of a
/// second that holds the anchors' round and no other.
fn assert_rounds_begun(trail: &serde_json::Value, err: &str) {
    let begun = err
        .lines()
        .filter(|line| line.starts_with("round "))
        .count();
    assert_eq!(trail["rounds"], begun, "{err}");
}

/// The budget given as a bare number of seconds, as the preset's and the app's are.
#[test]
fn a_tune_whose_budget_holds_one_round_says_one_round() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let mut args = vec!["tune", "seed-light", "--budget", "1"];
    args.extend(["--set", "samples=20000", "--set", "epochs=1"]);
    args.extend(["--json", path_str(&json)]);
    let output = loaderbench(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let trail = &read_json(&json)["tune"];
    assert_eq!(trail["budget_s"], 1.0);
    assert_rounds_begun(trail, &stderr(&output));
}

/// A quiet `tune seed-light --budget 5m` of 2,048 samples and 2 epochs, with `sets`
/// more, its JSON and journal in `dir`; returns the process and the two paths.
fn start_tune(dir: &Path, sets: &[&str]) -> (std::process::Child, PathBuf, PathBuf) {
    let (json, journal) = (dir.join("t.json"), dir.join("t.jsonl"));
    let mut args = vec!["tune", "seed-light", "--budget", "5m", "--quiet"];
    args.extend(["--set", "samples=2048", "--set", "epochs=2"]);
    for set in sets {
        args.extend(["--set", set]);
    }
    args.extend(["--json", path_str(&json), "--journal", path_str(&journal)]);
    let mut command = loaderbench_command(&args);
    command.stdout(Stdio::null());
    (command.spawn().expect("the program starts"), json, journal)
}

/// The process measuring `tune`'s round now, if one is.
fn round_process(tune: u32) -> Option<u32> {
    children_running(tune, "__measure").into_iter().next()
}

#[test]
fn stopping_a_tune_keeps_its_trail_and_what_it_measured() {
    let dir = tempfile::tempdir().unwrap();
    let (child, json, journal) = start_tune(dir.path(), &[]);
    common::wait_for_configs(&journal, 2, Duration::from_secs(120));
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill takes a pid and a signal number; no pointers.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let output = wait_with_deadline(child, Duration::from_secs(30));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{err}");
    let result = read_json(&json);
    assert_eq!(result["status"]["status"], "cancelled", "{err}");
    assert_eq!(result["tune"]["stop"], "cancelled", "{err}");
    let kept = result["results"].as_array().unwrap().len();
    assert!(kept >= 2, "{kept} configs kept: {err}");
    assert_eq!(kept, common::journaled_configs(&journal), "{err}");
    let journal_text = std::fs::read_to_string(&journal).unwrap();
    assert!(
        journal_text.contains(r#"{"entry":"tune""#),
        "the journal keeps the trail"
    );
}

#[test]
fn each_line_of_a_round_names_a_config_that_round_measured() {
    // A round stopped before it measured anything listed under its heading every config
    // it had planned that an earlier round had measured, with that round's time.
    let dir = tempfile::tempdir().unwrap();
    let (json, log) = (dir.path().join("t.json"), dir.path().join("err.txt"));
    let journal = dir.path().join("t.jsonl");
    let slow =
        r#"pipeline=[{"custom":{"name":"slow","ops":[{"cost":{"micros_per_sample":500}}]}}]"#;
    let mut args = vec!["tune", "seed-light", "--budget", "5m"];
    args.extend(["--set", "samples=2048", "--set", "epochs=2", "--set", slow]);
    args.extend(["--json", path_str(&json), "--journal", path_str(&journal)]);
    let mut command = loaderbench_command(&args);
    command
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let child = command.spawn().expect("the program starts");
    let printed = || std::fs::read_to_string(&log).unwrap_or_default();
    common::wait_until(Duration::from_secs(120), "round 1 to begin", || {
        printed().lines().any(|line| line.starts_with("round 1:"))
    });
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill takes a pid and a signal number; no pointers.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let output = wait_with_deadline(child, Duration::from_secs(30));
    let err = printed();
    assert_eq!(output.status.code(), Some(130), "{err}");
    let results = read_json(&json)["results"].as_array().unwrap().clone();
    let measured = |label: &str, round: u64| {
        results
            .iter()
            .any(|r| r["label"] == label && r["repeat"] == round)
    };
    let mut round = None;
    let mut lines = 0;
    for line in err.lines() {
        if let Some(heading) = line.strip_prefix("round ") {
            round = heading
                .split(':')
                .next()
                .and_then(|n| n.parse::<u64>().ok());
        } else if let Some((label, _)) = line.trim_start().split_once(": ")
            && line.contains(" s projected over ")
        {
            let round = round.expect("a round's heading first");
            assert!(measured(label, round), "{label} in round {round}: {err}");
            lines += 1;
        }
    }
    assert_eq!(lines, results.len(), "{err}");
}

#[test]
fn a_measuring_process_that_ignores_the_stop_is_ended_and_the_tune_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (child, json, journal) = start_tune(dir.path(), &[]);
    common::wait_for_configs(&journal, 2, Duration::from_secs(120));
    // The round's process, frozen as a debugger or a hung driver would leave it: it
    // never answers the stop.
    let measuring = common::wait_for(Duration::from_secs(60), "a round's process", || {
        round_process(child.id())
    });
    let frozen = libc::pid_t::try_from(measuring).unwrap();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill takes a pid and a signal number; no pointers.
    assert_eq!(unsafe { libc::kill(frozen, libc::SIGSTOP) }, 0);
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let output = wait_with_deadline(child, Duration::from_secs(40));
    let left = common::process::running(measuring);
    // SAFETY: as above; ends the frozen process should the tune have left it.
    unsafe { libc::kill(frozen, libc::SIGKILL) };
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(!left, "the frozen process outlived the tune");
    let result = read_json(&json);
    assert_eq!(result["status"]["status"], "cancelled", "{err}");
    let kept = result["results"].as_array().unwrap().len();
    assert!(kept >= 2, "{kept} configs kept: {err}");
}

#[test]
fn each_config_a_round_measures_is_journaled_as_it_finishes_not_when_the_round_ends() {
    // Rounds of seconds a config (a slow pipeline): a tune killed mid-round (the OOM
    // killer, a scheduler's SIGKILL) lost every config its round had finished.
    let dir = tempfile::tempdir().unwrap();
    let slow =
        r#"pipeline=[{"custom":{"name":"slow","ops":[{"cost":{"micros_per_sample":500}}]}}]"#;
    let (mut child, _, journal) = start_tune(dir.path(), &[slow]);
    // A round's process, and the configs journaled when it was first seen: the count
    // must grow while that same process still runs (a round's configs journaled only as
    // it ended were written with no round's process alive). A round whose configs were
    // all disturbed (set aside, measured again) journals none; the next round counts.
    let mut round: Option<(u32, usize)> = None;
    common::wait_until(
        Duration::from_secs(120),
        "a config journaled while its round still ran",
        || {
            let before = round_process(child.id());
            let journaled = common::journaled_configs(&journal);
            let after = round_process(child.id());
            match (before, after) {
                (Some(a), Some(b)) if a == b => match round {
                    Some((pid, base)) if pid == a => journaled > base,
                    _ => {
                        round = Some((a, journaled));
                        false
                    }
                },
                _ => false,
            }
        },
    );
    // Killed as the OOM killer ends it: its rounds' scratch folder stays behind, and the
    // next tune sweeps it.
    let (round_pid, _) = round.expect("a round seen");
    let cmdline = std::fs::read(format!("/proc/{round_pid}/cmdline")).unwrap();
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let at = args.iter().position(|&arg| arg == b"--journal").unwrap();
    let scratch = PathBuf::from(String::from_utf8_lossy(args[at + 1]).into_owned())
        .parent()
        .unwrap()
        .to_path_buf();
    let name = scratch.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("loaderbench-rounds-{}-", child.id())),
        "{name}"
    );
    let _ = child.kill();
    let _ = child.wait();
    common::wait_until(
        Duration::from_secs(10),
        "the round's process to end",
        || !common::process::running(round_pid),
    );
    assert!(scratch.is_dir(), "a killed tune cannot remove its own");
    let next = dir.path().join("next.jsonl");
    let args = [
        "tune",
        "seed-light",
        "--budget",
        "1s",
        "--quiet",
        "--set",
        "samples=256",
    ];
    let output = loaderbench(&[&args[..], &["--journal", path_str(&next)]].concat());
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !scratch.exists(),
        "the next tune swept {}",
        scratch.display()
    );
}

#[test]
fn a_budget_people_cannot_read_is_refused() {
    let output = loaderbench(&["tune", "seed-light", "--budget", "soon"]);
    assert_eq!(output.status.code(), Some(2));
    assert_said(&output, "--budget");
}
