//! Data where it lives: one JPEG image folder (10,000 images of 160×120, 10 classes,
//! read at 64×64 with the light pipeline) and the same images as 10 tar shards
//! (`loaderbench shards`), read from disk, and over HTTP from a real nginx on 127.0.0.1
//! at an unlimited rate and at `limit_rate` 50 MB/s (per connection: this kernel has no
//! netem, so a rate stands in for a slower link), each warm and cold (`cache`), and as
//! 10 gzip-compressed `.tar.gz` shards (`--compress gz`) read cold from disk, at
//! num_workers 0, 2, 4 and 8: our engine against torchvision's ImageFolder (folder rows)
//! and against WebDataset (shard rows) in PyTorch's DataLoader. Each storage × cache is
//! one run of both runtimes; the runs are interleaved and repeated (3 rounds), and the
//! medians of the typical epochs are compared. It prints one table (epoch times,
//! samples/s, ours/peer, and where the analysis's recommendation for each runtime falls),
//! then the goals: cold shards on our engine against WebDataset at its best worker count
//! (at least 2× its throughput) and warm shards against the warm folder on our engine
//! (within 1.2×), and what gzip costs: cold gzip shards against cold plain ones, each
//! runtime at its best. The data is built once and kept under cargo's target/tmp. Run
//! with `cargo bench --bench storage` (`-- --rounds 1` for a quicker look, `-- --only
//! TEXT` for the storages whose name holds TEXT); under `cargo test` (no `--bench`
//! argument) 40 images, 2 workers and one round go through every step, as a smoke test.

mod common;

#[allow(dead_code)]
#[path = "../tests/common/nginx.rs"]
mod nginx;

use std::path::{Path, PathBuf};
use std::process::Command;

use image::codecs::jpeg::JpegEncoder;
use image::{Rgb, RgbImage};
use loaderbench_analysis::Analysis;
use loaderbench_engine::dataset::{DatasetKind, DatasetSpec};
use loaderbench_engine::preset::{Preset, Runtime};
use loaderbench_measure::results::{ConfigResult, RunResult};
use loaderbench_measure::stats::median;

use nginx::Nginx;

/// The cache states every storage is read in (the `cache` knob's values).
const CACHES: [&str; 2] = ["warm", "cold"];
const SHARDS: usize = 10;
const CLASSES: usize = 10;
/// The slow link: nginx's `limit_rate`, in bytes per second.
const SLOW_RATE: u64 = 50_000_000;

/// Where the samples are read from.
#[derive(Clone, Copy, PartialEq)]
enum Storage {
    Folder,
    ShardsOnDisk,
    GzipShardsOnDisk,
    ShardsOverHttp,
    ShardsOverSlowHttp,
}

const STORAGES: [Storage; 5] = [
    Storage::Folder,
    Storage::ShardsOnDisk,
    Storage::GzipShardsOnDisk,
    Storage::ShardsOverHttp,
    Storage::ShardsOverSlowHttp,
];

impl Storage {
    fn name(self) -> &'static str {
        match self {
            Storage::Folder => "folder on disk",
            Storage::ShardsOnDisk => "shards on disk",
            Storage::GzipShardsOnDisk => ".tar.gz shards on disk",
            Storage::ShardsOverHttp => "shards over HTTP",
            Storage::ShardsOverSlowHttp => "shards over HTTP at 50 MB/s",
        }
    }

    /// The cache states it is read in: gzip shards cold only, where what decompressing
    /// costs beside reading from storage shows.
    fn caches(self) -> &'static [&'static str] {
        match self {
            Storage::GzipShardsOnDisk => &["cold"],
            _ => &CACHES,
        }
    }

    fn peer(self) -> &'static str {
        if self == Storage::Folder {
            "ImageFolder"
        } else {
            "WebDataset"
        }
    }
}

