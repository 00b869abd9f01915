//! The loader with real worker threads and real libtorch: every sample exactly once per
//! epoch, in order or not, workers restarted or persistent, and failures (an error, a
//! panic, a hang, a cancel) that end an epoch with a clear error instead of a hang.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use loaderbench_engine::Error;
use loaderbench_engine::Result;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{Dataset, PixelKind, SampleShape};
use loaderbench_engine::loader::{Loader, LoaderSettings};
use loaderbench_engine::transform::{Normalize, Pipeline, PipelineSpec};
use tch::Kind;

/// What a sample read does besides returning the sample.
#[derive(Clone, Copy)]
enum Trouble {
    None,
    ErrorAt(usize),
    PanicAt(usize),
    HangAt(usize),
    SlowEven(Duration),
}

/// 2×2 one-channel samples whose pixels all hold the sample index (mod 256); the label
/// is the index. Optionally in shards of `shard_len`; every read logged with the thread
/// that made it.
struct Numbered {
    len: usize,
    trouble: Trouble,
    shard_len: Option<usize>,
    reads: Mutex<Vec<(ThreadId, usize)>>,
}

impl Numbered {
    fn new(len: usize, trouble: Trouble) -> Arc<Numbered> {
        Numbered::made(len, trouble, None)
    }

    fn sharded(len: usize, shard_len: usize) -> Arc<Numbered> {
        Numbered::made(len, Trouble::None, Some(shard_len))
    }

    fn made(len: usize, trouble: Trouble, shard_len: Option<usize>) -> Arc<Numbered> {
        Arc::new(Numbered {
            len,
            trouble,
            shard_len,
            reads: Mutex::default(),
        })
    }

    /// How many reads were made so far.
    fn read_count(&self) -> usize {
        self.reads.lock().unwrap().len()
    }
}

impl Dataset for Numbered {
    fn len(&self) -> usize {
        self.len
    }

    fn shape(&self) -> SampleShape {
        SampleShape {
            channels: 1,
            height: 2,
            width: 2,
            pixel: PixelKind::U8,
        }
    }

    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        let thread = std::thread::current().id();
        self.reads.lock().unwrap().push((thread, index));
        match self.trouble {
            Trouble::ErrorAt(i) if i == index => {
                return Err(Error::file(
                    "numbered.bin",
                    format!("sample {index} is corrupt"),
                ));
            }
            Trouble::PanicAt(i) if i == index => panic!("sample {index} exploded"),
            Trouble::HangAt(i) if i == index => std::thread::sleep(Duration::from_secs(3600)),
            Trouble::SlowEven(delay) if index.is_multiple_of(2) => std::thread::sleep(delay),
            _ => {}
        }
        pixels.fill((index % 256) as u8);
        Ok(index as i64)
    }

    fn describe(&self) -> String {
        format!("numbered ({} samples)", self.len)
    }

    fn shards(&self) -> Option<Vec<std::ops::Range<usize>>> {
        let shard_len = self.shard_len?;
        let starts = (0..self.len).step_by(shard_len);
        Some(starts.map(|s| s..(s + shard_len).min(self.len)).collect())
    }
}

use crate::common;
use common::{first_error, light_loader, loader_settings as settings};

fn loader(dataset: Arc<Numbered>, settings: LoaderSettings) -> Loader {
    light_loader(dataset, 1, settings, CancelToken::new())
}

/// The labels of every batch of one epoch, in the order they came.
fn epoch_labels(loader: &mut Loader) -> Vec<Vec<i64>> {
    let mut epoch = loader.epoch().unwrap();
    let mut batches = Vec::new();
    for batch in epoch.by_ref() {
        let batch = batch.unwrap();
        assert_eq!(batch.images.kind(), Kind::Float);
        batches.push(Vec::<i64>::try_from(&batch.labels).unwrap());
    }
    batches
}

#[test]
fn every_sample_once_per_epoch_in_the_same_order_with_and_without_workers() {
    let reference = epoch_labels(&mut loader(
        Numbered::new(100, Trouble::None),
        settings(0, false),
    ));
    assert_eq!(reference.len(), 13);
    let flat: Vec<i64> = reference.concat();
    assert_eq!(flat.iter().copied().collect::<HashSet<_>>().len(), 100);
    assert_ne!(flat, (0..100).collect::<Vec<i64>>(), "shuffled");
    for workers in [1, 3] {
        let mut threaded = loader(Numbered::new(100, Trouble::None), settings(workers, false));
        assert_eq!(epoch_labels(&mut threaded), reference, "{workers} workers");
    }
}

