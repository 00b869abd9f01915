//! Building one batch: read its samples straight into a fresh batch tensor (so there is
//! no separate copy to collate), then run the pipeline. The same code runs in a worker
//! and, with `num_workers = 0`, in the consuming thread, and it times each stage.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;
use tch::{Device, Kind, Tensor};

use crate::dataset::{Dataset, PixelKind};
use crate::error::{Error, Result};
use crate::transform::Pipeline;

/// A transformed batch and the time each stage took to make it.
pub struct BuiltBatch {
    pub images: Tensor,
    pub labels: Tensor,
    pub collate: Duration,
    /// Getting the samples' bytes from storage ([`Dataset::read_timed`]'s fetch).
    pub fetch: Duration,
    /// The part of `fetch` spent decompressing ([`Dataset::read_timed`]'s decompress).
    pub decompress: Duration,
    /// The rest of reading the samples: decoding them into the batch.
    pub read: Duration,
    pub transform: Duration,
    /// Handing the batch from a worker process to the loader (zero within a process).
    pub transfer: Duration,
}

/// Reads the samples at `indices` and transforms them with a generator seeded by `seed`.
pub fn build_batch(
    dataset: &dyn Dataset,
    pipeline: &Pipeline,
    indices: &[usize],
    seed: u64,
) -> Result<BuiltBatch> {
    let started = Instant::now();
    let shape = dataset.shape();
    let kind = match shape.pixel {
        PixelKind::U8 => Kind::Uint8,
        PixelKind::F32 => Kind::Float,
    };
    let dims = [indices.len(), shape.channels, shape.height, shape.width].map(|d| d as i64);
    let raw = Tensor::f_empty(dims, (kind, Device::Cpu))?;
    let collate = started.elapsed();

    let started = Instant::now();
    let (labels, fetch, decompress) = read_into(dataset, &raw, indices, shape.sample_bytes())?;
    let labels = Tensor::f_from_slice(&labels)?;
    let read = started.elapsed().saturating_sub(fetch);

    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    let images = pipeline.apply(&raw, &mut rng)?;
    let transform = started.elapsed();
    Ok(BuiltBatch {
        images,
        labels,
        collate,
        fetch,
        decompress,
        read,
        transform,
        transfer: Duration::ZERO,
    })
}

/// Copies each sample into its slot of `batch`; returns the labels, the time spent
/// fetching and the part of it spent decompressing.
fn read_into(
    dataset: &dyn Dataset,
    batch: &Tensor,
    indices: &[usize],
    sample_bytes: usize,
) -> Result<(Vec<i64>, Duration, Duration)> {
    let total = indices.len() * sample_bytes;
    if batch.numel() * batch.kind().elt_size_in_bytes() != total || !batch.is_contiguous() {
        return Err(Error::run(
            "batch tensor does not match the dataset's sample shape",
        ));
    }
    // SAFETY: `batch` was just allocated by `build_batch` as a contiguous CPU tensor of
    // exactly `total` bytes (checked above); no other handle to it exists yet, so this is
    // the only reference to its memory while the slice lives.
    let bytes = unsafe { std::slice::from_raw_parts_mut(batch.data_ptr() as *mut u8, total) };
    let started = Instant::now();
    let mut labels = Vec::with_capacity(indices.len());
    let mut fetch = Duration::ZERO;
    let mut decompress = Duration::ZERO;
    for (&index, slot) in indices.iter().zip(bytes.chunks_exact_mut(sample_bytes)) {
        let read = dataset.read_timed(index, slot)?;
        labels.push(read.label);
        fetch += read.fetch;
        decompress += read.decompress;
    }
    if dataset.read_is_fetch() {
        fetch = started.elapsed();
    }
    Ok((labels, fetch, decompress))
}
