//! Decode-bound image folders: our `image_folder` dataset against torchvision's
//! `ImageFolder` + PIL (Resize, ToTensor, Normalize) in PyTorch's DataLoader, and against
//! the per-image decode floor.
//!
//! Two generated JPEG folders (10 classes each): "small", 10,000 images of 160×120 read
//! at 64×64, and "photos", 1,000 images of 400–560 × 300–420 pixels read at 128×128. On
//! each, batches of 256 with the light pipeline (normalize) at num_workers 0 and 2 (our
//! thread workers, PyTorch's worker processes, both persistent), and a decode-only loop
//! over the same files on 1 and 2 threads with the fastest decoder we have (zune-jpeg,
//! full size: faster here than jpeg-decoder's reduced-scale decode). The three run
//! interleaved, 3 rounds, and the medians of the second epochs are compared. Then the
//! JPEG codings (only that: `-- jpeg`): 300 of the photos coded baseline, progressive,
//! arithmetic and lossless, each read by our dataset on one thread (zune-jpeg for the
//! first two, libjpeg-turbo for the JPEGs it refuses), against the decode floor of the
//! baseline files, interleaved, 5 rounds. Last, the time to open (list and check) a folder
//! of 100,000 tiny JPEGs (only that: `-- open`).
//! Run with `cargo bench --bench image_folder`; under `cargo test` (no `--bench`
//! argument) a few dozen images and one round go through every step, as a smoke test.

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::photo_like;
use image::RgbImage;
use image::codecs::jpeg::JpegEncoder;
use loaderbench_engine::dataset::{DatasetKind, DatasetSpec};
use loaderbench_engine::preset::{Preset, Runtime};
use loaderbench_measure::results::RunResult;
use loaderbench_measure::stats::median;
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

/// One generated folder and the size it is read at.
struct Variant {
    name: &'static str,
    images: usize,
    /// Each image's width and height for image number `i`.
    size: fn(usize) -> (u32, u32),
    target: usize,
}

const WORKERS: [usize; 2] = [0, 2];
const CLASSES: usize = 10;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (scale, rounds) = if full { (1, 3) } else { (100, 1) };
    // `cargo bench --bench image_folder -- open`: the time to open a folder only.
    if std::env::args().any(|a| a == "open") {
        print_open_time(100_000 / scale);
        return;
    }
    let jpeg_rounds = if full { 5 } else { 1 };
    if std::env::args().any(|a| a == "jpeg") {
        print_jpeg_codings(300 / scale.min(50), jpeg_rounds);
        return;
    }
    let variants = [
        Variant {
            name: "small",
            images: 10_000 / scale,
            size: |_| (160, 120),
            target: 64,
        },
        Variant {
            name: "photos",
            images: 1_000 / scale.min(25),
            size: |i| (400 + (i * 37 % 161) as u32, 300 + (i * 53 % 121) as u32),
            target: 128,
        },
    ];
    let dir = tempfile::tempdir().expect("a temporary directory");
    println!(
        "| images | nw | torchvision s | ours s | torchvision / ours | decode floor s | ours / floor |"
    );
    println!("|---|---|---|---|---|---|---|");
    for variant in &variants {
        let root = dir.path().join(variant.name);
        let files = write_folder(&root, variant);
        compare(variant, &root, &files, rounds);
    }
    print_jpeg_codings(300 / scale.min(50), jpeg_rounds);
    print_open_time(100_000 / scale);
}

/// Writes `variant`'s images as JPEGs (quality 90) into `CLASSES` class folders.
fn write_folder(root: &Path, variant: &Variant) -> Vec<PathBuf> {
    common::write_jpeg_folder(root, variant.images, CLASSES, variant.size)
}

