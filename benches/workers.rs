//! Worker kinds side by side on the seed-light preset's data (60,000 synthetic samples,
//! light pipeline, batch 256, 2 workers): worker start-up of spawned and forked workers
//! against threads, and what starting them on the launcher thread adds; first batch,
//! epoch 1 and epoch 2, persistent and not; the per-batch cost of shared-memory against
//! pipe transfer and its share of an epoch; the extra memory (PSS) per worker with the
//! dataset reopened or copied. Medians of several runs.
//! Without `--bench` (under `cargo test --all-targets`) it runs a tiny smoke version.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, Dataset, DatasetSpec};
use loaderbench_engine::loader::process::{ProcessKind, ProcessWorkers};
use loaderbench_engine::loader::{Loader, LoaderSettings};
use loaderbench_engine::memory;
use loaderbench_engine::preset::{BatchTransfer, DatasetTransfer};
use loaderbench_engine::transform::{Normalize, Pipeline, PipelineSpec};
use loaderbench_measure::stats::median;

struct Scale {
    samples: usize,
    repeats: usize,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Thread,
    Spawn,
    Fork,
}

#[derive(Clone, Copy)]
struct Setup {
    kind: Kind,
    persistent: bool,
    data: DatasetTransfer,
    batches: BatchTransfer,
}

#[derive(Default)]
struct Measured {
    startup_s: Vec<f64>,
    first_batch_s: Vec<f64>,
    epoch_s: [Vec<f64>; 2],
    transfer_per_batch_s: Vec<f64>,
    transfer_share: Vec<f64>,
    pss_bytes: Vec<f64>,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let scale = if full {
        Scale {
            samples: 60_000,
            repeats: 5,
        }
    } else {
        Scale {
            samples: 512,
            repeats: 1,
        }
    };
    let spec = DatasetSpec::default();
    let generating = Instant::now();
    let dataset = dataset::open(&spec, Some(scale.samples)).expect("the synthetic dataset opens");
    let generation_s = generating.elapsed().as_secs_f64();
    println!(
        "workers bench: {} synthetic samples, light pipeline, batch 256, 2 workers; medians of {} runs",
        scale.samples, scale.repeats
    );
    let base = Setup {
        kind: Kind::Thread,
        persistent: false,
        data: DatasetTransfer::Reopen,
        batches: BatchTransfer::SharedMemory,
    };

    println!("\n| kind | persistent | worker start-up | first batch | epoch 1 | epoch 2 |");
    println!("|---|---|---|---|---|---|");
    let mut thread_epoch = 0.0;
    let mut startups = Vec::new();
    for kind in [Kind::Thread, Kind::Spawn, Kind::Fork] {
        for persistent in [false, true] {
            let m = measure(
                &dataset,
                &scale,
                Setup {
                    kind,
                    persistent,
                    ..base
                },
            );
            let startup = med(&m.startup_s);
            if !persistent {
                startups.push((kind, startup));
                if matches!(kind, Kind::Thread) {
                    thread_epoch = med(&m.epoch_s[0]);
                }
            }
            println!(
                "| {kind:?} | {persistent} | {:.4} s | {:.3} s | {:.3} s | {:.3} s |",
                startup,
                med(&m.first_batch_s),
                med(&m.epoch_s[0]),
                med(&m.epoch_s[1])
            );
        }
    }
    let thread_startup = startups[0].1.max(1e-9);
    for (kind, startup) in &startups[1..] {
        println!(
            "{kind:?} worker start-up: {startup:.4} s, {:.0}× a thread's ({thread_startup:.5} s); goal for spawn < 0.3 s",
            startup / thread_startup
        );
    }
    let handoff = launcher_handoff_s();
    for (kind, startup) in &startups[1..] {
        println!(
            "{kind:?} workers start on the launcher thread (they die with the process, not \
             the thread): the hand-off adds {:.1} µs, {:.3} % of the start-up (goal < 1 %)",
            handoff * 1e6,
            handoff / startup.max(1e-9) * 100.0
        );
    }
    let copied = measure(
        &dataset,
        &scale,
        Setup {
            kind: Kind::Spawn,
            data: DatasetTransfer::Copy,
            ..base
        },
    );
    println!(
        "Spawn worker start-up with the dataset copied through the pipe instead of mapping \
         the loader's shared image: {:.4} s (generating the synthetic dataset takes \
         {generation_s:.3} s here)",
        med(&copied.startup_s)
    );

