//! Every JPEG coding PIL reads, on both runtimes: an image folder of baseline,
//! progressive, arithmetic-coded and lossless JPEGs gives on our engine PIL's samples
//! (the PyTorch runtime's own dataset: torchvision's ImageFolder over PIL) to within 3 in
//! every value, as RGB (and as grey, where libjpeg-turbo decodes), and a run measures it
//! on both runtimes at 0 and 2
//! workers, every sample once per epoch. A 12-bit JPEG, which PIL refuses (shown here),
//! is refused on the PyTorch runtime too, before Python starts, with one line naming the
//! file or the shard's member and saying that 12-bit JPEGs are not supported. An image
//! past PIL's own pixel limit but within a raised `dataset.limits.image_pixels` is read
//! on both runtimes. The other formats torchvision's `ImageFolder` reads (BMP, PPM/PGM,
//! TIFF, WebP) give on our engine PIL's very pixels, and the PyTorch runtime's dataset,
//! reading the files our engine listed, gives the same samples in the same order with the
//! same labels where torchvision's own walk would not (a hidden folder, nested folders).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{
    DatasetKind, DatasetLimits, DatasetSpec, list_image_folder, open,
};
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::{Preset, Runtime};
use loaderbench_engine::transform::PipelineSpec;
use loaderbench_measure::pytorch::{self, DatasetRequest, Request};
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file;
use tempfile::TempDir;

use crate::common;
use crate::loader_snippet::Snippet;
use common::jpeg::{self, Coding};
use common::process::python_turn;
use common::{assert_error_line, loaderbench, path_str, stderr};

/// Images per coding, and their size (every image the same: read unresized).
const PER_CODING: u32 = 2;
const WIDTH: u32 = 20;
const HEIGHT: u32 = 14;

/// The largest difference the image-folder tests allow between our pixels and PIL's
/// (the decoders' rounding).
const TOLERANCE: u8 = 3;

/// Each sample's label and pixels (channels-first bytes).
type Samples = Vec<(i64, Vec<u8>)>;

fn spec(root: &Path, channels: usize) -> DatasetSpec {
    DatasetSpec {
        kind: DatasetKind::ImageFolder,
        path: Some(root.to_path_buf()),
        channels,
        image_size: [HEIGHT as usize, WIDTH as usize],
        ..DatasetSpec::default()
    }
}

/// The folder's samples as our engine reads them, in index order.
fn ours(root: &Path, channels: usize) -> Samples {
    let dataset = open(&spec(root, channels), None).unwrap();
    common::every_sample(&*dataset)
}

/// A preset over the folder at `root` decoding to tensors only (no random op, so pixels
/// can be compared).
fn preset(root: &Path, sets: &[(&str, &str)]) -> Preset {
    let mut preset = Preset {
        name: "every-jpeg".to_owned(),
        batch_size: vec![4],
        dataset: spec(root, 3),
        pipeline: vec![PipelineSpec::Custom {
            name: "identity".to_owned(),
            ops: Vec::new(),
        }],
        ..Preset::default()
    };
    for (key, value) in sets {
        preset.set(key, value).unwrap();
    }
    preset
}

/// Reads each request's dataset (the PyTorch runtime's own, built by its script) in
/// index order and writes every sample's label and bytes, one list per request.
const SNIPPET: &str = "import json, sys
sys.path.insert(0, sys.argv[1])
import pytorch_loader as r
out = []
for line in sys.stdin:
    dataset = r.build_dataset(json.loads(line))
    samples = (dataset[i] for i in range(len(dataset)))
    out.append([[label, (image * 255).round().to(r.torch.uint8).flatten().tolist()] for image, label in samples])
with open(sys.argv[2], 'w') as file:
    json.dump(out, file)
";

/// The PyTorch runtime's request for the image folder at `root`, as a run makes it: the
/// files our engine lists there, written to a list in `dir`.
pub(crate) fn image_folder_request(
    root: &Path,
    dir: &Path,
    channels: usize,
    image_size: [usize; 2],
) -> DatasetRequest {
    let limits = DatasetLimits::DEFAULT;
    let listed = list_image_folder(root, &limits, &mut |_| {}, &CancelToken::new()).unwrap();
    let list = dir.join(format!("images-{channels}.list"));
    pytorch::write_image_list(&listed.samples, &list).unwrap();
    DatasetRequest::ImageFolder {
        root: root.to_path_buf(),
        list,
        channels,
        image_size,
    }
}