/// Sizes of one benchmark: the full one or the smoke test's.
struct Scale {
    images: usize,
    workers: &'static str,
    rounds: usize,
    batch_size: usize,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let args: Vec<String> = std::env::args().collect();
    // `-- --rounds N` trades the repeats for time.
    let value = |name: &str| {
        let at = args.iter().position(|a| a == name)?;
        args.get(at + 1).cloned()
    };
    let rounds = value("--rounds")
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(3);
    // `-- --only TEXT`: the storages whose name holds TEXT.
    let only = value("--only").unwrap_or_default();
    let scale = if full {
        Scale {
            images: 10_000,
            workers: "0,2,4,8",
            rounds,
            batch_size: 256,
        }
    } else {
        Scale {
            images: 40,
            workers: "2",
            rounds: 1,
            batch_size: 8,
        }
    };
    let data = data_folder(scale.images);
    let served = Nginx::serve(&data, None).expect("nginx, which this benchmark needs");
    let slow = Nginx::serve(&data, Some(SLOW_RATE)).expect("nginx, which this benchmark needs");
    let pattern = format!("shards/shard-{{000000..{:06}}}.tar", SHARDS - 1);
    let gzip_pattern = format!("shards-gz/shard-{{000000..{:06}}}.tar.gz", SHARDS - 1);
    let spec = |storage: Storage| match storage {
        Storage::Folder => dataset(DatasetKind::ImageFolder, data.join("folder").display()),
        Storage::ShardsOnDisk => dataset(DatasetKind::Shards, data.join(&pattern).display()),
        Storage::GzipShardsOnDisk => {
            dataset(DatasetKind::Shards, data.join(&gzip_pattern).display())
        }
        Storage::ShardsOverHttp => dataset(DatasetKind::Shards, served.url(&pattern)),
        Storage::ShardsOverSlowHttp => dataset(DatasetKind::Shards, slow.url(&pattern)),
    };
    // Each storage × cache measured, with one result per round.
    let mut cells: Vec<Cell> = STORAGES
        .iter()
        .filter(|storage| storage.name().contains(&only))
        .flat_map(|&storage| {
            let caches = storage.caches().iter();
            caches.map(move |&cache| (storage, cache, Vec::new()))
        })
        .collect();
    for _ in 0..scale.rounds {
        for (storage, cache, runs) in &mut cells {
            let preset = preset(spec(*storage), cache, &scale);
            runs.push(common::run(preset, "storage"));
        }
    }
    let table = Table::new(&cells);
    table.print(&scale);
    table.print_goals();
}

/// The folder of `images` generated JPEGs and its shards, under cargo's target/tmp; built
/// the first time (a marker file says it is complete).
fn data_folder(images: usize) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("storage-bench-{images}"));
    // Named for what it holds: a folder built before the gzip shards were is built again.
    let done = root.join(".complete-with-gzip");
    if done.exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let folder = root.join("folder");
    for i in 0..images {
        let class = folder.join(format!("class{}", i % CLASSES));
        std::fs::create_dir_all(&class).expect("a class folder");
        let mut bytes = Vec::new();
        JpegEncoder::new_with_quality(&mut bytes, 90)
            .encode_image(&picture(i as u32))
            .expect("JPEG encoding");
        std::fs::write(class.join(format!("{i:06}.jpg")), bytes).expect("the image is written");
    }
    let per_shard = images.div_ceil(SHARDS).to_string();
    for (out, compress) in [("shards", None), ("shards-gz", Some("gz"))] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_loaderbench"));
        command
            .arg("shards")
            .arg(&folder)
            .arg(root.join(out))
            .args(["--per-shard", &per_shard]);
        if let Some(compress) = compress {
            command.args(["--compress", compress]);
        }
        let output = command.output().expect("loaderbench starts");
        assert!(
            output.status.success(),
            "loaderbench shards failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::fs::write(&done, b"").expect("the marker is written");
    root
}

/// A 160×120 picture: a gradient with a disc, different for every `seed`.
fn picture(seed: u32) -> RgbImage {
    let base = [seed * 37 % 256, seed * 91 % 256, seed * 53 % 256].map(|c| c as f32);
    let (cx, cy) = ((seed * 17 % 160) as f32, (seed * 29 % 120) as f32);
    RgbImage::from_fn(160, 120, |x, y| {
        let inside = (x as f32 - cx).hypot(y as f32 - cy) < 30.0;
        Rgb(base.map(|c| {
            let value = (c + x as f32 + y as f32 * 0.5) % 256.0;
            if inside { 255.0 - value } else { value }.clamp(0.0, 255.0) as u8
        }))
    })
}

