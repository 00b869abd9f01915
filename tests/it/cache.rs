//! `cache: [warm, cold]` as a user runs it, the CLI as a process: on an image folder on
//! the build's disk, cold epochs (evicted before each) read the folder from storage,
//! with our engine's own process and its spawned worker processes counted, and warm ones
//! (loaded before each) read nothing, the first one after an eviction included; the JSON
//! export holds the figures and the table shows them. On tmpfs (/dev/shm) the pages
//! cannot leave: the run says so in one line and marks the config instead of calling
//! its figures cold.

use std::path::{Path, PathBuf};

use loaderbench_engine::dataset::{DatasetKind, DatasetSpec};
use loaderbench_engine::page_cache;
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_measure::{Event, RunOptions};

use serde_json::Value;

use crate::common;
use common::runs::SavedRun;
use common::{assert_printed, loaderbench, noisy_image_folder, path_str, stderr, stdout};

/// Runs a preset over the image folder at `folder` with `cache` and `num_workers` lists
/// (spawned workers, two epochs), returning the output and the JSON export.
fn run(folder: &Path, cache: &str, num_workers: &str) -> (std::process::Output, Value) {
    let out = tempfile::TempDir::new_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let preset = out.path().join("cache.ron");
    std::fs::write(
        &preset,
        format!(
            "(version: 1, name: \"cache\", dataset: (kind: image_folder, path: \"{}\", \
             channels: 3, image_size: (32, 32)), epochs: 2, batch_size: [8], \
             num_workers: [{num_workers}], worker_kind: [spawn], cache: [{cache}])",
            path_str(folder)
        ),
    )
    .unwrap();
    load_programs();
    let saved = SavedRun::in_dir(out.path());
    let output = loaderbench(&saved.run_args(path_str(&preset), &[]));
    assert!(output.status.success(), "{}", stderr(&output));
    (output, saved.exported())
}

/// Loads the program's pages into the page cache: the loaderbench binary and the shared
/// libraries this test process maps (libtorch's among them, which a worker maps too). A
/// spawned worker is a fresh process: where those pages have left the page cache (a build
/// just rewrote the binary; libtorch's 440 MB under CI's load), a warm epoch counts their
/// reads as well (232 kB of the binary seen against a limit of 237 kB; 622 kB of a CI
/// run). The tests are about the folder's reads.
fn load_programs() {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("this process's maps");
    let mut files: Vec<PathBuf> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter(|path| path.contains(".so"))
        .map(PathBuf::from)
        .collect();
    files.sort();
    files.dedup();
    files.push(PathBuf::from(env!("CARGO_BIN_EXE_loaderbench")));
    for file in files {
        let mut opened = std::fs::File::open(&file).expect("a mapped file");
        std::io::copy(&mut opened, &mut std::io::sink()).expect("read");
    }
}

/// What a warm epoch may read from storage: the folder is loaded before it, so only the
/// program's own pages that a new worker process faults in (0 to 60 kB seen), never the
/// folder's images (2.4 MB).
fn nothing_of(bytes: u64) -> u64 {
    bytes / 10
}

/// Each config's cache, why it was not as cold or as warm as it asked (`stayed_warm`,
/// `partly_cold`) and its epochs' bytes read from storage.
fn reads(exported: &Value) -> Vec<(String, Option<String>, Vec<u64>)> {
    let results = exported["results"].as_array().expect("results");
    results
        .iter()
        .map(|r| {
            let epochs = r["epochs"].as_array().expect("epochs");
            let bytes = epochs
                .iter()
                .map(|e| e["read_bytes"].as_u64().expect("read_bytes"));
            for epoch in epochs {
                assert!(epoch["read_mb_s"].as_f64().is_some(), "{epoch}");
            }
            (
                r["config"]["cache"].as_str().expect("cache").to_owned(),
                r["stayed_warm"]
                    .as_str()
                    .or(r["partly_cold"].as_str())
                    .map(str::to_owned),
                bytes.collect(),
            )
        })
        .collect()
}