    println!("\n| transfer | per batch | share of epoch 1 | epoch 1 | vs thread workers |");
    println!("|---|---|---|---|---|");
    for batches in [BatchTransfer::SharedMemory, BatchTransfer::Pipe] {
        let m = measure(
            &dataset,
            &scale,
            Setup {
                kind: Kind::Spawn,
                batches,
                ..base
            },
        );
        println!(
            "| {} | {:.1} µs | {:.2} % | {:.3} s | {:.2}× |",
            batches.name(),
            med(&m.transfer_per_batch_s) * 1e6,
            med(&m.transfer_share) * 100.0,
            med(&m.epoch_s[0]),
            med(&m.epoch_s[0]) / thread_epoch.max(1e-9)
        );
    }
    println!("(goal: shared-memory transfer adds < 5 % to a light-pipeline epoch)");

    println!("\n| kind | dataset | extra memory per worker (PSS) |");
    println!("|---|---|---|");
    for kind in [Kind::Spawn, Kind::Fork] {
        for data in [DatasetTransfer::Reopen, DatasetTransfer::Copy] {
            let m = measure(&dataset, &scale, Setup { kind, data, ..base });
            println!(
                "| {kind:?} | {} | {:.1} MiB |",
                data.name(),
                med(&m.pss_bytes) / (1 << 20) as f64
            );
        }
    }
}

/// The median round trip of an empty job through the launcher thread that starts every
/// worker process.
fn launcher_handoff_s() -> f64 {
    let trips: Vec<f64> = (0..200)
        .map(|_| {
            let started = Instant::now();
            loaderbench_engine::child_processes::on_launcher(|| ());
            started.elapsed().as_secs_f64()
        })
        .collect();
    med(&trips)
}

fn med(values: &[f64]) -> f64 {
    median(values).unwrap_or(f64::NAN)
}

fn measure(dataset: &Arc<dyn Dataset>, scale: &Scale, setup: Setup) -> Measured {
    let mut measured = Measured::default();
    for _ in 0..scale.repeats {
        let mut loader = loader(dataset, scale, setup);
        for epoch in 0..2 {
            let started = Instant::now();
            let mut batches = loader.epoch().expect("an epoch starts");
            let mut transfer = Duration::ZERO;
            let mut count = 0;
            let mut first = None;
            // The workers' PSS as last read during the epoch (non-persistent workers are
            // gone once it ends).
            let mut pss: Vec<f64> = Vec::new();
            while let Some(batch) = batches.next() {
                let batch = batch.expect("a batch arrives");
                first.get_or_insert_with(|| started.elapsed().as_secs_f64());
                transfer += Duration::from_secs_f64(batch.stages.transfer_s);
                count += 1;
                if epoch == 0 && count % 16 == 1 {
                    pss = batches
                        .worker_pids()
                        .into_iter()
                        .filter_map(|pid| memory::process_memory(pid)?.pss_bytes)
                        .map(|b| b as f64)
                        .collect();
                }
                for startup in batches.take_worker_startups() {
                    if epoch == 0 {
                        measured.startup_s.push(startup.seconds);
                    }
                }
            }
            drop(batches);
            let seconds = started.elapsed().as_secs_f64();
            measured.epoch_s[epoch].push(seconds);
            if epoch == 0 {
                measured.first_batch_s.push(first.unwrap_or(seconds));
                measured
                    .transfer_per_batch_s
                    .push(transfer.as_secs_f64() / count.max(1) as f64);
                measured
                    .transfer_share
                    .push(transfer.as_secs_f64() / seconds);
                measured.pss_bytes.extend(pss);
            }
        }
    }
    measured
}

fn loader(dataset: &Arc<dyn Dataset>, scale: &Scale, setup: Setup) -> Loader {
    let settings = LoaderSettings {
        batch_size: 256,
        num_workers: 2,
        persistent_workers: setup.persistent,
        shuffle: true,
        seed: 0,
        drop_last: false,
        worker_timeout: Duration::from_secs(60),
        shard: loaderbench_engine::loader::Shard::WHOLE,
        shuffle_buffer: 0,
        ..LoaderSettings::default()
    };
    let pipeline =
        Pipeline::new(&PipelineSpec::Light, &Normalize::default(), 1).expect("light pipeline");
    let loader = Loader::new(
        dataset.clone(),
        Arc::new(pipeline),
        settings,
        CancelToken::new(),
    )
    .expect("valid settings");
    let kind = match setup.kind {
        Kind::Thread => return loader,
        Kind::Spawn => ProcessKind::Spawn,
        Kind::Fork => ProcessKind::Fork,
    };
    loader.with_processes(ProcessWorkers {
        kind,
        dataset: Some(DatasetSpec::default()),
        samples: Some(scale.samples),
        pipeline: PipelineSpec::Light,
        transform_at: Default::default(),
        normalize: Normalize::default(),
        dataset_transfer: setup.data,
        batch_transfer: setup.batches,
        executable: Some(PathBuf::from(env!("CARGO_BIN_EXE_loaderbench"))),
    })
}
