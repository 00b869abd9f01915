//! What the tests start from: a tiny synthetic preset, a run the CLI measured and saved
//! (its results JSON and journal), the same results as if from another machine, the
//! shared run (a command run once per test binary, whose output several tests check),
//! and a folder for what the tests of one binary share, removed when the binary exits.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Mutex, Once, OnceLock, PoisonError};

use loaderbench_engine::preset::Preset;
use loaderbench_present::export::{Exporter, Json};
use tempfile::TempDir;

use super::{json_file, loaderbench, path_str, run_args, stderr, stdout};

/// A tiny synthetic preset named `tiny`: `samples` samples in batches of 64, num_workers
/// 0 and 2, `epochs` epochs.
pub fn tiny_preset(samples: usize, epochs: usize) -> Preset {
    Preset {
        name: "tiny".to_owned(),
        samples: Some(samples),
        epochs,
        batch_size: vec![64],
        num_workers: vec![0, 2],
        // Measured once, as the test asks: not further while the answer is open.
        resolve_for_s: 0.0,
        ..Preset::default()
    }
}

/// [`tiny_preset`] saved as `DIR/tiny.ron`; returns the file's path.
pub fn tiny_preset_file(dir: &Path, samples: usize, epochs: usize) -> PathBuf {
    let path = dir.join("tiny.ron");
    tiny_preset(samples, epochs).save(&path).unwrap();
    path
}

/// `loaderbench run` on [`tiny_preset_file`] (256 samples, one epoch) saved in `dir`,
/// quietly, with `args` after it.
pub fn tiny_run(dir: &Path, args: &[&str]) -> Output {
    let preset = tiny_preset_file(dir, 256, 1);
    loaderbench(&run_args(path_str(&preset), &[], args))
}

/// [`tiny_run`], failing the test unless it succeeded.
pub fn tiny_run_ok(dir: &Path, args: &[&str]) -> Output {
    let output = tiny_run(dir, args);
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

/// A run the CLI measured and saved: its results JSON and its journal.
#[derive(Debug, Clone)]
pub struct SavedRun {
    pub json: PathBuf,
    pub journal: PathBuf,
}

impl SavedRun {
    /// Where a run saved in `dir` goes: `run.json` and `run.jsonl`.
    pub fn in_dir(dir: &Path) -> SavedRun {
        SavedRun {
            json: dir.join("run.json"),
            journal: dir.join("run.jsonl"),
        }
    }

    /// `run PRESET -q`, each of `sets` as `--set KEY=VALUE`, saving here.
    pub fn run_args<'a>(&'a self, preset: &'a str, sets: &[&'a str]) -> Vec<&'a str> {
        let saving = [
            "--json",
            path_str(&self.json),
            "--journal",
            path_str(&self.journal),
        ];
        run_args(preset, sets, &saving)
    }

    /// The results JSON as a value.
    pub fn exported(&self) -> serde_json::Value {
        json_file(&self.json)
    }
}

/// Every file export of a run: `STEM.json`, `STEM.csv` and `STEM.md` in one folder.
pub struct Exports {
    pub json: PathBuf,
    pub csv: PathBuf,
    pub md: PathBuf,
}

impl Exports {
    pub fn in_dir(dir: &Path, stem: &str) -> Exports {
        let file = |ending: &str| dir.join(format!("{stem}.{ending}"));
        Exports {
            json: file("json"),
            csv: file("csv"),
            md: file("md"),
        }
    }

    /// `--json JSON --csv CSV --md MD`.
    pub fn args(&self) -> [&str; 6] {
        [
            "--json",
            path_str(&self.json),
            "--csv",
            path_str(&self.csv),
            "--md",
            path_str(&self.md),
        ]
    }
}

/// Runs `preset` (a name or a file) with `sets` (each a `--set KEY=VALUE`), quietly,
/// saving it in `dir` as `run.json` and `run.jsonl`; fails the test if the run fails.
pub fn run_saved(dir: &Path, preset: &str, sets: &[&str]) -> SavedRun {
    let saved = SavedRun::in_dir(dir);
    let output = loaderbench(&saved.run_args(preset, sets));
    assert!(output.status.success(), "{}", stderr(&output));
    saved
}

/// Runs seed-light with `sets` as [`run_saved`] does. The saved run reads as a quiet
/// machine's: a busy one (other tests, other builds) may have the meter mark configs
/// disturbed, which adds warnings and changes the analysis, so the tests that open it
/// would see one thing on a quiet machine and another on a busy one.
pub fn saved_run(dir: &Path, sets: &[&str]) -> SavedRun {
    let saved = run_saved(dir, "seed-light", sets);
    as_measured_quietly(&saved.json);
    let journal = std::fs::read_to_string(&saved.journal).unwrap();
    let quiet = journal.replace("\"disturbed\":true", "\"disturbed\":false");
    std::fs::write(&saved.journal, quiet).unwrap();
    saved
}

