//! Compressed tar shards as users have them: `.tar.gz` shards written by `loaderbench
//! shards --compress gz` and `.tgz` shards made by hand with `tar czf` (as WebDataset's
//! users make them) hold exactly the folder's samples once per epoch at 0 and 2 workers,
//! on disk and over HTTP from a real nginx, with thread and spawned workers, and the run
//! reports their decompression within the fetch; a zstd shard, a gzip stream named
//! `.tar` and a cut gzip stream are each refused in one line naming the shard.

use crate::common;
use crate::shard_epochs::{
    IMAGES, epoch_samples, folder_and_shards_with, open, run_on_shards, spec,
};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use loaderbench_engine::dataset::DatasetKind;
use loaderbench_engine::loader::Shard;
use tempfile::TempDir;

use common::nginx::Nginx;
use common::{assert_error_line, loaderbench, path_str};

/// Samples per hand-made shard.
const PER_SHARD: usize = 5;

/// The folder's images as `.tgz` shards of [`PER_SHARD`] samples made with `tar czf`, in
/// `dir/handmade`: sample `n` is `{n:06}.{jpg|png}` and `{n:06}.cls`. Returns their
/// pattern.
fn tar_czf_shards(folder: &Path, dir: &Path) -> String {
    let mut images: Vec<(PathBuf, usize)> = Vec::new();
    for class in 0..3 {
        let mut files: Vec<PathBuf> = std::fs::read_dir(folder.join(format!("class{class}")))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        images.extend(files.into_iter().map(|file| (file, class)));
    }
    let out = dir.join("handmade");
    std::fs::create_dir(&out).unwrap();
    for (shard, chunk) in images.chunks(PER_SHARD).enumerate() {
        let staging = dir.join(format!("staging-{shard}"));
        std::fs::create_dir(&staging).unwrap();
        let mut members = Vec::new();
        for (i, (image, class)) in chunk.iter().enumerate() {
            let key = format!("{:06}", shard * PER_SHARD + i);
            let extension = image.extension().unwrap().to_str().unwrap();
            let name = format!("{key}.{extension}");
            std::fs::copy(image, staging.join(&name)).unwrap();
            std::fs::write(staging.join(format!("{key}.cls")), class.to_string()).unwrap();
            members.extend([name, format!("{key}.cls")]);
        }
        let status = Command::new("tar")
            .arg("czf")
            .arg(out.join(format!("shard-{shard}.tgz")))
            .arg("-C")
            .arg(&staging)
            .args(&members)
            .status()
            .expect("tar runs");
        assert!(status.success());
    }
    let last = images.len().div_ceil(PER_SHARD) - 1;
    format!("{}/shard-{{0..{last}}}.tgz", path_str(&out))
}

#[test]
fn tgz_shards_from_the_cli_and_from_tar_czf_hold_the_folder_s_samples_once_per_epoch() {
    let (dir, written) = folder_and_shards_with(&["--compress", "gz"]);
    assert!(
        written.ends_with("shard-{000000..000007}.tar.gz"),
        "{written}"
    );
    let folder = dir.path().join("folder");
    let handmade = tar_czf_shards(&folder, dir.path());
    let expected = epoch_samples(
        &open(&spec(DatasetKind::ImageFolder, path_str(&folder))),
        0,
        Shard::WHOLE,
    );
    assert_eq!(expected.len(), IMAGES as usize);
    for pattern in [&written, &handmade] {
        let shards = open(&spec(DatasetKind::Shards, pattern));
        assert_eq!(shards.len(), IMAGES as usize, "{pattern}");
        for workers in [0, 2] {
            for epoch in 0..2 {
                assert_eq!(
                    epoch_samples(&shards, workers, Shard::WHOLE),
                    expected,
                    "{pattern}: {workers} workers, epoch {epoch}"
                );
            }
        }
    }
}

#[test]
fn tgz_shards_over_http_run_on_thread_and_spawned_workers_with_decompression_within_fetch() {
    let (dir, pattern) = folder_and_shards_with(&["--compress", "gz"]);
    let Some(server) = Nginx::serve(&dir.path().join("shards"), None) else {
        return;
    };
    let url = server.url(pattern.rsplit('/').next().unwrap());
    let run = run_on_shards(
        &url,
        dir.path(),
        &[
            "--set",
            "num_workers=[0, 2]",
            "--set",
            "worker_kind=[thread, spawn]",
        ],
    );
    let results = run["results"].as_array().unwrap();
    assert!(results.len() >= 3, "{} configs", results.len());
    for config in results {
        for epoch in config["epochs"].as_array().unwrap() {
            assert_eq!(epoch["samples"], IMAGES, "{config}");
            let stages = &epoch["stages"];
            let decompress = stages["decompress_s"].as_f64().unwrap_or(0.0);
            let fetch = stages["fetch_s"].as_f64().unwrap();
            assert!(
                decompress > 0.0 && decompress <= fetch,
                "decompression within the fetch: {stages}"
            );
        }
    }
}

/// `loaderbench run` over the shards `pattern` names, expected to fail.
fn run_failing(pattern: &str) -> Output {
    loaderbench(&[
        "run",
        "seed-light",
        "-q",
        "--set",
        "dataset.kind=shards",
        "--set",
        &format!("dataset.path={pattern}"),
        "--set",
        "dataset.channels=3",
    ])
}

/// Runs `program args… shard` on shard 1 of a plain set, which it turns into `renamed`;
/// returns the set's pattern (every shard) and the changed shard's path.
fn change_shard_1(program: &str, args: &[&str], renamed: &str) -> (TempDir, String, PathBuf) {
    let (dir, _) = folder_and_shards_with(&[]);
    let shards = dir.path().join("shards");
    let shard = shards.join("shard-000001.tar");
    let output = Command::new(program)
        .args(args)
        .arg(&shard)
        .output()
        .expect("the program runs");
    assert!(output.status.success(), "{program} {args:?}");
    let changed = shards.join(renamed);
    std::fs::write(&changed, output.stdout).unwrap();
    if changed != shard {
        std::fs::remove_file(&shard).unwrap();
    }
    let pattern = format!("{}/shard-*", path_str(&shards));
    (dir, pattern, changed)
}

#[test]
fn a_zstd_shard_is_refused_in_one_line_naming_it_and_its_compression() {
    let (_dir, pattern, zst) = change_shard_1("zstd", &["-q", "-c"], "shard-000001.tar.zst");
    assert_error_line(
        &run_failing(&pattern),
        2,
        &[
            &format!("{}: a zstd-compressed tar", path_str(&zst)),
            "Python's tarfile cannot read zstd",
            "zstd -d",
        ],
    );
}

#[test]
fn a_gzip_stream_named_tar_and_a_cut_one_are_named_for_what_they_are() {
    let (_dir, pattern, gzipped) = change_shard_1("gzip", &["-c"], "shard-000001.tar");
    assert_error_line(
        &run_failing(&pattern),
        2,
        &[&format!(
            "{}: named .tar (a plain (uncompressed) tar) but holds a gzip-compressed tar: \
             rename it .tar.gz",
            path_str(&gzipped)
        )],
    );
    let (_dir, pattern, cut) = change_shard_1("gzip", &["-c"], "shard-000001.tar.gz");
    let bytes = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    assert_error_line(
        &run_failing(&pattern),
        2,
        &[path_str(&cut), "the gzip data is cut or corrupt"],
    );
}
