//! Tar shards against the image folder they were made from, through the real loader and
//! the real CLI: every epoch over the shards holds exactly the folder's samples (the same
//! labels and the same decoded pixels), each once, whatever the worker count and kind,
//! and two ranks split them without overlap.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, Dataset, DatasetKind, DatasetSpec};
use loaderbench_engine::loader::Shard;
use tempfile::TempDir;

use common::{light_loader, loader_settings, loaderbench, path_str, stderr};

/// Samples in the folder: 5 per shard makes 8 shards, the last with 2, so workers get
/// uneven streams.
pub(crate) const IMAGES: u32 = 37;

/// An image folder of three classes, JPEGs and PNGs of assorted sizes, and the same
/// images as shards of 5 made by `loaderbench shards`.
fn folder_and_shards() -> (TempDir, String) {
    folder_and_shards_with(&[])
}

/// [`folder_and_shards`] with `args` added to `loaderbench shards` (a `--compress`).
pub(crate) fn folder_and_shards_with(args: &[&str]) -> (TempDir, String) {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("folder");
    for i in 0..IMAGES {
        let class = folder.join(format!("class{}", i % 3));
        std::fs::create_dir_all(&class).unwrap();
        let (width, height) = (20 + i * 7 % 50, 15 + i * 11 % 40);
        let picture = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x * 9 + i) as u8, (y * 13) as u8, ((x ^ y) * 5) as u8])
        });
        let (name, format) = if i % 4 == 0 {
            (format!("{i}.png"), image::ImageFormat::Png)
        } else {
            (format!("{i}.jpg"), image::ImageFormat::Jpeg)
        };
        picture.save_with_format(class.join(name), format).unwrap();
    }
    let shards = dir.path().join("shards");
    let mut command = vec![
        "shards",
        path_str(&folder),
        path_str(&shards),
        "--per-shard",
        "5",
    ];
    command.extend_from_slice(args);
    let output = loaderbench(&command);
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = String::from_utf8_lossy(&output.stdout);
    let pattern = printed
        .split("path: \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no pattern in: {printed}"));
    assert!(pattern.starts_with(path_str(&shards)), "{pattern}");
    (dir, pattern.to_owned())
}

pub(crate) fn spec(kind: DatasetKind, path: &str) -> DatasetSpec {
    DatasetSpec {
        kind,
        path: Some(path.into()),
        channels: 3,
        image_size: [24, 32],
        shuffle_buffer: 6,
        ..Default::default()
    }
}

/// Each sample of one epoch as (label, its normalized pixels' sum in thousandths),
/// sorted: the epoch's samples as a multiset.
pub(crate) fn epoch_samples(
    dataset: &Arc<dyn Dataset>,
    workers: usize,
    shard: Shard,
) -> Vec<(i64, i64)> {
    let mut settings = loader_settings(workers, false);
    settings.batch_size = 4;
    settings.shard = shard;
    settings.shuffle_buffer = 6;
    let mut loader = light_loader(dataset.clone(), 3, settings, CancelToken::new());
    let mut samples = Vec::new();
    for batch in loader.epoch().unwrap() {
        let batch = batch.unwrap();
        let labels = Vec::<i64>::try_from(&batch.labels).unwrap();
        for (i, label) in labels.into_iter().enumerate() {
            let sum = batch
                .images
                .get(i as i64)
                .sum(tch::Kind::Double)
                .double_value(&[]);
            samples.push((label, (sum * 1000.0).round() as i64));
        }
    }
    samples.sort_unstable();
    samples
}

pub(crate) fn open(spec: &DatasetSpec) -> Arc<dyn Dataset> {
    dataset::open(spec, None).unwrap()
}

/// [`folder_and_shards`], both opened: the folder they are in, the image folder and the
/// shards.
fn opened_folder_and_shards() -> (TempDir, Arc<dyn Dataset>, Arc<dyn Dataset>) {
    let (dir, pattern) = folder_and_shards();
    let folder = dir.path().join("folder");
    let folder = open(&spec(DatasetKind::ImageFolder, path_str(&folder)));
    let shards = open(&spec(DatasetKind::Shards, &pattern));
    (dir, folder, shards)
}