/// Clears the meter's verdict in a saved run's JSON: its configs' marks and the warning
/// they made; the file written again as the CLI writes it, analysis and all.
pub fn as_measured_quietly(json: &Path) {
    let mut run = loaderbench_measure::results_file::read(json).unwrap();
    for result in &mut run.results {
        result.disturbed = false;
    }
    run.warnings
        .retain(|warning| !warning.starts_with("disturbed: "));
    std::fs::write(json, Json.export(&run).unwrap()).unwrap();
}

/// A command run once per test binary, by the first test that needs it, in a folder of
/// its own ([`shared_dir`]): the shared run whose output and files several tests check.
pub struct SharedRun {
    pub dir: TempDir,
    pub output: Output,
}

impl SharedRun {
    /// The run `cell` holds, made the first time by `run` in its new folder; fails the
    /// test unless the run succeeded.
    pub fn once(
        cell: &'static OnceLock<SharedRun>,
        run: impl FnOnce(&Path) -> Output,
    ) -> &'static SharedRun {
        let shared = cell.get_or_init(|| {
            let dir = shared_dir();
            let output = run(dir.path());
            SharedRun { dir, output }
        });
        assert!(shared.output.status.success(), "{}", stderr(&shared.output));
        shared
    }

    /// What the run printed on standard output.
    pub fn text(&self) -> String {
        stdout(&self.output)
    }

    /// `name` in the run's folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The JSON file `name` in the run's folder, as a value.
    pub fn json(&self, name: &str) -> serde_json::Value {
        json_file(&self.path(name))
    }
}

/// The run [`saved_run`] saves with `sets`, in a folder of its own, made once per test
/// binary by the first test that asks `cell` for it.
pub fn saved_once(
    cell: &'static OnceLock<(TempDir, SavedRun)>,
    sets: &[&str],
) -> &'static SavedRun {
    let (_, saved) = cell.get_or_init(|| {
        let dir = shared_dir();
        let saved = saved_run(dir.path(), sets);
        (dir, saved)
    });
    saved
}

/// A tiny two-config sweep (num_workers 0 and 2) the CLI saved, as JSON and journal; run
/// once per test binary, by the first test that needs it: the shared run the app's
/// tests open.
pub fn two_configs() -> &'static SavedRun {
    static TWO: OnceLock<(TempDir, SavedRun)> = OnceLock::new();
    let sets = [
        "samples=512",
        "batch_size=64",
        "num_workers=0,2",
        "persistent_workers=false",
        "pin_memory=false",
        "epochs=2",
    ];
    saved_once(&TWO, &sets)
}

/// The saved run in `saved` (results JSON, or a journal: its header line) as if measured
/// on another (made-up) machine, written to `to` (which may be `saved`).
pub fn from_another_machine(saved: &Path, to: &Path) -> PathBuf {
    let text = std::fs::read_to_string(saved).unwrap();
    let move_machine = |machine: &mut serde_json::Value| {
        machine["cpu_model"] = "Made-up Xeon 9999".into();
        machine["logical_cores"] = 64.into();
    };
    let moved = if saved.extension().is_some_and(|e| e == "jsonl") {
        let (header, rest) = text.split_once('\n').unwrap();
        let mut run: serde_json::Value = serde_json::from_str(header).unwrap();
        move_machine(&mut run["run"]["machine"]);
        format!("{run}\n{rest}")
    } else {
        let mut run: serde_json::Value = serde_json::from_str(&text).unwrap();
        move_machine(&mut run["machine"]);
        serde_json::to_string_pretty(&run).unwrap()
    };
    std::fs::write(to, moved).unwrap();
    to.to_path_buf()
}

/// A folder for what the tests of one binary share (a run measured once, held in a
/// static), under the target directory's `tmp`. A static is never dropped, so neither is
/// the folder's `TempDir`: the folder is removed when the test binary exits instead.
pub fn shared_dir() -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix("shared-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a folder under the target directory");
    remove_at_exit(dir.path());
    dir
}

/// The folders [`remove_at_exit`] was given.
static REMOVED_AT_EXIT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes `folder` when this process exits (returning from `main` or
/// `std::process::exit`, as the test harness ends either way); a process killed by a
/// signal leaves it.
fn remove_at_exit(folder: &Path) {
    REMOVED_AT_EXIT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(folder.to_path_buf());
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: `remove_registered` takes nothing, returns nothing and does not unwind
        // (it only removes folders, ignoring failures), as atexit requires.
        let status = unsafe { libc::atexit(remove_registered) };
        assert_eq!(status, 0, "atexit could not register the removal");
    });
}

extern "C" fn remove_registered() {
    let folders = REMOVED_AT_EXIT
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    for folder in folders.iter() {
        let _ = std::fs::remove_dir_all(folder);
    }
}
