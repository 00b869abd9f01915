//! The CLI as a process, on real libtorch: a small sweep end to end with every export,
//! the commands that list and check presets, and each kind of bad input, which must exit
//! with code 2 and a one-line error naming the file and the problem — never a panic or
//! a hang.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

use tempfile::TempDir;

use crate::common;
use common::runs::{Exports, SharedRun};
use common::{
    assert_error_line, assert_printed, assert_said, json_file, loaderbench, loaderbench_command,
    path_str, run_args, run_with_deadline, stderr, stdout,
};

/// seed-light's sweep cut to one epoch of its config without workers (its extra configs
/// still run); a later `--set` of the same key wins.
const ONE_EPOCH_NO_WORKERS: [&str; 4] = [
    "num_workers=0",
    "persistent_workers=false",
    "pin_memory=false",
    "epochs=1",
];

/// `run seed-light -q` cut by [`ONE_EPOCH_NO_WORKERS`], then `sets`, then `extra`.
fn quick_args<'a>(sets: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    run_args(
        "seed-light",
        &[&ONE_EPOCH_NO_WORKERS[..], sets].concat(),
        extra,
    )
}

/// [`quick_args`] without seed-light's extra configs: one config, one epoch.
fn one_config_args<'a>(sets: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    quick_args(&[&["extra_configs=[]"], sets].concat(), extra)
}

/// Runs a tiny copy of seed-light on a dataset the test made.
fn run_on_dataset(kind: &str, path: &Path, extra: &[&str]) -> Output {
    let kind = format!("dataset.kind={kind}");
    let dataset = format!("dataset.path={}", path_str(path));
    loaderbench(&quick_args(&[&kind, &dataset, "batch_size=4"], extra))
}

fn idx_images(count: u32, rows: u32, cols: u32, pixels: usize) -> Vec<u8> {
    let mut bytes = vec![0, 0, 8, 3];
    for dim in [count, rows, cols] {
        bytes.extend_from_slice(&dim.to_be_bytes());
    }
    bytes.extend(std::iter::repeat_n(7u8, pixels));
    bytes
}

fn idx_labels(count: u32) -> Vec<u8> {
    let mut bytes = vec![0, 0, 8, 1];
    bytes.extend_from_slice(&count.to_be_bytes());
    bytes.extend((0..count).map(|i| (i % 10) as u8));
    bytes
}

/// A directory holding `train-images-idx3-ubyte` and `train-labels-idx1-ubyte`.
fn idx_dir(images: &[u8], labels: &[u8]) -> TempDir {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("train-images-idx3-ubyte"), images).unwrap();
    std::fs::write(dir.path().join("train-labels-idx1-ubyte"), labels).unwrap();
    dir
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([x as u8, y as u8, 99]));
    let mut bytes = std::io::Cursor::new(Vec::new());
    image.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    bytes.into_inner()
}

/// The small sweep of seed-light with every export (`r.json`, `r.csv`, `r.md`,
/// `j.jsonl`), run once by the first test that needs it: its tests check one export each.
fn small_sweep() -> &'static SharedRun {
    static SMALL_SWEEP: OnceLock<SharedRun> = OnceLock::new();
    SharedRun::once(&SMALL_SWEEP, |dir| {
        let exports = Exports::in_dir(dir, "r");
        let journal = dir.join("j.jsonl");
        let mut extra = exports.args().to_vec();
        extra.extend(["--journal", path_str(&journal)]);
        loaderbench(&run_args(
            "seed-light",
            &["samples=1024", "batch_size=128"],
            &extra,
        ))
    })
}

#[test]
fn a_small_sweep_prints_the_classic_table() {
    let output = &small_sweep().output;
    let table = stdout(output);
    assert!(
        table.contains(
            "| num_workers | persistent | pin          | first batch | epoch 1 | epoch 2 |"
        ),
        "{table}"
    );
    assert_eq!(
        table.lines().filter(|l| l.starts_with("| ")).count(),
        2 + 7,
        "{table}"
    );
    assert!(
        table.contains("True (no-op)") || table.contains("| True "),
        "{table}"
    );
}

