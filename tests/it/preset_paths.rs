//! Paths in a preset, the CLI as a process: a preset's relative paths are relative to
//! its file, so a preset in another folder runs from any current directory and
//! `validate` shows the paths resolved; a `--set` path, typed on the command line, is
//! relative to the current directory.

use std::path::Path;
use std::process::Output;

use tempfile::TempDir;

use crate::common;
use common::runs::SavedRun;
use common::{
    assert_printed, assert_said, loaderbench_command, path_str, run_with_deadline, stderr, stdout,
};

/// An image folder of two classes with two 8×8 PNGs each, at `folder`.
fn image_folder(folder: &Path) {
    for class in ["cat", "dog"] {
        std::fs::create_dir_all(folder.join(class)).unwrap();
        for i in 0..2u8 {
            let image =
                image::GrayImage::from_fn(8, 8, |x, y| image::Luma([x as u8 * 9 + y as u8 + i]));
            image
                .save(folder.join(class).join(format!("{i}.png")))
                .unwrap();
        }
    }
}

/// `ROOT/bench/bench.ron` over the image folder `ROOT/bench/data`, named `"data"` in
/// the file; and an empty `ROOT/elsewhere`.
fn bench_and_elsewhere() -> TempDir {
    let root = TempDir::new().unwrap();
    let bench = root.path().join("bench");
    image_folder(&bench.join("data"));
    std::fs::create_dir(root.path().join("elsewhere")).unwrap();
    std::fs::write(
        bench.join("bench.ron"),
        "(version: 1, name: \"beside\", dataset: (kind: image_folder, path: \"data\", \
         image_size: (8, 8)), epochs: 1, batch_size: [2], num_workers: [0, 1], \
         resolve_for_s: 0.0)",
    )
    .unwrap();
    root
}

/// `loaderbench ARGS` run in `cwd`.
fn in_dir(cwd: &Path, args: &[&str]) -> Output {
    run_with_deadline(
        loaderbench_command(args).current_dir(cwd),
        common::CLI_LIMIT,
    )
}

#[test]
fn a_preset_in_another_folder_runs_from_any_current_directory() {
    let root = bench_and_elsewhere();
    let bench = root.path().join("bench");
    let preset = bench.join("bench.ron");
    let saved = SavedRun::in_dir(root.path());
    let output = in_dir(
        &root.path().join("elsewhere"),
        &saved.run_args(path_str(&preset), &[]),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let run = saved.exported();
    assert_eq!(
        run["setup"]["dataset"]["path"].as_str(),
        Some(path_str(&bench.join("data"))),
        "the results hold the path resolved"
    );
    assert_eq!(run["results"].as_array().unwrap().len(), 2);
    let shown = format!("dataset.path: {}", bench.join("data").display());
    for (cwd, preset) in [
        (root.path().join("elsewhere"), path_str(&preset)),
        (root.path().to_path_buf(), "bench/bench.ron"),
        (bench.clone(), "bench.ron"),
    ] {
        let output = in_dir(&cwd, &["validate", preset]);
        assert!(output.status.success(), "{preset}: {}", stderr(&output));
        assert_printed(&output, &shown);
    }
}

#[test]
fn a_set_path_is_relative_to_the_current_directory() {
    let root = bench_and_elsewhere();
    let elsewhere = root.path().join("elsewhere");
    image_folder(&elsewhere.join("mine"));
    let preset = root.path().join("bench/bench.ron");
    let args = ["validate", path_str(&preset), "--set", "dataset.path=mine"];
    let output = in_dir(&elsewhere, &args);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_printed(&output, "dataset.path: mine\n");
    // From the preset's own folder, `mine` is not there.
    let output = in_dir(&root.path().join("bench"), &args);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert_said(&output, "mine");
}