/// The folder's samples as the PyTorch runtime's dataset gives them, as RGB and as grey.
fn pils(root: &Path) -> [Samples; 2] {
    let plan = Plan::from_preset(&preset(root, &[("runtime", "pytorch")]), None).unwrap();
    let dir = TempDir::new().unwrap();
    let requests: Vec<Request> = [3, 1]
        .into_iter()
        .map(|channels| {
            let size = [HEIGHT as usize, WIDTH as usize];
            let dataset = image_folder_request(root, dir.path(), channels, size);
            Request::new(&plan, &plan.configs[0], dataset)
        })
        .collect();
    let snippet = Snippet::start(SNIPPET, &requests, &dir.path().join("samples.json"), &[]);
    let read: Vec<Samples> =
        serde_json::from_value(snippet.result(Duration::from_secs(120))).unwrap();
    read.try_into().expect("two lists of samples")
}

#[test]
fn every_jpeg_coding_decodes_on_our_engine_to_pils_pixels() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    jpeg::folder_of_every_coding(dir.path(), PER_CODING, WIDTH, HEIGHT);
    let [pil_rgb, pil_grey] = pils(dir.path());
    for (channels, pil) in [(3, pil_rgb), (1, pil_grey)] {
        let ours = ours(dir.path(), channels);
        assert_eq!(ours.len(), Coding::ALL.len() * PER_CODING as usize);
        assert_eq!(ours.len(), pil.len());
        for (index, ((label, pixels), (pil_label, pil_pixels))) in ours.iter().zip(&pil).enumerate()
        {
            assert_eq!(label, pil_label, "sample {index}");
            let coding = Coding::ALL[*label as usize];
            // Grey from zune-jpeg is the JPEG's Y channel, which strays from PIL's luma
            // of the RGB further than this where RGB clips (6 here); libjpeg-turbo's
            // decode is converted as PIL converts.
            if channels == 1 && matches!(coding, Coding::Baseline | Coding::Progressive) {
                continue;
            }
            let most = pixels
                .iter()
                .zip(pil_pixels)
                .map(|(a, b)| a.abs_diff(*b))
                .max()
                .unwrap();
            assert!(
                most <= TOLERANCE,
                "{} sample {index}, {channels} channels: {most} from PIL's",
                coding.name()
            );
        }
    }
}