#[test]
fn a_small_sweep_warns_that_pin_memory_needs_cuda_where_there_is_none() {
    let output = &small_sweep().output;
    let warned = stderr(output).contains("pin_memory has no effect without CUDA");
    let cuda = loaderbench_engine::device::cuda_device_count() > 0;
    assert_eq!(warned, !cuda, "CUDA: {cuda}; {}", stderr(output));
}

#[test]
fn a_small_sweep_exports_every_config_s_epochs_as_json() {
    let json = small_sweep().json("r.json");
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 7);
    let workers: Vec<u64> = results
        .iter()
        .map(|r| r["config"]["num_workers"].as_u64().unwrap())
        .collect();
    assert_eq!(workers, vec![0, 2, 4, 8, 4, 0, 4]);
    assert_eq!(results[4]["config"]["persistent_workers"], true);
    assert_eq!(results[5]["config"]["pin_memory"], true);
    for result in results {
        let epochs = result["epochs"].as_array().unwrap();
        assert_eq!(epochs.len(), 2);
        for epoch in epochs {
            let seconds = epoch["seconds"].as_f64().unwrap();
            let first = epoch["first_batch_s"].as_f64().unwrap();
            assert!(seconds > 0.0 && first > 0.0 && first <= seconds, "{epoch}");
            assert_eq!(epoch["samples"], 1024);
        }
    }
}

#[test]
fn a_small_sweep_exports_the_machine_and_the_status_as_json() {
    let json = small_sweep().json("r.json");
    assert!(json["machine"]["logical_cores"].as_u64().unwrap() >= 1);
    assert!(
        json["machine"]["libtorch"]
            .as_str()
            .unwrap()
            .starts_with("2.13.0")
    );
    assert_eq!(json["status"]["status"], "finished");
}

