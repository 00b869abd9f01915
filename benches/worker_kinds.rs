//! Threads or processes for the user's own loader, measured side by side: for each
//! runtime and worker kind in [`ROWS`], at 2 and 4 workers, a typical epoch's time (the
//! median of epochs 2 and 3), the CPU time it took (every process of the config) and the
//! config's memory (every process's PSS summed at its peak), each with its ratio to
//! DataLoader's fork workers at the same count (the median of the per-round ratios).
//! Rows run interleaved, round by round, each a fresh `loaderbench run` process.
//!
//! Two workloads: the seed-heavy pipeline as a user's Dataset
//! (`tests/data/user_dataset/heavy_user.py`: rotation, elastic, blur, normalize with
//! torchvision, on 12,800 MNIST-shaped IDX images, batch 256), which our engine runs as
//! its own heavy pipeline over the same files; and a JPEG folder (4,000 photo-like images
//! of 320×240 in 10 classes, read at 128×128 with the light pipeline), which the PyTorch
//! runtime reads with PIL and our engine with its own decoder. Process workers persist, so
//! a typical epoch is the loading itself; the Python runtimes' threads start every epoch
//! (their start-up is part of it).
//!
//! Run with `cargo bench --bench worker_kinds` (`-- heavy` or `-- jpeg` for one
//! workload); under `cargo test` (no `--bench`) a few dozen samples, one round and 2
//! workers go through every step, as a smoke test.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use loaderbench_engine::dataset::{DatasetKind, DatasetSpec, open};
use loaderbench_engine::preset::Preset;
use loaderbench_measure::pytorch::write_idx;
use loaderbench_measure::results::ConfigResult;
use loaderbench_measure::results_file;
use loaderbench_measure::stats::median;

/// One runtime and worker kind: what `--set runtime=` and `--set worker_kind=` say,
/// whether its workers persist between epochs (process workers do; the Python runtimes'
/// threads are built every epoch, and their plans refuse persistence), and what the
/// table calls it.
struct Row {
    runtime: &'static str,
    worker_kind: &'static str,
    persistent: bool,
    name: &'static str,
}

/// Every row measured, DataLoader's fork workers (the one the others are compared with)
/// first.
const ROWS: [Row; 5] = [
    Row {
        runtime: "pytorch",
        worker_kind: "fork",
        persistent: true,
        name: "DataLoader fork workers",
    },
    Row {
        runtime: "pytorch",
        worker_kind: "thread",
        persistent: false,
        name: "torchdata.nodes threads",
    },
    Row {
        runtime: "spdl",
        worker_kind: "thread",
        persistent: false,
        name: "SPDL threads",
    },
    Row {
        runtime: "loaderbench",
        worker_kind: "thread",
        persistent: true,
        name: "loaderbench threads",
    },
    Row {
        runtime: "loaderbench",
        worker_kind: "fork",
        persistent: true,
        name: "loaderbench fork workers",
    },
];

const WORKERS: [usize; 2] = [2, 4];

/// A typical epoch's seconds, CPU seconds and summed PSS, for one row at one count in
/// one round.
#[derive(Clone, Copy)]
struct Figures {
    epoch_s: f64,
    cpu_s: f64,
    pss_bytes: f64,
}

/// One workload: the preset our engine runs and the one the Python runtimes run.
struct Workload {
    /// What its files are named after.
    name: &'static str,
    title: String,
    ours: PathBuf,
    python: PathBuf,
}

impl Workload {
    fn preset_for(&self, row: &Row) -> &Path {
        if row.runtime == "loaderbench" {
            &self.ours
        } else {
            &self.python
        }
    }
}

