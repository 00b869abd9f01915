//! Our transforms against the strongest batched peer and against the memory floor.
//!
//! Heavy: our heavy pipeline against kornia 0.9's equivalent (python/kornia_peer.py, run
//! by the PyTorch runtime's Python, where scripts/setup installs kornia), per batch of
//! 256 FashionMNIST-shaped images from the built-in dataset, at 1 and 2 intra-op threads,
//! 0 workers. Both start from the same uint8 batches and do the same work (every op on
//! every sample, the same kernel sizes; docs/presets.md, "The kornia peer", says where the
//! two still differ).
//! Light: our 60,000-sample light epoch (0 workers, batch 256) against the memory floor
//! measured in the same run: the epoch's bytes (uint8 images read, float32 batches
//! written) at the bandwidth a plain copy of as many bytes reaches.
//! Each comparison runs its two sides interleaved, over 3 rounds, and prints medians and
//! ratios. Run with `cargo bench --bench kornia`; under `cargo test` a tiny smoke version
//! runs (one small batch, one round), which still starts the Python peer.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, DatasetSpec};
use loaderbench_engine::loader::{Loader, LoaderSettings, Shard, StageTimes};
use loaderbench_engine::transform::{Normalize, Pipeline, PipelineSpec};
use loaderbench_measure::pytorch::python_path;
use loaderbench_measure::stats::median;
use rand::SeedableRng;
use rand::rngs::StdRng;
use tch::Tensor;

struct Sizes {
    batch_size: usize,
    heavy_batches: usize,
    light_samples: usize,
    rounds: usize,
    threads: &'static [i32],
}

const SIDE: usize = 28;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = if full {
        Sizes {
            batch_size: 256,
            heavy_batches: 20,
            light_samples: 60_000,
            rounds: 3,
            threads: &[1, 2],
        }
    } else {
        Sizes {
            batch_size: 16,
            heavy_batches: 1,
            light_samples: 1_024,
            rounds: 1,
            threads: &[1],
        }
    };
    heavy_against_kornia(&sizes);
    light_against_memory_floor(&sizes);
}

/// The first `batches × batch_size` samples of the built-in dataset, as uint8
/// `[batch_size, 1, 28, 28]` batches.
fn heavy_batches(sizes: &Sizes) -> Vec<Tensor> {
    let count = sizes.heavy_batches * sizes.batch_size;
    let dataset = dataset::open(&DatasetSpec::default(), Some(count)).expect("the dataset");
    let mut bytes = vec![0u8; count * dataset.shape().sample_bytes()];
    for (index, slot) in bytes
        .chunks_exact_mut(dataset.shape().sample_bytes())
        .enumerate()
    {
        dataset.read(index, slot).expect("a sample");
    }
    let side = SIDE as i64;
    Tensor::from_slice(&bytes)
        .view([
            sizes.heavy_batches as i64,
            sizes.batch_size as i64,
            1,
            side,
            side,
        ])
        .unbind(0)
}

fn heavy_against_kornia(sizes: &Sizes) {
    let batches = heavy_batches(sizes);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("batches.u8");
    let raw: Vec<u8> = batches
        .iter()
        .flat_map(|b| Vec::<u8>::try_from(b.flatten(0, -1)).expect("bytes"))
        .collect();
    std::fs::write(&file, raw).expect("the batches file");
    let mut kornia = Peer::start(&file, sizes);
    let fused = Pipeline::new(&PipelineSpec::Heavy, &Normalize::default(), 1).expect("heavy");
    let unfused = fused.clone().unfused();
    println!(
        "heavy, {} batches of {} (28×28, 0 workers), ms per batch, medians of {} interleaved rounds:",
        sizes.heavy_batches, sizes.batch_size, sizes.rounds
    );
    println!("| intra-op threads | ours | ours unfused | kornia 0.9 | kornia / ours |");
    println!("|---|---|---|---|---|");
    let mut measured = vec![[Vec::new(), Vec::new(), Vec::new()]; sizes.threads.len()];
    for _ in 0..sizes.rounds {
        for (&threads, [ours, ours_unfused, theirs]) in sizes.threads.iter().zip(&mut measured) {
            ours.push(ours_ms_per_batch(&fused, &batches, threads));
            ours_unfused.push(ours_ms_per_batch(&unfused, &batches, threads));
            theirs.push(kornia.ms_per_batch(threads));
        }
    }
    for (&threads, measured) in sizes.threads.iter().zip(&measured) {
        let [ours, unfused, theirs] = measured.each_ref().map(|m| median(m).unwrap_or(0.0));
        println!(
            "| {threads} | {ours:.2} | {unfused:.2} | {theirs:.2} | {:.2}× (goal ≥ 4×) |",
            theirs / ours
        );
    }
    kornia.finish();
}

/// Our heavy pipeline on every batch once, at `threads` intra-op threads, after one
/// untimed batch: ms per batch.
fn ours_ms_per_batch(heavy: &Pipeline, batches: &[Tensor], threads: i32) -> f64 {
    tch::set_num_threads(threads);
    let run = |seed: u64, batch: &Tensor| {
        let out = heavy.apply(batch, &mut StdRng::seed_from_u64(seed));
        drop(std::hint::black_box(out.expect("the heavy pipeline")));
    };
    run(u64::MAX, &batches[0]);
    let started = Instant::now();
    for (seed, batch) in batches.iter().enumerate() {
        run(seed as u64, batch);
    }
    started.elapsed().as_secs_f64() * 1e3 / batches.len() as f64
}