/// Times and prints one variant: per round, ours and torchvision's (one run, configs
/// interleaved) then the decode floor at each worker count.
fn compare(variant: &Variant, root: &Path, files: &[PathBuf], rounds: usize) {
    let mut ours = vec![Vec::new(); WORKERS.len()];
    let mut torchvision = vec![Vec::new(); WORKERS.len()];
    let mut floor = vec![Vec::new(); WORKERS.len()];
    let mut reads = Vec::new();
    for _ in 0..rounds {
        let result = common::run(preset(root, variant.target), "image-folder");
        for (slot, &workers) in WORKERS.iter().enumerate() {
            ours[slot].push(epoch_s(&result, Runtime::Loaderbench, workers));
            torchvision[slot].push(epoch_s(&result, Runtime::Pytorch, workers));
            floor[slot].push(decode_floor_s(files, workers.max(1)));
        }
        reads.push(read_loop_s(root, variant.target));
    }
    let med = |values: &[f64]| median(values).unwrap_or(f64::NAN);
    println!(
        "({} {}: our dataset's reads alone, one thread, no loader: {:.3} s)",
        variant.images,
        variant.name,
        med(&reads)
    );
    for (slot, workers) in WORKERS.iter().enumerate() {
        let (ours, torchvision, floor) =
            (med(&ours[slot]), med(&torchvision[slot]), med(&floor[slot]));
        println!(
            "| {} {} at {t}×{t} | {workers} | {torchvision:.3} | {ours:.3} | {:.2}× | {floor:.3} | {:.2}× |",
            variant.images,
            variant.name,
            torchvision / ours,
            ours / floor,
            t = variant.target,
        );
    }
}

/// Both runtimes at both worker counts on the folder at `root`, read at `target` square.
fn preset(root: &Path, target: usize) -> Preset {
    let mut preset = Preset {
        name: "image-folder-bench".to_owned(),
        epochs: 2,
        batch_size: vec![256],
        dataset: spec(root, target),
        ..Preset::default()
    };
    for (key, value) in [
        ("pipeline", "light"),
        ("num_workers", "0,2"),
        ("persistent_workers", "true"),
        ("runtime", "loaderbench,pytorch"),
        // Long enough to outlast the pauses other benchmarks on this machine impose.
        ("worker_timeout_s", "1200"),
    ] {
        preset.set(key, value).expect("a preset field");
    }
    preset
}

/// The folder at `root` as RGB, read at `target` square.
fn spec(root: &Path, target: usize) -> DatasetSpec {
    DatasetSpec {
        kind: DatasetKind::ImageFolder,
        path: Some(root.to_path_buf()),
        channels: 3,
        image_size: [target, target],
        ..DatasetSpec::default()
    }
}

/// The typical epoch (the second: the first starts the workers) of `runtime` at `workers`.
fn epoch_s(result: &RunResult, runtime: Runtime, workers: usize) -> f64 {
    let config = result
        .results
        .iter()
        .find(|r| r.config.runtime == runtime && r.config.num_workers == workers)
        .expect("the config was measured");
    let epochs: Vec<f64> = config.typical_epochs().map(|e| e.seconds).collect();
    median(&epochs).expect("a measured epoch")
}

/// Seconds for our dataset to read every sample once on one thread, without the loader
/// (decode, resize and the channels-first copy, no batching or normalizing).
fn read_loop_s(root: &Path, target: usize) -> f64 {
    let dataset = loaderbench_engine::dataset::open(&spec(root, target), None).expect("the folder");
    let mut pixels = vec![0; dataset.shape().sample_bytes()];
    let started = Instant::now();
    for index in 0..dataset.len() {
        dataset
            .read(index, &mut pixels)
            .expect("the sample is read");
    }
    started.elapsed().as_secs_f64()
}

/// Seconds to read and decode every file once (to RGB, full size) on `threads` threads,
/// each taking every `threads`-th file.
fn decode_floor_s(files: &[PathBuf], threads: usize) -> f64 {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for first in 0..threads {
            scope.spawn(move || {
                let mut pixels = Vec::new();
                for path in files.iter().skip(first).step_by(threads) {
                    let bytes = std::fs::read(path).expect("the image is read");
                    let options =
                        DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::RGB);
                    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(&bytes), options);
                    decoder.decode_headers().expect("a JPEG header");
                    let size = decoder.output_buffer_size().expect("a known size");
                    pixels.resize(size, 0);
                    decoder.decode_into(&mut pixels).expect("the image decodes");
                    std::hint::black_box(&pixels);
                }
            });
        }
    });
    started.elapsed().as_secs_f64()
}