fn main() {
    let (full, named) = common::bench_args();
    let wanted = |part: &str| named.is_empty() || named.iter().any(|n| n == part);
    // The smoke version measures at 2 workers only: every step, half the processes.
    let (samples, images, rounds, counts) = if full {
        (12_800, 4_000, 3, "num_workers=2,4")
    } else {
        (64, 40, 1, "num_workers=2")
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("worker kinds: {rounds} interleaved round(s), {cores} cores");
    let mut workloads = Vec::new();
    if wanted("heavy") {
        workloads.push(seed_heavy(dir.path(), samples));
    }
    if wanted("jpeg") {
        workloads.push(jpeg_folder(dir.path(), images));
    }
    for workload in workloads {
        let figures = measure(dir.path(), &workload, rounds, counts);
        print_table(&workload.title, &figures);
    }
}

/// Every row of `workload` at the worker counts `counts` sets, round after round: per
/// row and count, each round's figures.
fn measure(
    dir: &Path,
    workload: &Workload,
    rounds: usize,
    counts: &str,
) -> BTreeMap<(usize, usize), Vec<Figures>> {
    let mut figures: BTreeMap<(usize, usize), Vec<Figures>> = BTreeMap::new();
    for round in 0..rounds {
        for (index, row) in ROWS.iter().enumerate() {
            let json = dir.join(format!("{}-{index}-{round}.json", workload.name));
            let preset = workload.preset_for(row).to_str().expect("a UTF-8 path");
            let runtime = format!("runtime={}", row.runtime);
            let kind = format!("worker_kind={}", row.worker_kind);
            let persistent = format!("persistent_workers={}", row.persistent);
            let args = [
                "run",
                preset,
                "--quiet",
                "--set",
                &runtime,
                "--set",
                &kind,
                "--set",
                &persistent,
                "--set",
                counts,
            ];
            common::loaderbench(&args, &json);
            let result = results_file::read(&json).expect("the run's results");
            for run in &result.results {
                figures
                    .entry((index, run.config.num_workers))
                    .or_default()
                    .push(figures_of(run));
            }
        }
    }
    figures
}

fn figures_of(run: &ConfigResult) -> Figures {
    let typical = |value: fn(&loaderbench_measure::results::EpochResult) -> Option<f64>| {
        let values: Vec<f64> = run.typical_epochs().filter_map(value).collect();
        median(&values).unwrap_or(f64::NAN)
    };
    Figures {
        epoch_s: typical(|e| Some(e.seconds)),
        cpu_s: typical(|e| e.own_cpu_s),
        pss_bytes: run.memory_bytes().map_or(f64::NAN, |b| b as f64),
    }
}

/// The table of one workload, then where threads win and lose against the same loader's
/// fork workers on it.
fn print_table(title: &str, figures: &BTreeMap<(usize, usize), Vec<Figures>>) {
    println!("\n{title}");
    println!(
        "| runtime and workers | nw | epoch s | × DataLoader fork | CPU s | × DataLoader fork \
         | PSS MiB | × DataLoader fork |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (index, row) in ROWS.iter().enumerate() {
        for workers in WORKERS {
            let Some(ratios) = Ratios::of(figures, (index, workers), (0, workers)) else {
                continue;
            };
            let mine = &figures[&(index, workers)];
            let value = |f: fn(&Figures) -> f64| {
                let values: Vec<f64> = mine.iter().map(f).collect();
                median(&values).unwrap_or(f64::NAN)
            };
            println!(
                "| {} | {workers} | {:.3} | {:.2} | {:.2} | {:.2} | {:.0} | {:.2} |",
                row.name,
                value(|f| f.epoch_s),
                ratios.epoch,
                value(|f| f.cpu_s),
                ratios.cpu,
                value(|f| f.pss_bytes) / (1024.0 * 1024.0),
                ratios.pss,
            );
        }
    }
    for (index, row) in ROWS.iter().enumerate() {
        let Some(processes) = processes_of(row) else {
            continue;
        };
        for workers in WORKERS {
            if let Some(ratios) = Ratios::of(figures, (index, workers), (processes, workers)) {
                println!("{}", note(row, &ROWS[processes], workers, &ratios));
            }
        }
    }
}

/// One row's figures over another's at the same count: the median of the per-round
/// ratios.
struct Ratios {
    epoch: f64,
    cpu: f64,
    pss: f64,
}

impl Ratios {
    fn of(
        figures: &BTreeMap<(usize, usize), Vec<Figures>>,
        row: (usize, usize),
        reference: (usize, usize),
    ) -> Option<Ratios> {
        let (mine, theirs) = (figures.get(&row)?, figures.get(&reference)?);
        let ratio = |f: fn(&Figures) -> f64| {
            let ratios: Vec<f64> = mine.iter().zip(theirs).map(|(a, b)| f(a) / f(b)).collect();
            median(&ratios).unwrap_or(f64::NAN)
        };
        Some(Ratios {
            epoch: ratio(|f| f.epoch_s),
            cpu: ratio(|f| f.cpu_s),
            pss: ratio(|f| f.pss_bytes),
        })
    }
}

/// For a thread row, the fork row of the same loader: our engine's for our engine,
/// DataLoader's for the Python runtimes.
fn processes_of(row: &Row) -> Option<usize> {
    let ours = |r: &Row| r.runtime == "loaderbench";
    (row.worker_kind == "thread").then_some(())?;
    ROWS.iter()
        .position(|r| r.worker_kind == "fork" && ours(r) == ours(row))
}

/// Where a thread row wins or loses against its loader's fork workers at a count:
/// faster or slower by more than 5%, or as fast.
fn note(threads: &Row, processes: &Row, workers: usize, ratios: &Ratios) -> String {
    let speed = if ratios.epoch < 0.95 {
        format!("threads win, {:.2}× as fast", 1.0 / ratios.epoch)
    } else if ratios.epoch > 1.05 {
        format!("threads lose, {:.2}× the epoch time", ratios.epoch)
    } else {
        "as fast within 5%".to_owned()
    };
    format!(
        "{} against {} at {workers}: {speed}, with {:.2}× the CPU time and {:.2}× the \
         memory.",
        threads.name, processes.name, ratios.cpu, ratios.pss
    )
}

/// The seed-heavy pipeline: our engine's own over IDX files of the synthetic dataset,
/// and heavy_user.py's torchvision ops over the same files.
fn seed_heavy(dir: &Path, samples: usize) -> Workload {
    let root = dir.join("idx");
    std::fs::create_dir_all(&root).expect("a folder");
    let synthetic = open(&DatasetSpec::default(), Some(samples)).expect("the synthetic dataset");
    write_idx(synthetic.as_ref(), &root).expect("IDX files");
    let mut ours = preset(DatasetSpec {
        kind: DatasetKind::Idx,
        path: Some(root.clone()),
        ..DatasetSpec::default()
    });
    ours.set("pipeline", "heavy").expect("the heavy pipeline");
    let module =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/user_dataset/heavy_user.py");
    let python = preset(DatasetSpec {
        kind: DatasetKind::Python,
        path: Some(module),
        factory: Some("make_dataset".to_owned()),
        args: [("root".to_owned(), serde_json::json!(root))].into(),
        collate: Some("make_collate".to_owned()),
        ..DatasetSpec::default()
    });
    Workload {
        name: "heavy",
        title: format!(
            "seed-heavy as a user Dataset (heavy_user.py; our engine: its heavy pipeline on \
             the same IDX files), {samples} samples, batch 256"
        ),
        ours: save(&ours, &dir.join("heavy-ours.ron")),
        python: save(&python, &dir.join("heavy-python.ron")),
    }
}

/// A folder of `images` photo-like JPEGs of 320×240 in 10 classes, read at 128×128 with
/// the light pipeline (PIL on the PyTorch runtime).
fn jpeg_folder(dir: &Path, images: usize) -> Workload {
    let root = dir.join("jpeg");
    common::write_jpeg_folder(&root, images, 10, |_| (320, 240));
    let mut preset = preset(DatasetSpec {
        kind: DatasetKind::ImageFolder,
        path: Some(root),
        channels: 3,
        image_size: [128, 128],
        ..DatasetSpec::default()
    });
    preset.set("pipeline", "light").expect("the light pipeline");
    let path = save(&preset, &dir.join("jpeg.ron"));
    Workload {
        name: "jpeg",
        title: format!(
            "JPEG folder ({images} images of 320×240 read at 128×128; PIL on the PyTorch \
             runtime), batch 256"
        ),
        ours: path.clone(),
        python: path,
    }
}

/// Three epochs of `dataset` in batches of 256 at 2 and 4 workers (each row says
/// whether they persist).
fn preset(dataset: DatasetSpec) -> Preset {
    let mut preset = Preset {
        name: "worker-kinds-bench".to_owned(),
        epochs: 3,
        batch_size: vec![256],
        dataset,
        resolve_for_s: 0.0,
        ..Preset::default()
    };
    for (key, value) in [
        ("num_workers", "2,4"),
        ("pin_memory", "false"),
        // Long enough to outlast the pauses other benchmarks on this machine impose.
        ("worker_timeout_s", "1200"),
    ] {
        preset.set(key, value).expect("a preset field");
    }
    preset
}

fn save(preset: &Preset, path: &Path) -> PathBuf {
    preset.save(path).expect("the preset is saved");
    path.to_path_buf()
}