#[test]
fn a_small_sweep_exports_a_csv_row_per_epoch() {
    let csv = std::fs::read_to_string(small_sweep().path("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 7 * 2);
}

#[test]
fn a_small_sweep_exports_markdown() {
    let markdown = std::fs::read_to_string(small_sweep().path("r.md")).unwrap();
    assert!(markdown.contains("## light") && markdown.contains("| epoch 2 |"));
}

#[test]
fn a_small_sweep_journals_its_header_configs_and_end() {
    let journal = std::fs::read_to_string(small_sweep().path("j.jsonl")).unwrap();
    assert_eq!(journal.lines().count(), 1 + 7 + 1, "header, configs, end");
}

#[test]
fn a_warning_is_said_once_however_many_repeats_meet_it() {
    let out = TempDir::new().unwrap();
    let journal = out.path().join("j.jsonl");
    let sets = ["samples=256", "pin_memory=true", "repeats=3"];
    let output = loaderbench(&one_config_args(&sets, &["--journal", path_str(&journal)]));
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stderr(&output)
        .matches("pin_memory has no effect without CUDA")
        .count();
    // With CUDA, pin_memory works and there is no warning to repeat.
    let expected = usize::from(loaderbench_engine::device::cuda_device_count() == 0);
    assert_eq!(said, expected, "{}", stderr(&output));
}

#[test]
fn the_heavy_pipeline_runs_with_workers() {
    let sets = [
        "samples=256",
        "batch_size=64",
        "num_workers=0,2",
        "persistent_workers=false",
        "epochs=1",
    ];
    let output = loaderbench(&run_args("seed-heavy", &sets, &[]));
    assert!(output.status.success(), "{}", stderr(&output));
    let table = stdout(&output);
    assert!(table.starts_with("\nheavy"), "{table}");
    assert_eq!(
        table.lines().filter(|l| l.starts_with("| ")).count(),
        2 + 2,
        "{table}"
    );
}

#[test]
fn presets_lists_the_built_in_presets() {
    let output = loaderbench(&["presets"]);
    assert!(output.status.success());
    assert!(stdout(&output).contains("seed-light") && stdout(&output).contains("seed-heavy"));
}

#[test]
fn validate_lists_a_preset_s_configs() {
    let output = loaderbench(&["validate", "presets/seed-light.ron"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_printed(&output, "7 config(s)");
    assert!(stdout(&output).contains("nw=4 persistent pin"));
}

#[test]
fn journals_go_to_the_data_dir_the_environment_names() {
    let data = TempDir::new().unwrap();
    let mut command = loaderbench_command(&one_config_args(&["samples=64"], &[]));
    command.env("LOADERBENCH_DATA_DIR", data.path());
    let output = run_with_deadline(&mut command, Duration::from_secs(120));
    assert!(output.status.success(), "{}", stderr(&output));
    let journals: Vec<_> = std::fs::read_dir(data.path().join("runs"))
        .expect("a runs folder in the data dir")
        .collect();
    assert_eq!(journals.len(), 1, "{journals:?}");
}

#[test]
fn more_workers_than_cores_warns_with_the_core_count() {
    let output = loaderbench(&["validate", "seed-light", "--set", "num_workers=512"]);
    assert!(output.status.success(), "a warning, not a refusal");
    assert_said(&output, "logical cores");
}

/// A value given to a knob that no config of the plan uses is warned of, not dropped in
/// silence: the dataset's transfer with our engine's thread workers, until a config has
/// worker processes.
#[test]
fn a_value_given_to_a_knob_no_config_uses_is_warned_of() {
    let warning = "dataset_transfer does nothing in this plan";
    let sets = ["--set", "dataset_transfer=reopen,copy"];
    let threads = loaderbench(&[&["validate", "seed-light"][..], &sets].concat());
    assert!(threads.status.success(), "{}", stderr(&threads));
    assert_said(&threads, warning);
    let forked = [
        &["validate", "seed-light"][..],
        &sets,
        &["--set", "worker_kind=fork"],
    ];
    let forked = loaderbench(&forked.concat());
    assert!(forked.status.success(), "{}", stderr(&forked));
    assert!(!stderr(&forked).contains(warning), "{}", stderr(&forked));
}

#[test]
fn a_hung_worker_fails_the_run_with_exit_code_1() {
    let sets = [
        "samples=64",
        "batch_size=8",
        "num_workers=1",
        "worker_timeout_s=0.2",
        "epochs=1",
        "pipeline=[{\"custom\":{\"name\":\"slow\",\"ops\":[{\"cost\":{\"micros_per_sample\":200000}}]}}]",
    ];
    let output = loaderbench(&run_args("seed-light", &sets, &[]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_said(&output, "hung");
}

/// A preset file that is missing, malformed or holds an unknown field: one error line
/// naming the file and what is wrong, exit code 2, from `run` and `validate` alike.
#[test]
fn a_bad_preset_file_is_named_with_the_problem() {
    let dir = TempDir::new().unwrap();
    let cases = [
        ("missing.ron", None, "run", "no such file"),
        (
            "malformed.ron",
            Some("(version: 1, name: \"x\", num_workers: [0, 2"),
            "validate",
            "1:",
        ),
        (
            "unknown.ron",
            Some("(version: 1, name: \"x\", num_wrokers: [2])"),
            "run",
            "num_wrokers",
        ),
    ];
    for (name, text, command, problem) in cases {
        let file = dir.path().join(name);
        if let Some(text) = text {
            std::fs::write(&file, text).unwrap();
        }
        let output = loaderbench(&[command, path_str(&file)]);
        assert_error_line(&output, 2, &[name, problem]);
    }
}

#[test]
fn set_takes_the_ron_a_preset_file_takes() {
    let out = TempDir::new().unwrap();
    let json = out.path().join("r.json");
    let sets = [
        "samples=64",
        "step=mlp(hidden: 64)",
        "normalize=(mean: [0.5], std: [0.25])",
    ];
    let output = loaderbench(&one_config_args(&sets, &["--json", path_str(&json)]));
    assert!(output.status.success(), "{}", stderr(&output));
    let saved = json_file(&json);
    let mlp = serde_json::json!({"mlp": {"hidden": 64}});
    assert_eq!(saved["step"], mlp);
    assert_eq!(saved["setup"]["step"], mlp);
    assert_eq!(
        saved["setup"]["normalize"],
        serde_json::json!({"mean": [0.5], "std": [0.25]})
    );
    assert_error_line(
        &loaderbench(&["validate", "seed-light", "--set", "step=mlp(hidden: lots)"]),
        2,
        &["--set step=mlp(hidden: lots)", "integer"],
    );
}

/// A bad value that a `--set` gave is said of that `--set`, not of the preset file, which
/// holds something else there; a bad value the file holds is still the file's.
#[test]
fn a_bad_value_a_set_gave_is_said_of_the_set_not_of_the_preset_file() {
    let line = assert_error_line(
        &loaderbench(&["validate", "seed-light", "--set", "batch_size=0"]),
        2,
        &[],
    );
    assert_eq!(
        line,
        "--set batch_size=0: field `batch_size`: must be at least 1"
    );
    // A field inside the one the `--set` gave.
    let std = "normalize=(mean: [0.5], std: [0.0])";
    let line = assert_error_line(
        &loaderbench(&["validate", "seed-light", "--set", std]),
        2,
        &["positive"],
    );
    assert!(
        line.starts_with(&format!("--set {std}: field `normalize`")),
        "{line}"
    );
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("bad.ron");
    std::fs::write(&file, "(version: 1, name: \"x\", batch_size: [0])").unwrap();
    assert_error_line(
        &loaderbench(&["validate", path_str(&file), "--set", "samples=64"]),
        2,
        &["bad.ron: field `batch_size`: must be at least 1"],
    );
}

/// With `drop_last`, a batch larger than the samples (or than a rank's share) leaves
/// epochs of no batch: `validate` and `run` refuse it, naming the field, where they
/// measured empty epochs and recommended among them.
#[test]
fn a_batch_larger_than_the_samples_with_drop_last_is_refused() {
    let sets = |extra: &[&'static str]| {
        let mut args = vec![
            "--set",
            "samples=300",
            "--set",
            "batch_size=512",
            "--set",
            "drop_last=true",
            "--set",
            "num_workers=0",
            "--set",
            "extra_configs=[]",
        ];
        args.extend_from_slice(extra);
        args
    };
    let mut validate = vec!["validate", "seed-light"];
    validate.extend(sets(&[]));
    assert_error_line(
        &loaderbench(&validate),
        2,
        &[
            "field `batch_size`",
            "512 with drop_last leaves no batch of the 300 samples",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.jsonl");
    let mut run = vec!["run", "seed-light", "-q", "--journal", path_str(&journal)];
    run.extend(sets(&["--set", "samples=1000", "--set", "ranks=2"]));
    assert_error_line(
        &loaderbench(&run),
        2,
        &["no batch of the 500 samples each of its 2 ranks gets"],
    );
    // Without drop_last, the short batch is an epoch's one batch: measured.
    let mut kept = vec!["validate", "seed-light"];
    kept.extend(sets(&["--set", "drop_last=false"]));
    assert!(loaderbench(&kept).status.success());
}

#[test]
fn validate_names_a_step_file_that_is_missing_or_not_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let (missing, not_a_model) = (dir.path().join("missing.pt"), dir.path().join("notes.pt"));
    std::fs::write(&not_a_model, "not a zip archive").unwrap();
    let step = dir.path().join("my_step.py");
    let model = |path: &Path| format!("step=model(path: {:?})", path_str(path));
    let python = format!(
        "step=python(path: {:?}, factory: \"make_step\")",
        path_str(&step)
    );
    let cases = [
        (&missing, model(&missing), "loaderbench", "no such file"),
        (
            &not_a_model,
            model(&not_a_model),
            "loaderbench",
            "not a TorchScript model",
        ),
        (&step, python, "pytorch", "no such file"),
    ];
    for (file, set_step, runtime, problem) in &cases {
        let runtime = format!("runtime=[{runtime}]");
        let output = loaderbench(&[
            "validate",
            "seed-light",
            "--set",
            set_step,
            "--set",
            &runtime,
        ]);
        assert_error_line(&output, 2, &[path_str(file), problem]);
    }
}

/// A `--set` with a bad value, an unknown key, no value or an unknown device: one error
/// line naming the key and the problem, exit code 2.
#[test]
fn a_bad_set_is_refused_naming_the_key() {
    let cases: [(&str, &[&str]); 5] = [
        ("batch_size=0", &["batch_size", "at least 1"]),
        ("nope=1", &["nope"]),
        ("epochs", &["KEY=VALUE"]),
        ("device=tpu", &["device", "tpu"]),
        // Taken without a word before: the format's version is no setting.
        ("version=2", &["--set version", "is not a setting"]),
    ];
    for (set, fragments) in cases {
        let output = loaderbench(&["run", "seed-light", "--set", set]);
        assert_error_line(&output, 2, fragments);
    }
}

/// A device this machine lacks is refused by `run` and `validate` alike, naming it:
/// `validate` said "ok" of `cuda:99`, which every run then refused.
#[test]
fn a_device_this_machine_lacks_is_refused_by_run_and_validate() {
    for command in ["validate", "run"] {
        let sets = ["--set", "samples=64", "--set", "device=cuda:99"];
        let output = loaderbench(&[&[command, "seed-light"][..], &sets].concat());
        assert_error_line(&output, 2, &["device cuda:99: "]);
    }
    if !Path::new("/dev/nvidia0").exists() {
        assert_error_line(
            &loaderbench(&[
                "run",
                "seed-light",
                "--set",
                "samples=64",
                "--set",
                "device=cuda",
            ]),
            2,
            &["cuda:0", "CUDA is not available"],
        );
    }
}

#[test]
fn gzipped_idx_files_run() {
    let images = idx_images(12, 28, 28, 12 * 784);
    let dir = idx_dir(&gzip(&images), &gzip(&idx_labels(12)));
    let gz = dir.path().join("train-images-idx3-ubyte.gz");
    std::fs::rename(dir.path().join("train-images-idx3-ubyte"), &gz).unwrap();
    std::fs::rename(
        dir.path().join("train-labels-idx1-ubyte"),
        dir.path().join("train-labels-idx1-ubyte.gz"),
    )
    .unwrap();
    let output = run_on_dataset("idx", dir.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_printed(&output, "idx");
}

#[test]
fn plain_idx_files_run() {
    let images = idx_images(12, 28, 28, 12 * 784);
    let plain = idx_dir(&images, &idx_labels(12));
    let output = run_on_dataset("idx", plain.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_missing_idx_folder_is_named() {
    let missing = TempDir::new().unwrap();
    let gone = missing.path().join("nowhere");
    assert_error_line(&run_on_dataset("idx", &gone, &[]), 2, &["nowhere"]);
}

#[test]
fn an_idx_file_with_a_wrong_magic_number_is_named() {
    let mut wrong_magic = idx_images(2, 28, 28, 2 * 784);
    wrong_magic[3] = 9;
    let dir = idx_dir(&wrong_magic, &idx_labels(2));
    assert_error_line(
        &run_on_dataset("idx", dir.path(), &[]),
        2,
        &["train-images-idx3-ubyte", "magic"],
    );
}

#[test]
fn an_idx_file_shorter_than_its_header_says_is_named() {
    let short = idx_dir(&idx_images(10, 28, 28, 3 * 784), &idx_labels(10));
    assert_error_line(
        &run_on_dataset("idx", short.path(), &[]),
        2,
        &["train-images-idx3-ubyte", "bytes"],
    );
}

#[test]
fn an_idx_header_with_absurd_sizes_is_named() {
    let absurd = idx_dir(&idx_images(u32::MAX, 65_535, 65_535, 16), &idx_labels(2));
    let output = run_on_dataset("idx", absurd.path(), &[]);
    assert_error_line(&output, 2, &["train-images-idx3-ubyte"]);
}

#[test]
fn a_corrupt_gzipped_idx_file_is_named() {
    let mut corrupt = gzip(&idx_images(2, 28, 28, 2 * 784));
    let middle = corrupt.len() / 2;
    corrupt[middle..]
        .iter_mut()
        .for_each(|b| *b = b.wrapping_add(77));
    let dir = idx_dir(&[], &idx_labels(2));
    std::fs::remove_file(dir.path().join("train-images-idx3-ubyte")).unwrap();
    std::fs::write(dir.path().join("train-images-idx3-ubyte.gz"), corrupt).unwrap();
    assert_error_line(
        &run_on_dataset("idx", dir.path(), &[]),
        2,
        &["train-images-idx3-ubyte.gz"],
    );
}

#[test]
fn idx_images_and_labels_of_different_counts_are_named() {
    let mismatch = idx_dir(&idx_images(5, 28, 28, 5 * 784), &idx_labels(4));
    assert_error_line(
        &run_on_dataset("idx", mismatch.path(), &[]),
        2,
        &["labels", "5", "4"],
    );
}

/// An image folder of two classes, `cat` and `dog`, with three small PNGs each.
fn image_folder() -> TempDir {
    let dir = TempDir::new().unwrap();
    for class in ["cat", "dog"] {
        std::fs::create_dir(dir.path().join(class)).unwrap();
        for i in 0..3 {
            std::fs::write(
                dir.path().join(class).join(format!("{i}.png")),
                png(31 + i, 17),
            )
            .unwrap();
        }
    }
    dir
}

#[test]
fn an_image_folder_runs() {
    let dir = image_folder();
    let output = run_on_dataset("image_folder", dir.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_file_in_an_image_folder_that_is_not_a_png_is_named() {
    let dir = image_folder();
    let fake = dir.path().join("dog").join("fake.png");
    std::fs::write(&fake, b"this is not a png").unwrap();
    assert_error_line(
        &run_on_dataset("image_folder", dir.path(), &[]),
        2,
        &["fake.png"],
    );
}

#[test]
fn a_truncated_png_in_an_image_folder_is_named() {
    let dir = image_folder();
    let truncated = dir.path().join("cat").join("truncated.png");
    let mut bytes = png(64, 64);
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&truncated, bytes).unwrap();
    assert_error_line(
        &run_on_dataset("image_folder", dir.path(), &[]),
        2,
        &["truncated.png"],
    );
}

#[test]
fn an_empty_class_folder_is_named() {
    let empty = TempDir::new().unwrap();
    std::fs::create_dir(empty.path().join("cat")).unwrap();
    assert_error_line(
        &run_on_dataset("image_folder", empty.path(), &[]),
        2,
        &["cat"],
    );
}

fn npy(header_dict: &str, data: &[u8]) -> Vec<u8> {
    let mut header = header_dict.to_owned();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

/// The header of an array of six 28×28 bytes.
const SIX_IMAGES: &str = "{'descr': '|u1', 'fortran_order': False, 'shape': (6, 28, 28), }";

#[test]
fn an_npy_array_runs() {
    let dir = TempDir::new().unwrap();
    let good: PathBuf = dir.path().join("good.npy");
    std::fs::write(&good, npy(SIX_IMAGES, &vec![3u8; 6 * 784])).unwrap();
    let output = run_on_dataset("npy", &good, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn an_npy_array_shorter_than_its_header_says_is_named() {
    let dir = TempDir::new().unwrap();
    let short = dir.path().join("short.npy");
    std::fs::write(&short, npy(SIX_IMAGES, &[1u8; 100])).unwrap();
    assert_error_line(&run_on_dataset("npy", &short, &[]), 2, &["short.npy"]);
}

#[test]
fn a_file_that_is_not_npy_is_named() {
    let dir = TempDir::new().unwrap();
    let wrong = dir.path().join("wrong.npy");
    std::fs::write(&wrong, b"not numpy at all").unwrap();
    assert_error_line(&run_on_dataset("npy", &wrong, &[]), 2, &["wrong.npy"]);
}

/// `loaderbench ARGS` whose standard output and error lead into a pipe nobody reads (a
/// `| head` that has exited).
fn with_no_reader(args: &[&str]) -> Output {
    use std::os::fd::FromRawFd;
    let mut ends = [0; 2];
    // SAFETY: pipe fills the two descriptors of a new pipe.
    assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just made and are owned here alone; the read end is
    // closed at once, so writes to the other fail with EPIPE.
    let (read, write) = unsafe {
        (
            std::fs::File::from_raw_fd(ends[0]),
            std::fs::File::from_raw_fd(ends[1]),
        )
    };
    drop(read);
    let mut command = loaderbench_command(args);
    command.stdout(write.try_clone().unwrap()).stderr(write);
    run_with_deadline(&mut command, common::CLI_LIMIT)
}

#[test]
fn a_reader_gone_from_standard_output_costs_neither_the_run_nor_its_exports() {
    // `println!` panicked on the closed pipe: `validate … | head -1` ended in a
    // backtrace, and `run … | head` before it wrote its exports.
    let output = with_no_reader(&["validate", "seed-light"]);
    assert_eq!(output.status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let output = with_no_reader(&one_config_args(&[], &["--json", path_str(&json)]));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(json_file(&json)["status"]["status"], "finished");
}

/// Every op of a custom pipeline as docs/presets.md writes it (`crop(size: [24, 24],
/// padding: 2)`, with the list brackets the page uses for pairs) is a preset's: a
/// pipeline of them all validates. The pairs read only as tuples, and the page's own
/// examples failed with "Expected opening `(`".
#[test]
fn every_op_the_presets_page_lists_validates_as_written() {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/presets.md"))
            .unwrap();
    let start = page
        .find("- `custom(name: \"...\", ops: [...])` with ops")
        .expect("the presets page lists the ops");
    let listed = &page[start..];
    let listed = &listed[..listed.find("\n\n").unwrap_or(listed.len())];
    let ops: Vec<&str> = listed.split('`').skip(3).step_by(2).collect();
    assert_eq!(ops.len(), 8, "every op: {ops:?}");
    let pipeline = format!(
        "pipeline=[custom(name: \"docs\", ops: [{}])]",
        ops.join(", ")
    );
    let output = loaderbench(&["validate", "seed-light", "--set", &pipeline]);
    assert!(output.status.success(), "{pipeline}: {}", stderr(&output));
}

/// Every RON example in README.md and docs/ reads as a preset: a whole one as it is, a
/// few fields inside `(version: 1, name: "x", …)`. A page that shows what no preset
/// takes sends its reader to an error.
#[test]
fn every_ron_example_in_the_docs_reads_as_a_preset() {
    use loaderbench_engine::preset::Preset;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    pages.extend(
        std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md")),
    );
    let mut examples = 0;
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for block in text.split("```ron\n").skip(1) {
            let example = &block[..block.find("```").expect("a closed block")];
            let preset = if example.trim_start().starts_with('(') {
                example.to_owned()
            } else {
                format!("(version: 1, name: \"x\",\n{example})")
            };
            if let Err(err) = Preset::from_ron(&preset, &page) {
                panic!("{}: {example}\n{err}", page.display());
            }
            examples += 1;
        }
    }
    assert!(examples >= 4, "{examples} examples");
}