/// The files under `dir` this process has open.
fn open_files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let fds = std::fs::read_dir("/proc/self/fd").unwrap();
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.starts_with(dir))
        .collect()
}

/// An epoch cut partway at `num_workers = 0` (as a window cuts it) lets go of the shard
/// stream this thread had open, and of the samples it passed over, so that the next
/// epoch reads from storage as the first did.
#[test]
#[cfg(target_os = "linux")]
fn an_epoch_cut_partway_at_0_workers_closes_its_shard_stream() {
    let (dir, pattern) = folder_and_shards();
    let shards = open(&spec(DatasetKind::Shards, &pattern));
    let mut settings = loader_settings(0, false);
    settings.batch_size = 4;
    let mut loader = light_loader(shards, 3, settings, CancelToken::new());
    let mut epoch = loader.epoch().unwrap();
    epoch.next().unwrap().unwrap();
    let shard_dir = dir.path().join("shards");
    assert_eq!(
        open_files_under(&shard_dir).len(),
        1,
        "one shard is being read"
    );
    drop(epoch);
    assert_eq!(
        open_files_under(&shard_dir),
        Vec::<std::path::PathBuf>::new()
    );
}

#[test]
fn every_epoch_over_the_shards_holds_the_folder_s_samples_once_at_0_2_and_3_workers() {
    let (_dir, folder, shards) = opened_folder_and_shards();
    assert_eq!(shards.len(), IMAGES as usize);
    assert_eq!(shards.shards().map(|s| s.len()), Some(8));
    let expected = epoch_samples(&folder, 0, Shard::WHOLE);
    assert_eq!(expected.len(), IMAGES as usize);
    for workers in [0, 2, 3] {
        assert_eq!(
            epoch_samples(&shards, workers, Shard::WHOLE),
            expected,
            "{workers} workers"
        );
    }
}

#[test]
fn two_ranks_split_the_shards_and_together_hold_the_folder_once() {
    let (_dir, folder, shards) = opened_folder_and_shards();
    let expected = epoch_samples(&folder, 0, Shard::WHOLE);
    let mut both = Vec::new();
    for rank in 0..2 {
        let part = epoch_samples(&shards, 2, Shard { rank, world: 2 });
        assert!(
            !part.is_empty() && part.len() < expected.len(),
            "rank {rank}"
        );
        both.extend(part);
    }
    both.sort_unstable();
    assert_eq!(both, expected);
}

/// `loaderbench run` on the shards with `sets` added, its JSON export read back.
pub(crate) fn run_on_shards(pattern: &str, dir: &Path, sets: &[&str]) -> serde_json::Value {
    let json = dir.join("run.json");
    let kind = "dataset.kind=shards".to_owned();
    let path = format!("dataset.path={pattern}");
    let mut args = vec![
        "run",
        "seed-light",
        "-q",
        "--set",
        &kind,
        "--set",
        &path,
        "--set",
        "dataset.channels=3",
        "--set",
        "epochs=2",
        "--set",
        "batch_size=4",
        "--set",
        "persistent_workers=[false]",
        "--set",
        "pin_memory=[false]",
        "--json",
        path_str(&json),
    ];
    args.extend_from_slice(sets);
    let output = loaderbench(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[test]
fn the_cli_reads_shards_with_thread_fork_and_spawn_workers_and_with_ranks() {
    let (dir, pattern) = folder_and_shards();
    let run = run_on_shards(
        &pattern,
        dir.path(),
        &[
            "--set",
            "num_workers=[0, 3]",
            "--set",
            "worker_kind=[thread, fork, spawn]",
        ],
    );
    let results = run["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for config in results {
        for epoch in config["epochs"].as_array().unwrap() {
            assert_eq!(epoch["samples"], IMAGES, "{config}");
        }
    }
    let ranked = run_on_shards(
        &pattern,
        dir.path(),
        &["--set", "num_workers=[2]", "--set", "ranks=[2]"],
    );
    assert!(!ranked["results"].as_array().unwrap().is_empty());
}