#[test]
fn heavy_batches_are_the_same_whichever_worker_builds_them() {
    // Each batch's random parameters come from its own seed, drawn up front, so neither
    // the worker that builds it nor the threads the fused pipeline splits it over matter.
    let dataset = loaderbench_engine::dataset::open(&Default::default(), Some(100)).unwrap();
    let heavy = Pipeline::new(&PipelineSpec::Heavy, &Normalize::default(), 1).unwrap();
    let heavy = Arc::new(heavy);
    let images = |workers| {
        let mut loader = Loader::new(
            dataset.clone(),
            heavy.clone(),
            settings(workers, false),
            CancelToken::new(),
        )
        .unwrap();
        let epoch = loader.epoch().unwrap();
        epoch.map(|b| b.unwrap().images).collect::<Vec<_>>()
    };
    let reference = images(0);
    assert_eq!(reference.len(), 13);
    assert!(!reference[0].equal(&reference[1]));
    for workers in [1, 3] {
        let built = images(workers);
        assert_eq!(built.len(), reference.len());
        for (batch, want) in built.iter().zip(&reference) {
            assert!(batch.equal(want), "{workers} workers");
        }
    }
}

#[test]
fn normalized_pixels_match_the_light_pipeline() {
    let mut loader = loader(Numbered::new(4, Trouble::None), settings(2, false));
    let mut epoch = loader.epoch().unwrap();
    let batch = epoch.next().unwrap().unwrap();
    let labels = Vec::<i64>::try_from(&batch.labels).unwrap();
    let first = batch.images.get(0).mean(Kind::Float).double_value(&[]);
    let expected = (labels[0] as f64 / 255.0 - 0.2860) / 0.3530;
    assert!((first - expected).abs() < 1e-5, "{first} vs {expected}");
}

#[test]
fn out_of_order_delivery_still_yields_every_batch() {
    let dataset = Numbered::new(64, Trouble::SlowEven(Duration::from_millis(2)));
    let mut settings = settings(3, false);
    settings.in_order = false;
    settings.shuffle = false;
    let batches = epoch_labels(&mut loader(dataset, settings));
    let mut flat = batches.concat();
    flat.sort_unstable();
    assert_eq!(flat, (0..64).collect::<Vec<i64>>());
}

#[test]
fn workers_restart_every_epoch_unless_persistent() {
    for (persistent, expected_startups) in [(false, [2, 2, 2]), (true, [2, 0, 0])] {
        let mut loader = loader(Numbered::new(40, Trouble::None), settings(2, persistent));
        for expected in expected_startups {
            let mut epoch = loader.epoch().unwrap();
            let mut startups = Vec::new();
            while let Some(batch) = epoch.next() {
                batch.unwrap();
                startups.extend(epoch.take_worker_startups());
            }
            assert_eq!(startups.len(), expected, "persistent={persistent}");
            assert!(startups.iter().all(|s| s.seconds < 5.0));
        }
    }
}

#[test]
fn drop_last_and_batch_sizes() {
    let mut settings = settings(2, false);
    settings.drop_last = true;
    let batches = epoch_labels(&mut loader(Numbered::new(20, Trouble::None), settings));
    assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), vec![8, 8]);
}

#[test]
fn a_read_error_in_a_worker_names_the_file_and_the_worker() {
    for workers in [0, 2] {
        let mut loader = loader(
            Numbered::new(50, Trouble::ErrorAt(17)),
            settings(workers, false),
        );
        let error = first_error(&mut loader).to_string();
        assert!(
            error.contains("numbered.bin") && error.contains("corrupt"),
            "{error}"
        );
    }
}

#[test]
fn a_panicking_worker_becomes_an_error() {
    let mut loader = loader(Numbered::new(50, Trouble::PanicAt(3)), settings(2, false));
    let error = first_error(&mut loader).to_string();
    assert!(
        error.contains("crashed") && error.contains("exploded"),
        "{error}"
    );
    assert!(error.contains("loader-worker-"), "{error}");
}