/// python/kornia_peer.py, started once and asked for one timing per line.
struct Peer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Peer {
    fn start(batches_file: &Path, sizes: &Sizes) -> Peer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/kornia_peer.py");
        let norm = Normalize::default();
        let mut child = Command::new(python_path())
            .arg(script)
            .arg(batches_file)
            .args([sizes.heavy_batches, sizes.batch_size, SIDE, SIDE].map(|n| n.to_string()))
            .args([norm.mean[0], norm.std[0]].map(|v| v.to_string()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the kornia peer starts (run scripts/setup, which installs kornia)");
        let input = child.stdin.take().expect("a stdin");
        let output = BufReader::new(child.stdout.take().expect("a stdout"));
        Peer {
            child,
            input,
            output,
        }
    }

    fn ms_per_batch(&mut self, threads: i32) -> f64 {
        writeln!(self.input, "heavy {threads}").expect("the peer reads its request");
        let mut line = String::new();
        self.output.read_line(&mut line).expect("the peer answers");
        let answer: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("the kornia peer answered {line:?}: {err}"));
        answer["ms_per_batch"].as_f64().expect("ms_per_batch")
    }

    fn finish(mut self) {
        drop(self.input);
        let status = self.child.wait().expect("the peer ends");
        assert!(status.success(), "the kornia peer failed: {status}");
    }
}

fn light_against_memory_floor(sizes: &Sizes) {
    let dataset =
        dataset::open(&DatasetSpec::default(), Some(sizes.light_samples)).expect("the dataset");
    tch::set_num_threads(1);
    let light = Pipeline::new(&PipelineSpec::Light, &Normalize::default(), 1).expect("light");
    let mut loader = Loader::new(
        dataset.clone(),
        Arc::new(light),
        light_settings(),
        CancelToken::new(),
    )
    .expect("a loader");
    let read_bytes = dataset.len() * dataset.shape().sample_bytes();
    let written_bytes = read_bytes * std::mem::size_of::<f32>();
    let mut copy = PlainCopy::new(written_bytes);
    epoch_seconds(&mut loader);
    copy.seconds();
    let (mut ours, mut bandwidth, mut stages) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..sizes.rounds {
        let (seconds, stage_times) = epoch_seconds(&mut loader);
        ours.push(seconds);
        stages.push(stage_times);
        bandwidth.push(2.0 * written_bytes as f64 / copy.seconds());
    }
    let ours = median(&ours).unwrap_or(0.0);
    let stage = |of: fn(&StageTimes) -> f64| {
        let values: Vec<f64> = stages.iter().map(of).collect();
        median(&values).unwrap_or(0.0) * 1e3
    };
    let bandwidth = median(&bandwidth).unwrap_or(0.0);
    let floor = (read_bytes + written_bytes) as f64 / bandwidth;
    println!(
        "light, {} samples, batch 256, 0 workers, 1 intra-op thread: ours {:.1} ms, memory \
         floor {:.1} ms ({:.1} MB read + {:.1} MB written at the {:.1} GB/s of a plain copy), \
         ours / floor {:.2}× (goal ≤ 1.5×; medians of {} interleaved rounds)",
        sizes.light_samples,
        ours * 1e3,
        floor * 1e3,
        read_bytes as f64 / 1e6,
        written_bytes as f64 / 1e6,
        bandwidth / 1e9,
        ours / floor,
        sizes.rounds
    );
    println!(
        "light epoch by stage (ms): read {:.1}, allocate {:.1}, transform {:.1}, the rest \
         (sampler, labels, hand-over) {:.1}",
        stage(|s| s.fetch_s + s.read_s),
        stage(|s| s.collate_s),
        stage(|s| s.transform_s),
        ours * 1e3 - stage(|s| s.fetch_s + s.read_s + s.collate_s + s.transform_s)
    );
}

fn light_settings() -> LoaderSettings {
    LoaderSettings {
        batch_size: 256,
        num_workers: 0,
        shuffle: true,
        seed: 0,
        drop_last: false,
        worker_timeout: Duration::from_secs(60),
        shard: Shard::WHOLE,
        shuffle_buffer: 0,
        ..LoaderSettings::default()
    }
}

/// Seconds for one epoch of `loader`, draining every batch, and where they went.
fn epoch_seconds(loader: &mut Loader) -> (f64, StageTimes) {
    let started = Instant::now();
    let mut stages = StageTimes::default();
    for batch in loader.epoch().expect("an epoch") {
        let batch = batch.expect("a batch");
        stages.add(&batch.stages);
        drop(std::hint::black_box(batch));
    }
    (started.elapsed().as_secs_f64(), stages)
}

/// A plain copy of `bytes` bytes between two buffers that already hold their pages, in
/// pieces the size of one float32 batch of 256: what the memory moves at, unhindered.
struct PlainCopy {
    from: Vec<u8>,
    to: Vec<u8>,
}

impl PlainCopy {
    fn new(bytes: usize) -> PlainCopy {
        PlainCopy {
            from: vec![1; bytes],
            to: vec![2; bytes],
        }
    }

    fn seconds(&mut self) -> f64 {
        let piece = 256 * SIDE * SIDE * std::mem::size_of::<f32>();
        let started = Instant::now();
        for (to, from) in self.to.chunks_mut(piece).zip(self.from.chunks(piece)) {
            to.copy_from_slice(from);
        }
        std::hint::black_box(&self.to);
        started.elapsed().as_secs_f64()
    }
}
