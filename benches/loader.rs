//! The loader against the in-process floor, and heavy-pipeline scaling.
//!
//! Part 1: our light-pipeline epoch (60,000 samples, batch 256, 0 workers) against the
//! floor: one loop that converts the same shuffled uint8 batches to normalized float32
//! with the same library (libtorch), nothing else. Goal: within 2× of the floor.
//! Part 2: the heavy pipeline, ms per batch at 0, 1 and 2 workers, and the speed-up at 2.
//!
//! The two sides of each comparison run interleaved, several times, and the medians are
//! compared, because this machine is noisy. Under `cargo test` (no `--bench` argument)
//! everything runs at a tiny size, as a smoke test.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, Dataset, DatasetSpec};
use loaderbench_engine::loader::{Loader, LoaderSettings};
use loaderbench_engine::transform::{Normalize, Pipeline, PipelineSpec};
use loaderbench_measure::stats::median;
use tch::{Kind, Tensor};

struct Sizes {
    light_samples: usize,
    heavy_samples: usize,
    rounds: usize,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = if full {
        Sizes {
            light_samples: 60_000,
            heavy_samples: 12_800,
            rounds: 7,
        }
    } else {
        Sizes {
            light_samples: 2_048,
            heavy_samples: 256,
            rounds: 1,
        }
    };
    light_against_floor(&sizes);
    heavy_scaling(&sizes);
}

fn settings(num_workers: usize) -> LoaderSettings {
    LoaderSettings {
        batch_size: 256,
        num_workers,
        shuffle: true,
        seed: 0,
        drop_last: false,
        worker_timeout: Duration::from_secs(60),
        shard: loaderbench_engine::loader::Shard::WHOLE,
        shuffle_buffer: 0,
        ..LoaderSettings::default()
    }
}

fn open(samples: usize) -> Arc<dyn Dataset> {
    dataset::open(&DatasetSpec::default(), Some(samples)).expect("synthetic dataset")
}

fn pipeline(spec: &PipelineSpec) -> Arc<Pipeline> {
    Arc::new(Pipeline::new(spec, &Normalize::default(), 1).expect("pipeline"))
}

/// Seconds for one epoch of `loader`, draining every batch.
fn epoch_seconds(loader: &mut Loader) -> f64 {
    let started = Instant::now();
    for batch in loader.epoch().expect("epoch") {
        std::hint::black_box(batch.expect("batch"));
    }
    started.elapsed().as_secs_f64()
}

/// The floor: the same shuffled uint8 batches, gathered from one tensor and normalized.
fn floor_seconds(pixels: &Tensor, orders: &[Vec<i64>]) -> f64 {
    let norm = Normalize::default();
    let started = Instant::now();
    for batch in orders {
        let index = Tensor::from_slice(batch);
        let images = pixels
            .index_select(0, &index)
            .to_kind(Kind::Float)
            .divide_scalar(255.0)
            .subtract_scalar(norm.mean[0])
            .divide_scalar(norm.std[0]);
        drop(std::hint::black_box(images));
    }
    started.elapsed().as_secs_f64()
}

fn light_against_floor(sizes: &Sizes) {
    let dataset = open(sizes.light_samples);
    let shape = dataset.shape();
    let mut bytes = vec![0u8; dataset.len() * shape.sample_bytes()];
    for (index, slot) in bytes.chunks_exact_mut(shape.sample_bytes()).enumerate() {
        dataset.read(index, slot).expect("read");
    }
    let pixels = Tensor::from_slice(&bytes).view([dataset.len() as i64, 1, 28, 28]);
    let mut loader = Loader::new(
        dataset.clone(),
        pipeline(&PipelineSpec::Light),
        settings(0),
        CancelToken::new(),
    )
    .expect("loader");
    let orders: Vec<Vec<i64>> = {
        let mut order: Vec<i64> = (0..dataset.len() as i64).collect();
        use rand::SeedableRng;
        use rand::seq::SliceRandom;
        order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(0));
        order.chunks(256).map(<[i64]>::to_vec).collect()
    };
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    epoch_seconds(&mut loader);
    floor_seconds(&pixels, &orders);
    for _ in 0..sizes.rounds {
        ours.push(epoch_seconds(&mut loader));
        floor.push(floor_seconds(&pixels, &orders));
    }
    let (ours, floor) = (median(&ours).unwrap_or(0.0), median(&floor).unwrap_or(0.0));
    println!(
        "light, {} samples, batch 256, 0 workers: ours {:.1} ms, floor {:.1} ms, ratio {:.2}× (goal ≤ 2×; medians of {})",
        sizes.light_samples,
        ours * 1e3,
        floor * 1e3,
        ours / floor,
        sizes.rounds
    );
}

fn heavy_scaling(sizes: &Sizes) {
    let dataset = open(sizes.heavy_samples);
    let heavy = pipeline(&PipelineSpec::Heavy);
    let batches = dataset.len().div_ceil(256) as f64;
    let mut per_batch_ms = Vec::new();
    for workers in [0, 1, 2] {
        let mut settings = settings(workers);
        settings.persistent_workers = true;
        let mut loader = Loader::new(dataset.clone(), heavy.clone(), settings, CancelToken::new())
            .expect("loader");
        epoch_seconds(&mut loader);
        let rounds: Vec<f64> = (0..sizes.rounds.min(3))
            .map(|_| epoch_seconds(&mut loader))
            .collect();
        let ms = median(&rounds).unwrap_or(0.0) * 1e3 / batches;
        println!(
            "heavy, {} samples, batch 256, {workers} worker(s): {ms:.2} ms per batch",
            sizes.heavy_samples
        );
        per_batch_ms.push(ms);
    }
    println!(
        "heavy speed-up at 2 workers: {:.2}× over 0 workers, {:.2}× over 1 worker",
        per_batch_ms[0] / per_batch_ms[2],
        per_batch_ms[1] / per_batch_ms[2]
    );
}