fn dataset(kind: DatasetKind, path: impl ToString) -> DatasetSpec {
    DatasetSpec {
        kind,
        path: Some(PathBuf::from(path.to_string())),
        channels: 3,
        image_size: [64, 64],
        ..DatasetSpec::default()
    }
}

/// Both runtimes at every worker count on `dataset`, in `cache`.
fn preset(dataset: DatasetSpec, cache: &str, scale: &Scale) -> Preset {
    let mut preset = Preset {
        name: "storage-bench".to_owned(),
        epochs: 2,
        batch_size: vec![scale.batch_size],
        dataset,
        ..Preset::default()
    };
    for (key, value) in [
        ("pipeline", "light"),
        ("num_workers", scale.workers),
        ("persistent_workers", "true"),
        ("runtime", "loaderbench,pytorch"),
        ("cache", cache),
        // Long enough to outlast the pauses other benchmarks on this machine impose.
        ("worker_timeout_s", "1200"),
    ] {
        preset.set(key, value).expect("a preset field");
    }
    preset
}

/// A storage, a cache state, and its run of both runtimes in each round.
type Cell = (Storage, &'static str, Vec<RunResult>);

/// One row: a storage, a cache state and a worker count, both runtimes.
struct Row {
    storage: Storage,
    cache: &'static str,
    workers: usize,
    ours_s: f64,
    peer_s: f64,
    samples: usize,
    /// Where the analysis's recommendation for each runtime falls on this row.
    recommended: String,
}

struct Table {
    rows: Vec<Row>,
}

impl Table {
    fn new(cells: &[Cell]) -> Table {
        let mut rows = Vec::new();
        for (storage, cache, runs) in cells {
            let (storage, cache) = (*storage, *cache);
            let merged = common::merged(runs);
            let picks = recommended(&merged);
            let mut workers: Vec<usize> = merged
                .results
                .iter()
                .map(|r| r.config.num_workers)
                .collect();
            workers.sort_unstable();
            workers.dedup();
            for workers in workers {
                let (ours_s, samples) = epoch(&merged, Runtime::Loaderbench, workers);
                let (peer_s, _) = epoch(&merged, Runtime::Pytorch, workers);
                let recommended = picks
                    .iter()
                    .filter(|(_, nw, _)| *nw == workers)
                    .map(|(side, _, mark)| format!("{side} {mark}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                rows.push(Row {
                    storage,
                    cache,
                    workers,
                    ours_s,
                    peer_s,
                    samples,
                    recommended,
                });
            }
        }
        Table { rows }
    }

    fn print(&self, scale: &Scale) {
        println!(
            "{} images of 160×120 read at 64×64, batches of {}, light pipeline; medians of {} round(s); \
             ★ recommended, = in the best set",
            scale.images, scale.batch_size, scale.rounds
        );
        println!(
            "| storage | cache | nw | ours s | peer | peer s | ours samples/s | peer samples/s | peer s / ours s | recommended |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for row in &self.rows {
            let rate = |seconds: f64| row.samples as f64 / seconds;
            println!(
                "| {} | {} | {} | {:.3} | {} | {:.3} | {:.0} | {:.0} | {:.2}× | {} |",
                row.storage.name(),
                row.cache,
                row.workers,
                row.ours_s,
                row.storage.peer(),
                row.peer_s,
                rate(row.ours_s),
                rate(row.peer_s),
                row.peer_s / row.ours_s,
                row.recommended
            );
        }
    }

    fn rows(&self, storage: Storage, cache: &str) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(move |r| r.storage == storage && r.cache == cache)
    }

    fn print_goals(&self) {
        let fastest = |rows: Vec<&Row>, seconds: fn(&Row) -> f64| {
            rows.into_iter()
                .min_by(|a, b| seconds(a).total_cmp(&seconds(b)))
                .map(|row| (row.workers, seconds(row)))
        };
        let cold = "cold";
        let peer_best = fastest(self.rows(Storage::ShardsOnDisk, cold).collect(), |r| {
            r.peer_s
        });
        let ours_best = fastest(self.rows(Storage::ShardsOnDisk, cold).collect(), |r| {
            r.ours_s
        });
        if let (Some((peer_nw, peer_s)), Some((ours_nw, ours_s))) = (peer_best, ours_best) {
            println!(
                "goal: cold shards on disk, ours (best, nw={ours_nw}) against WebDataset at its best \
                 worker count (nw={peer_nw}): {:.2}× its throughput (goal ≥ 2×)",
                peer_s / ours_s
            );
        }
        let warm = "warm";
        let shards = fastest(self.rows(Storage::ShardsOnDisk, warm).collect(), |r| {
            r.ours_s
        });
        let folder = fastest(self.rows(Storage::Folder, warm).collect(), |r| r.ours_s);
        if let (Some((shards_nw, shards_s)), Some((folder_nw, folder_s))) = (shards, folder) {
            println!(
                "goal: warm shards (nw={shards_nw}) against the warm folder (nw={folder_nw}) on our \
                 engine, best of each: {:.2}× its epoch time (goal ≤ 1.2×)",
                shards_s / folder_s
            );
        }
        for (side, seconds) in [("ours", ours_s as fn(&Row) -> f64), ("WebDataset", peer_s)] {
            let gzip = fastest(
                self.rows(Storage::GzipShardsOnDisk, cold).collect(),
                seconds,
            );
            let plain = fastest(self.rows(Storage::ShardsOnDisk, cold).collect(), seconds);
            if let (Some((gzip_nw, gzip_s)), Some((plain_nw, plain_s))) = (gzip, plain) {
                println!(
                    "gzip: cold .tar.gz shards (nw={gzip_nw}) against cold .tar shards \
                     (nw={plain_nw}) on {side}, best of each: {:.2}× the epoch time",
                    gzip_s / plain_s
                );
            }
        }
    }
}