/// The image folder's other formats and its layout, against torchvision's: a folder
/// holding every other format torchvision's `ImageFolder` reads (BMP, PPM, PGM, TIFF,
/// WebP, each lossless, and PNGs of 16-bit grey and colour) gives on our engine PIL's
/// very pixels, and the PyTorch runtime's
/// dataset gives the same samples in the same order with the same labels, where
/// torchvision's own walk would differ: a hidden folder (`.ipynb_checkpoints`, holding an
/// image) is no class, and a class's nested folder comes in our order.
#[test]
fn every_other_format_decodes_to_pils_pixels_and_both_runtimes_list_the_same_samples() {
    use image::codecs::pnm::{PnmEncoder, PnmSubtype, SampleEncoding};
    use image::{ImageBuffer, ImageFormat, Luma, Rgb};
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let root = dir.path();
    for folder in ["formats/nested", ".ipynb_checkpoints", "z/b"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    let files = [
        ("formats/a.bmp", ImageFormat::Bmp),
        ("formats/b.ppm", ImageFormat::Pnm),
        ("formats/c.TIF", ImageFormat::Tiff),
        ("formats/d.webp", ImageFormat::WebP),
        ("formats/nested/e.tiff", ImageFormat::Tiff),
        ("formats/nested/f.png", ImageFormat::Png),
        (".ipynb_checkpoints/g.png", ImageFormat::Png),
        // torchvision lists a class's own files before its folders' (x before b/y).
        ("z/x.png", ImageFormat::Png),
        ("z/b/y.webp", ImageFormat::WebP),
    ];
    // PPM and PGM as files have them (binary P6 and P5; the image crate writes PAM by
    // default, which PIL does not read).
    let netpbm = |image: image::DynamicImage, subtype, path: &Path| {
        let mut bytes = Vec::new();
        let encoder = PnmEncoder::new(&mut bytes).with_subtype(subtype);
        image.write_with_encoder(encoder).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    for (n, (name, format)) in files.iter().enumerate() {
        let picture = jpeg::picture(n as u32, WIDTH, HEIGHT);
        let path = root.join(name);
        if *format == ImageFormat::Pnm {
            let subtype = PnmSubtype::Pixmap(SampleEncoding::Binary);
            netpbm(picture.into(), subtype, &path);
        } else {
            picture.save_with_format(path, *format).unwrap();
        }
    }
    let grey = image::DynamicImage::ImageRgb8(jpeg::picture(9, WIDTH, HEIGHT)).into_luma8();
    let subtype = PnmSubtype::Graymap(SampleEncoding::Binary);
    netpbm(grey.into(), subtype, &root.join("formats/h.pgm"));
    // PNGs of 16-bit samples, whose every byte matters: PIL clips grey ones at 255 and
    // keeps the high byte of the others.
    let sixteen_bit = |n: u32| -> Vec<u16> {
        let picture = jpeg::picture(n, WIDTH, HEIGHT).into_raw();
        let spread = |(i, &v): (usize, &u8)| u16::from(v) * 3 + (i % 7) as u16 * 40;
        picture.iter().enumerate().map(spread).collect()
    };
    let grey_values: Vec<u16> = sixteen_bit(10).into_iter().step_by(3).collect();
    ImageBuffer::<Luma<u16>, _>::from_raw(WIDTH, HEIGHT, grey_values)
        .unwrap()
        .save(root.join("formats/i.png"))
        .unwrap();
    let rgb_values: Vec<u16> = sixteen_bit(11).iter().map(|v| v.wrapping_mul(85)).collect();
    ImageBuffer::<Rgb<u16>, _>::from_raw(WIDTH, HEIGHT, rgb_values)
        .unwrap()
        .save(root.join("formats/j.png"))
        .unwrap();
    let [pil_rgb, pil_grey] = pils(root);
    let labels = |samples: &Samples| samples.iter().map(|(label, _)| *label).collect::<Vec<_>>();
    for (channels, pil) in [(3, pil_rgb), (1, pil_grey)] {
        let ours = ours(root, channels);
        assert_eq!(
            labels(&ours),
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
            "every image but the hidden folder's"
        );
        assert_eq!(
            labels(&pil),
            labels(&ours),
            "{channels} channels: PIL's labels"
        );
        for (index, ((_, pixels), (_, pil_pixels))) in ours.iter().zip(&pil).enumerate() {
            assert!(
                pixels == pil_pixels,
                "{channels} channels, sample {index}: not PIL's pixels"
            );
        }
    }
    let mut pixels = vec![0u8; 3 * (WIDTH * HEIGHT) as usize];
    let dataset = open(&spec(root, 3), None).unwrap();
    dataset.read(9, &mut pixels).unwrap();
    let z_b_y = jpeg::picture(8, WIDTH, HEIGHT);
    assert_eq!(
        pixels[..(WIDTH * HEIGHT) as usize],
        z_b_y.pixels().map(|p| p[0]).collect::<Vec<_>>()[..],
        "z/b/y.webp before z/x.png"
    );
}

/// `loaderbench run` on the folder at `folder` with `sets`, its preset and outputs in
/// `dir`; the results, once the run has succeeded.
fn run_folder(dir: &TempDir, folder: &Path, sets: &[(&str, &str)]) -> RunResult {
    let file = dir.path().join("folder.ron");
    preset(folder, sets).save(&file).unwrap();
    let saved = common::runs::run_saved(dir.path(), path_str(&file), &[]);
    results_file::read(&saved.json).unwrap()
}

#[test]
fn a_folder_of_every_jpeg_coding_runs_on_both_runtimes_every_sample_once_per_epoch() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("folder");
    jpeg::folder_of_every_coding(&folder, PER_CODING, WIDTH, HEIGHT);
    let sets = [
        ("runtime", "loaderbench,pytorch"),
        ("num_workers", "0,2"),
        ("epochs", "2"),
        ("pin_memory", "false"),
    ];
    let run = run_folder(&dir, &folder, &sets);
    let measured: Vec<_> = run
        .results
        .iter()
        .map(|r| (r.config.runtime, r.config.num_workers))
        .collect();
    for runtime in [Runtime::Loaderbench, Runtime::Pytorch] {
        for workers in [0, 2] {
            assert!(measured.contains(&(runtime, workers)), "{measured:?}");
        }
    }
    for result in &run.results {
        for epoch in &result.epochs {
            assert_eq!(
                epoch.samples,
                Coding::ALL.len() * PER_CODING as usize,
                "{:?} nw={} epoch {}",
                result.config.runtime,
                result.config.num_workers,
                epoch.epoch
            );
        }
    }
}

/// What PIL says of the JPEG at `path`: its plugin's reason for refusing it, or `read`.
fn pil_says(path: &Path) -> String {
    let snippet = "import sys
from PIL import JpegImagePlugin
try:
    JpegImagePlugin.JpegImageFile(sys.argv[1]).load()
    print('read')
except SyntaxError as err:
    print(err)
";
    let output = Command::new(pytorch::python_path())
        .args(["-c", snippet])
        .arg(path)
        .output()
        .expect("python runs");
    assert!(output.status.success(), "{}", stderr(&output));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A tar shard at `path` of a baseline JPEG sample and a 12-bit one, `0001.jpg`.
fn shard_with_12_bit(path: &Path, twelve_bit: &[u8]) {
    let baseline = jpeg::encode(&jpeg::picture(0, WIDTH, HEIGHT), Coding::Baseline);
    let mut tar = tar::Builder::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in [
        ("0000.jpg", baseline.as_slice()),
        ("0000.cls", b"0".as_slice()),
        ("0001.jpg", twelve_bit),
        ("0001.cls", b"1".as_slice()),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, bytes).unwrap();
    }
    tar.finish().unwrap();
}

#[test]
fn a_12_bit_jpeg_pil_refuses_is_refused_on_the_pytorch_runtime_naming_it() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("folder");
    jpeg::folder_of_every_coding(&folder, 1, WIDTH, HEIGHT);
    let twelve_bit = jpeg::twelve_bit(&jpeg::picture(1, WIDTH, HEIGHT));
    let file = folder.join("baseline/monkey12.jpg");
    std::fs::write(&file, &twelve_bit).unwrap();
    assert_eq!(pil_says(&file), "cannot handle 12-bit layers");
    assert_eq!(pil_says(&folder.join("baseline/0.jpg")), "read");
    let shard = dir.path().join("with-12-bit.tar");
    shard_with_12_bit(&shard, &twelve_bit);
    for (kind, path, named) in [
        ("image_folder", &folder, vec![path_str(&file)]),
        ("shards", &shard, vec![path_str(&shard), "0001.jpg"]),
    ] {
        let journal = dir.path().join(format!("{kind}.jsonl"));
        let kind = format!("dataset.kind={kind}");
        let dataset = format!("dataset.path={}", path_str(path));
        let mut args = vec!["run", "seed-light", "-q", "--journal", path_str(&journal)];
        for set in [kind.as_str(), &dataset, "runtime=pytorch", "epochs=1"] {
            args.extend(["--set", set]);
        }
        let mut fragments = named;
        fragments.push("a 12-bit JPEG: not supported");
        assert_error_line(&loaderbench(&args), 2, &fragments);
    }
}