#[test]
fn a_hung_worker_times_out() {
    let dataset = Numbered::new(50, Trouble::HangAt(0));
    let mut settings = settings(1, false);
    settings.worker_timeout = Duration::from_millis(300);
    settings.shuffle = false;
    let mut loader = loader(dataset, settings);
    let started = Instant::now();
    let mut epoch = loader.epoch().unwrap();
    let error = match epoch.next() {
        Some(Err(error)) => error.to_string(),
        _ => panic!("expected an error"),
    };
    assert!(
        error.contains("loader-worker-0") && error.contains("hung"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // The hung thread cannot be joined; the test ends without waiting for it.
    std::mem::forget(epoch);
    std::mem::forget(loader);
}

#[test]
fn cancelling_stops_the_epoch() {
    let dataset = Numbered::new(10_000, Trouble::SlowEven(Duration::from_millis(1)));
    let cancel = CancelToken::new();
    let mut loader = light_loader(dataset.clone(), 1, settings(2, false), cancel.clone());
    let mut epoch = loader.epoch().unwrap();
    epoch.next().unwrap().unwrap();
    cancel.cancel();
    let started = Instant::now();
    let outcome = epoch.find_map(|batch| batch.err());
    assert!(matches!(outcome, Some(Error::Cancelled)), "{outcome:?}");
    drop(epoch);
    assert!(started.elapsed() < Duration::from_secs(1));
    let reads = dataset.read_count();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(dataset.read_count(), reads, "workers still reading");
}

/// Every image of an image folder's batch, as the loader hands it over.
fn image_folder_batches(root: &std::path::Path, workers: usize) -> Vec<tch::Tensor> {
    let spec = loaderbench_engine::dataset::DatasetSpec {
        kind: loaderbench_engine::dataset::DatasetKind::ImageFolder,
        path: Some(root.to_path_buf()),
        channels: 3,
        image_size: [24, 32],
        ..Default::default()
    };
    let dataset = loaderbench_engine::dataset::open(&spec, None).unwrap();
    let mut settings = settings(workers, false);
    settings.batch_size = 5;
    let mut loader = light_loader(dataset, 3, settings, CancelToken::new());
    loader
        .epoch()
        .unwrap()
        .map(|batch| batch.unwrap().images)
        .collect()
}

#[test]
fn image_folder_batches_are_identical_whichever_worker_builds_them() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..23u32 {
        let folder = dir.path().join(format!("class{}", i % 3));
        std::fs::create_dir_all(&folder).unwrap();
        // Sizes above, below and at the sample size, so the per-thread buffers are
        // reused across different sizes.
        let (width, height) = (20 + i * 7 % 50, 15 + i * 11 % 40);
        let picture = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x * 9 + i) as u8, (y * 13) as u8, ((x ^ y) * 5) as u8])
        });
        picture
            .save_with_format(folder.join(format!("{i}.jpg")), image::ImageFormat::Jpeg)
            .unwrap();
    }
    let reference = image_folder_batches(dir.path(), 0);
    assert_eq!(reference.len(), 5);
    for workers in [2, 3] {
        let batches = image_folder_batches(dir.path(), workers);
        assert_eq!(batches.len(), reference.len());
        for (i, (a, b)) in reference.iter().zip(&batches).enumerate() {
            assert!(a.equal(b), "batch {i} differs with {workers} workers");
        }
    }
}

#[test]
fn sharded_epochs_read_every_sample_once_and_each_worker_reads_whole_shards_in_turn() {
    for workers in [0, 2, 3] {
        let dataset = Numbered::sharded(95, 10);
        let mut settings = settings(workers, true);
        settings.shuffle_buffer = 6;
        let mut loader = light_loader(dataset.clone(), 1, settings, CancelToken::new());
        let mut orders = Vec::new();
        for epoch in 0..2 {
            dataset.reads.lock().unwrap().clear();
            let mut labels = epoch_labels(&mut loader).concat();
            orders.push(labels.clone());
            labels.sort_unstable();
            assert_eq!(
                labels,
                (0..95).collect::<Vec<i64>>(),
                "{workers} workers, epoch {epoch}"
            );
            // Each reading thread reads its shards one after the other, front to back,
            // through its shuffle buffer: the p-th sample it asks for lies less than the
            // buffer (6) ahead of position p in that stream.
            let reads = dataset.reads.lock().unwrap().clone();
            let threads: HashSet<_> = reads.iter().map(|(thread, _)| *thread).collect();
            assert_eq!(threads.len(), workers.max(1), "{workers} workers");
            for thread in threads {
                let asked: Vec<usize> = reads
                    .iter()
                    .filter(|(t, _)| *t == thread)
                    .map(|(_, i)| *i)
                    .collect();
                let mut shards: Vec<usize> = Vec::new();
                for sample in &asked {
                    if !shards.contains(&(sample / 10)) {
                        shards.push(sample / 10);
                    }
                }
                let stream: Vec<usize> = shards
                    .iter()
                    .flat_map(|s| s * 10..(s * 10 + 10).min(95))
                    .collect();
                assert_eq!(stream.len(), asked.len(), "{workers} workers: whole shards");
                for (p, sample) in asked.iter().enumerate() {
                    let at = stream.iter().position(|s| s == sample).unwrap();
                    assert!(
                        at < p + 6,
                        "{workers} workers: {sample} asked {p}th, read {at}th"
                    );
                }
            }
        }
        assert_ne!(orders[0], orders[1], "a fresh order every epoch");
    }
}