#[test]
fn cold_epochs_read_the_folder_from_storage_and_warm_ones_do_not() {
    let (folder, bytes) = noisy_image_folder(Path::new(env!("CARGO_TARGET_TMPDIR")), 24);
    let (output, exported) = run(folder.path(), "warm, cold", "0, 2");
    let configs = reads(&exported);
    assert_eq!(configs.len(), 4, "{configs:?}");
    for (cache, not_as_asked, read) in &configs {
        assert_eq!(not_as_asked, &None, "{cache}: {read:?}");
        for &epoch in read {
            match cache.as_str() {
                // Every image, read at least once per epoch (spawned workers check the
                // headers on opening the folder, then decode the files).
                "cold" => assert!(epoch >= bytes * 9 / 10, "cold read {epoch} of {bytes}"),
                _ => assert!(epoch < nothing_of(bytes), "warm read {epoch} of {bytes}"),
            }
        }
    }
    let text = stdout(&output);
    assert!(
        text.contains("storage read") && text.contains("MB/s"),
        "{text}"
    );
    eprintln!("{bytes} bytes of images; read per epoch: {configs:?}");
}

/// A warm config whose folder is evicted (`posix_fadvise`) just before each epoch, at
/// the front end's gate: the runner loads the folder back before the clock starts, so
/// no epoch, the first included, reads it from storage. In a process of its own, since
/// the epochs' reads are this process's (/proc/self/io), which other tests would add to.
#[test]
fn a_warm_config_after_an_eviction_reads_nothing_from_storage_in_its_first_epoch() {
    let name = "a_warm_config_after_an_eviction_reads_nothing_from_storage_in_its_first_epoch";
    if !common::in_own_process(module_path!(), name, |_| {}) {
        return;
    }
    let (folder, bytes) = noisy_image_folder(Path::new(env!("CARGO_TARGET_TMPDIR")), 24);
    let files: Vec<PathBuf> = ["cat", "dog"]
        .iter()
        .flat_map(|class| std::fs::read_dir(folder.path().join(class)).unwrap())
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(files.len(), 48);
    let preset = Preset {
        dataset: DatasetSpec {
            kind: DatasetKind::ImageFolder,
            path: Some(folder.path().to_path_buf()),
            channels: 3,
            image_size: [32, 32],
            ..DatasetSpec::default()
        },
        epochs: 2,
        batch_size: vec![8],
        num_workers: vec![0, 2],
        resolve_for_s: 0.0,
        ..Preset::default()
    };
    load_programs();
    let evict = move || assert_eq!(page_cache::evict(&files).unwrap(), [], "evicted");
    let options = RunOptions {
        journal: Some(folder.path().join("run.jsonl")),
        before_epoch: Some(Box::new(evict)),
        ..RunOptions::default()
    };
    let handle =
        loaderbench_measure::spawn(Plan::from_preset(&preset, None).unwrap(), options, || {});
    let result = loop {
        match handle
            .events()
            .recv_timeout(common::CLI_LIMIT)
            .expect("the run reports")
        {
            Event::Finished { result } => break result,
            Event::Failed { error, .. } => panic!("the run failed: {error}"),
            _ => {}
        }
    };
    assert_eq!(result.results.len(), 2);
    for config in &result.results {
        assert_eq!(config.partly_cold, None, "{}", config.label);
        let read: Vec<u64> = config
            .epochs
            .iter()
            .map(|e| e.read_bytes.unwrap())
            .collect();
        assert!(
            read.iter().all(|&epoch| epoch < nothing_of(bytes)),
            "{}: read from storage {read:?} of {bytes} bytes",
            config.label
        );
    }
}

#[test]
fn a_folder_on_tmpfs_cannot_go_cold_and_the_run_says_so_once_and_marks_it() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("skipped: no /dev/shm");
        return;
    }
    let (folder, _) = noisy_image_folder(shm, 2);
    let (output, exported) = run(folder.path(), "cold", "0, 2");
    let notes: Vec<String> = stderr(&output)
        .lines()
        .filter(|line| line.contains("cache: cold"))
        .map(str::to_owned)
        .collect();
    assert_eq!(notes.len(), 1, "one line for both configs: {notes:?}");
    assert!(
        notes[0].contains(path_str(folder.path())) && notes[0].contains("on tmpfs"),
        "{notes:?}"
    );
    for (_, stayed_warm, _) in reads(&exported) {
        assert!(stayed_warm.is_some_and(|why| why.contains("tmpfs")));
    }
    assert_printed(&output, "(stayed warm)");
    let recommendations = exported["analysis"]["recommendations"].to_string();
    assert!(
        recommendations.contains("No config is named for a cold page cache"),
        "{recommendations}"
    );
}