fn ours_s(row: &Row) -> f64 {
    row.ours_s
}

fn peer_s(row: &Row) -> f64 {
    row.peer_s
}

/// For each runtime's recommendation: the side, the recommended worker count and ★, and
/// each other config of its best set with =.
fn recommended(result: &RunResult) -> Vec<(&'static str, usize, &'static str)> {
    let config = |found: &dyn Fn(&ConfigResult) -> bool| {
        result.results.iter().find(|r| found(r)).map(|r| &r.config)
    };
    let mut picks = Vec::new();
    for recommendation in Analysis::of(result).recommendations {
        let Some(best) = recommendation
            .config
            .and_then(|index| config(&|r| r.config_index == index))
        else {
            continue;
        };
        let side = match best.runtime {
            Runtime::Loaderbench => "ours",
            // The benchmark measures ours beside DataLoader only.
            Runtime::Pytorch | Runtime::Spdl => "peer",
        };
        picks.push((side, best.num_workers, "★"));
        for label in &recommendation.equally_fast {
            picks.extend(config(&|r| &r.label == label).map(|c| (side, c.num_workers, "=")));
        }
    }
    picks
}

/// The median typical epoch (seconds) of `runtime` at `workers`, and its samples.
fn epoch(result: &RunResult, runtime: Runtime, workers: usize) -> (f64, usize) {
    let epochs: Vec<_> = result
        .results
        .iter()
        .filter(|r| r.config.runtime == runtime && r.config.num_workers == workers)
        .flat_map(|r| r.typical_epochs())
        .collect();
    let seconds: Vec<f64> = epochs.iter().map(|e| e.seconds).collect();
    let samples = epochs.first().map_or(0, |e| e.samples);
    (median(&seconds).unwrap_or(f64::NAN), samples)
}

/// Whether the benchmark runs in CI (the nginx harness must not skip there).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.as_str(), "" | "false" | "0"))
}