/// Prints the time to open (list and check) a folder of `files` tiny JPEGs in 10 classes,
/// written under the system's temporary folder and deleted afterwards.
fn print_open_time(files: usize) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut bytes = Vec::new();
    JpegEncoder::new(&mut bytes)
        .encode_image(&photo_like(16, 16, 1))
        .expect("JPEG encoding");
    for class in 0..CLASSES {
        std::fs::create_dir(dir.path().join(format!("class{class}"))).expect("a class folder");
    }
    for i in 0..files {
        let path = dir.path().join(format!("class{}/{i:07}.jpg", i % CLASSES));
        std::fs::write(path, &bytes).expect("the image is written");
    }
    let started = Instant::now();
    let mut reports = 0;
    let dataset = loaderbench_engine::dataset::open_with_progress(
        &spec(dir.path(), 16),
        None,
        &mut |_| reports += 1,
        &loaderbench_engine::cancel::CancelToken::new(),
    )
    .expect("the folder opens");
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(dataset.len(), files);
    println!(
        "opening {files} files: {seconds:.2} s ({:.1} µs per file, {reports} progress reports)",
        seconds * 1e6 / files as f64
    );
}

/// How a JPEG of the `-- jpeg` comparison is coded, and which of our decoders reads it.
const CODINGS: [(&str, &str); 4] = [
    ("baseline", "zune-jpeg"),
    ("progressive", "zune-jpeg"),
    ("arithmetic", "libjpeg-turbo"),
    ("lossless", "libjpeg-turbo"),
];

/// `picture` as a JPEG coded as `coding` (quality 90 where lossy), by libjpeg-turbo.
fn encode_as(picture: &RgbImage, coding: &str) -> Vec<u8> {
    let mut compressor = turbojpeg::Compressor::new().expect("a compressor");
    compressor.set_quality(90).expect("quality 90");
    match coding {
        "progressive" => compressor.set_progressive(true),
        "arithmetic" => compressor.set_arithmetic(true),
        "lossless" => compressor.set_lossless(true),
        _ => Ok(()),
    }
    .expect("the coding is set");
    let width = picture.width() as usize;
    let image = turbojpeg::Image {
        pixels: picture.as_raw().as_slice(),
        width,
        pitch: width * 3,
        height: picture.height() as usize,
        format: turbojpeg::PixelFormat::RGB,
    };
    compressor.compress_to_vec(image).expect("JPEG encoding")
}

/// Prints, per coding, the seconds our dataset takes to read `images` photos (one
/// thread, read at 128×128) and that time over the zune-jpeg decode floor of the same
/// photos coded baseline: medians of `rounds` interleaved rounds.
fn print_jpeg_codings(images: usize, rounds: usize) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut baseline_files = Vec::new();
    for (coding, _) in CODINGS {
        let class = dir.path().join(coding).join("class0");
        std::fs::create_dir_all(&class).expect("a class folder");
        for i in 0..images {
            let (width, height) = (400 + (i * 37 % 161) as u32, 300 + (i * 53 % 121) as u32);
            let path = class.join(format!("{i:06}.jpg"));
            let bytes = encode_as(&photo_like(width, height, i as u32), coding);
            std::fs::write(&path, bytes).expect("the image is written");
            if coding == "baseline" {
                baseline_files.push(path);
            }
        }
    }
    let mut reads = vec![Vec::new(); CODINGS.len()];
    let mut floor = Vec::new();
    for _ in 0..rounds {
        floor.push(decode_floor_s(&baseline_files, 1));
        for (slot, (coding, _)) in CODINGS.iter().enumerate() {
            reads[slot].push(read_loop_s(&dir.path().join(coding), 128));
        }
    }
    let med = |values: &[f64]| median(values).unwrap_or(f64::NAN);
    let floor = med(&floor);
    println!("| {images} photos coded | read by | ours s | ours / baseline decode floor |");
    println!("|---|---|---|---|");
    for (slot, (coding, decoder)) in CODINGS.iter().enumerate() {
        let ours = med(&reads[slot]);
        println!(
            "| {coding} | {decoder} | {ours:.3} | {:.2}× |",
            ours / floor
        );
    }
    println!("(the baseline decode floor: {floor:.3} s)");
}