#[test]
fn an_image_past_pil_s_own_limit_within_the_dataset_s_is_read_on_both_runtimes() {
    let _turn = python_turn();
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("folder");
    let class = folder.join("big");
    std::fs::create_dir_all(&class).unwrap();
    // 180.9 million pixels: past twice PIL's default MAX_IMAGE_PIXELS (89.5 million),
    // where PIL refuses an image as a decompression bomb. A grey PNG of one value is small.
    let (width, height) = (13_450, 13_450);
    let big = image::GrayImage::from_pixel(width, height, image::Luma([90]));
    big.save(class.join("big.png")).unwrap();
    // Read as it is, grey: converting 180.9 million pixels to RGB only costs time.
    let sets = [
        ("runtime", "loaderbench,pytorch"),
        ("dataset.channels", "1"),
        ("dataset.limits.image_pixels", "200000000"),
        ("epochs", "1"),
        ("pin_memory", "false"),
    ];
    let run = run_folder(&dir, &folder, &sets);
    let runtimes: Vec<Runtime> = run.results.iter().map(|r| r.config.runtime).collect();
    assert_eq!(runtimes, [Runtime::Loaderbench, Runtime::Pytorch]);
    for result in &run.results {
        assert_eq!(result.epochs[0].samples, 1, "{:?}", result.config.runtime);
    }
}
