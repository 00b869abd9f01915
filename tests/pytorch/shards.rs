//! Tar shards on the PyTorch runtime, read by the real webdataset package: a sharded copy
//! of a small image folder gives every sample of the folder exactly once per epoch (the
//! same labels and the same pixels, after the same decode and transforms) at 0, 2 and 3
//! workers, split between 2 ranks, and over HTTP from a real nginx; so do gzip-compressed
//! shards (`.tar.gz` from `loaderbench shards --compress gz`, `.tgz` made by hand) at 0
//! and 2 workers, on disk and over HTTP. Two runs with one seed read the samples in the
//! same order, a new one each epoch. A shard the server does not have (404), a malformed
//! member and a zstd shard each end the run with one line naming the shard, as bad
//! input. Python tests take turns; each leaves no process behind. The folder is read once
//! per test binary, and the configs a test compares read in one Python process.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use image::codecs::jpeg::JpegEncoder;
use image::{Rgb, RgbImage};
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_engine::transform::PipelineSpec;
use loaderbench_measure::pytorch::{DatasetRequest, PytorchScript, Request};
use tempfile::TempDir;

use crate::loader_snippet::Snippet;
use common::nginx::Nginx;
use common::process::{marked, python_turn, running};

const CLASSES: usize = 3;
const PER_CLASS: usize = 9;
const SHARDS: usize = 4;
/// The environment mark of every process a test's snippet starts.
const MARK: &str = "LOADERBENCH_SHARDS_PYTORCH_TEST";

/// A folder of `CLASSES` × `PER_CLASS` small images (JPEG, every fourth a PNG, sizes
/// varying) and the same samples as `SHARDS` tar shards in WebDataset's layout, classes
/// mixed across shards.
struct Data {
    dir: TempDir,
}

impl Data {
    fn new() -> Data {
        let dir = TempDir::new().unwrap();
        let mut samples = Vec::new();
        for class in 0..CLASSES {
            let folder = dir.path().join(format!("folder/class{class}"));
            std::fs::create_dir_all(&folder).unwrap();
            for i in 0..PER_CLASS {
                let n = class * PER_CLASS + i;
                let extension = if n.is_multiple_of(4) { "png" } else { "jpg" };
                let path = folder.join(format!("{i:03}.{extension}"));
                std::fs::write(&path, encoded(n, extension)).unwrap();
                samples.push((path, class));
            }
        }
        std::fs::create_dir(dir.path().join("shards")).unwrap();
        // A fixed mixing order: sample n goes to shard n % SHARDS, in a shuffled order.
        let order: Vec<usize> = (0..samples.len()).map(|n| n * 7 % samples.len()).collect();
        for shard in 0..SHARDS {
            let file = std::fs::File::create(dir.path().join(shard_name(shard))).unwrap();
            let mut tar = tar::Builder::new(file);
            for (n, &index) in order.iter().enumerate().skip(shard).step_by(SHARDS) {
                let (path, class) = &samples[index];
                let extension = path.extension().unwrap().to_str().unwrap();
                append(
                    &mut tar,
                    &format!("{n:06}.{extension}"),
                    &std::fs::read(path).unwrap(),
                );
                append(
                    &mut tar,
                    &format!("{n:06}.cls"),
                    class.to_string().as_bytes(),
                );
            }
            tar.finish().unwrap();
        }
        Data { dir }
    }

    fn folder(&self) -> PathBuf {
        self.dir.path().join("folder")
    }

    fn shards(&self) -> Vec<String> {
        (0..SHARDS)
            .map(|shard| {
                self.dir
                    .path()
                    .join(shard_name(shard))
                    .display()
                    .to_string()
            })
            .collect()
    }
}

/// A fresh [`Data`] and a real nginx serving its folder; `None` (the test is skipped)
/// where nginx is not installed.
fn served() -> Option<(Data, Nginx)> {
    let data = Data::new();
    let server = Nginx::serve(data.dir.path(), None)?;
    Some((data, server))
}

fn shard_name(shard: usize) -> String {
    format!("shards/shard-{shard:06}.tar")
}

fn append(tar: &mut tar::Builder<std::fs::File>, name: &str, bytes: &[u8]) {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, name, bytes).unwrap();
}

/// Image `n`: a gradient of its own colours, 20–27 × 14–19 pixels.
fn encoded(n: usize, extension: &str) -> Vec<u8> {
    let (width, height) = (20 + (n % 8) as u32, 14 + (n % 6) as u32);
    let picture = RgbImage::from_fn(width, height, |x, y| {
        Rgb([(n * 9) as u8, (x * 11) as u8, (y * 13 + n as u32) as u8])
    });
    let mut bytes = Vec::new();
    if extension == "png" {
        picture
            .write_to(
                &mut std::io::Cursor::new(&mut bytes),
                image::ImageFormat::Png,
            )
            .unwrap();
    } else {
        JpegEncoder::new_with_quality(&mut bytes, 90)
            .encode_image(&picture)
            .unwrap();
    }
    bytes
}

/// A shuffling pytorch preset over nothing in particular (each test sets the dataset in
/// its request), decoding to tensors only (no random op, so pixels can be compared).
fn plan(sets: &[(&str, &str)]) -> Plan {
    let mut preset = Preset {
        name: "shards-pytorch".to_owned(),
        batch_size: vec![4],
        pipeline: vec![PipelineSpec::Custom {
            name: "identity".to_owned(),
            ops: Vec::new(),
        }],
        ..Preset::default()
    };
    preset.set("runtime", "pytorch").unwrap();
    for (key, value) in sets {
        preset.set(key, value).unwrap();
    }
    Plan::from_preset(&preset, None).unwrap()
}

fn image_folder(data: &Data) -> DatasetRequest {
    crate::jpeg::image_folder_request(&data.folder(), data.dir.path(), 3, [8, 8])
}

fn shards(locations: Vec<String>) -> DatasetRequest {
    DatasetRequest::Shards {
        shards: locations,
        channels: 3,
        image_size: [8, 8],
        shuffle_buffer: 5,
        samples_per_shard: None,
    }
}

/// Each (label, pixel checksum) a sample has, with how often an epoch delivered it.
type Samples = BTreeMap<(i64, String), usize>;

/// An epoch's samples (label, pixel checksum) in the order it delivered them.
type Ordered = Vec<(i64, String)>;

/// The script's own dataset and DataLoader for each request (a JSON line each, one after
/// another in one Python process: `import torch` once), iterated for two epochs: each
/// request's epochs, each epoch's samples and batch count.
const SNIPPET: &str = "import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import pytorch_loader as r
out = []
for line in sys.stdin:
    request = json.loads(line)
    r.join_process_group(request)
    loader = r.build_loader(request, r.build_dataset(request))
    epochs = []
    for epoch in range(2):
        r.before_epoch(request, loader, epoch + 1)
        samples, batches = [], 0
        for images, labels in loader:
            batches += 1
            samples += [[int(l), hashlib.sha1(i.numpy().tobytes()).hexdigest()] for i, l in zip(images, labels)]
        epochs.append({'samples': samples, 'batches': batches})
    out.append(epochs)
    del loader
with open(sys.argv[2], 'w') as file:
    json.dump(out, file)
";

/// Starts the snippet on `requests`, marked; its result file is `out`.
fn start_snippet(requests: &[Request], out: &Path) -> Snippet {
    Snippet::start(SNIPPET, requests, out, &[(MARK, "1")])
}

/// Each request's epochs as a finished snippet wrote them: each epoch's samples in order
/// and batch count.
fn snippet_ordered(snippet: Snippet) -> Vec<Vec<(Ordered, usize)>> {
    let read = snippet.result(Duration::from_secs(180));
    let read: Vec<Vec<serde_json::Value>> = serde_json::from_value(read).unwrap();
    let epoch = |epoch: &serde_json::Value| -> (Ordered, usize) {
        let samples = epoch["samples"].as_array().unwrap().iter().map(|sample| {
            (
                sample[0].as_i64().unwrap(),
                sample[1].as_str().unwrap().to_owned(),
            )
        });
        (
            samples.collect(),
            epoch["batches"].as_u64().unwrap() as usize,
        )
    };
    read.iter()
        .map(|epochs| epochs.iter().map(epoch).collect())
        .collect()
}

/// Each request's epochs as a finished snippet wrote them: each epoch's samples and
/// batch count.
fn snippet_epochs(snippet: Snippet) -> Vec<Vec<(Samples, usize)>> {
    let counted = |(ordered, batches): (Ordered, usize)| {
        let mut samples = Samples::new();
        for key in ordered {
            *samples.entry(key).or_default() += 1;
        }
        (samples, batches)
    };
    let requests = snippet_ordered(snippet).into_iter();
    requests
        .map(|epochs| epochs.into_iter().map(counted).collect())
        .collect()
}

/// A request for `dataset` with the plan's first config.
fn request(plan: &Plan, dataset: DatasetRequest) -> Request {
    Request::new(plan, &plan.configs[0], dataset)
}

/// Two epochs of `dataset` read through the script with the plan's first config, each
/// epoch's samples in the order they came.
fn read_ordered(plan: &Plan, dataset: DatasetRequest) -> Vec<(Ordered, usize)> {
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("epochs.json");
    snippet_ordered(start_snippet(&[request(plan, dataset)], &out)).remove(0)
}

/// Two epochs of each request's dataset read through the script, in one Python process.
fn read_epochs(requests: &[Request]) -> Vec<Vec<(Samples, usize)>> {
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("epochs.json");
    snippet_epochs(start_snippet(requests, &out))
}

/// The folder's samples, read by torchvision's ImageFolder through the same script,
/// once per test binary: every [`Data`] holds the same images (made the same way).
fn folder_samples() -> &'static Samples {
    static SAMPLES: OnceLock<Samples> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let data = Data::new();
        let mut requests = read_epochs(&[request(&plan(&[]), image_folder(&data))]);
        let (samples, _) = requests.remove(0).remove(0);
        assert_eq!(samples.values().sum::<usize>(), CLASSES * PER_CLASS);
        samples
    })
}

/// Asserts that each request's every epoch gave `want`'s samples, each as often; `what`
/// names request `index` in a failure.
fn assert_every_epoch_gives(
    read: &[Vec<(Samples, usize)>],
    want: &Samples,
    what: impl Fn(usize) -> String,
) {
    for (index, epochs) in read.iter().enumerate() {
        assert_eq!(epochs.len(), 2, "{}", what(index));
        for (epoch, (samples, _)) in epochs.iter().enumerate() {
            assert_eq!(samples, want, "{}, epoch {epoch}", what(index));
        }
    }
}

fn assert_no_python_left() {
    let left = marked(MARK, "1");
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn shards_give_every_sample_of_the_folder_once_per_epoch_at_0_2_and_3_workers() {
    let _turn = python_turn();
    let data = Data::new();
    let want = folder_samples();
    let workers: [usize; 3] = [0, 2, 3];
    let requests: Vec<Request> = workers
        .iter()
        .map(|workers| {
            let workers = workers.to_string();
            let plan = plan(&[("num_workers", &workers), ("persistent_workers", "true")]);
            request(&plan, shards(data.shards()))
        })
        .collect();
    let read = read_epochs(&requests);
    assert_every_epoch_gives(&read, want, |index| format!("nw={}", workers[index]));
    for (workers, epochs) in workers.iter().zip(&read) {
        for (_, batches) in epochs {
            // Each worker batches its own shards: the last batch of each may be partial.
            let most = (CLASSES * PER_CLASS).div_ceil(4) + (*workers).max(1) - 1;
            assert!(*batches <= most, "nw={workers}: {batches} batches");
        }
    }
    assert_no_python_left();
}

#[test]
fn two_ranks_split_the_shards_and_together_read_every_sample_once() {
    let _turn = python_turn();
    let data = Data::new();
    let want = folder_samples();
    let dir = TempDir::new().unwrap();
    let store = dir.path().join("store");
    // Spawned workers: the process group is not theirs, so the rank must reach them as
    // torchrun passes it (RANK and WORLD_SIZE).
    let plan = plan(&[
        ("ranks", "2"),
        ("num_workers", "1"),
        ("start_method", "spawn"),
    ]);
    let children: Vec<_> = (0..2)
        .map(|rank| {
            let request = request(&plan, shards(data.shards())).for_rank(rank, 2, &store);
            let out = dir.path().join(format!("rank{rank}.json"));
            start_snippet(&[request], &out)
        })
        .collect();
    let ranks: Vec<_> = children
        .into_iter()
        .map(|snippet| snippet_epochs(snippet).remove(0))
        .collect();
    assert_eq!((ranks[0].len(), ranks[1].len()), (2, 2));
    for (epoch, ((first, _), (second, _))) in ranks[0].iter().zip(&ranks[1]).enumerate() {
        assert!(!first.is_empty() && !second.is_empty(), "epoch {epoch}");
        let mut together = first.clone();
        for (sample, count) in second {
            *together.entry(sample.clone()).or_default() += count;
        }
        assert_eq!(&together, want, "epoch {epoch}");
    }
    assert_no_python_left();
}

#[test]
fn http_shards_from_nginx_give_the_same_samples() {
    let _turn = python_turn();
    let Some((_data, server)) = served() else {
        return;
    };
    let urls = (0..SHARDS).map(|shard| server.url(&shard_name(shard)));
    let plan = plan(&[("num_workers", "2")]);
    let read = read_epochs(&[request(&plan, shards(urls.collect()))]);
    assert_every_epoch_gives(&read, folder_samples(), |_| "over HTTP".to_owned());
    let pid = server.pid();
    drop(server);
    assert!(!running(pid), "nginx {pid} still runs");
    assert_no_python_left();
}

/// Checks that measuring `pattern` as a shards dataset on the PyTorch runtime fails as
/// bad input, in the one line `expected`.
fn assert_measuring_fails(pattern: &str, expected: &str) {
    let plan = plan(&[
        ("dataset.kind", "shards"),
        ("dataset.path", pattern),
        ("dataset.channels", "3"),
        ("num_workers", "2"),
    ]);
    let script = PytorchScript::prepare(&plan, None).expect("the request");
    let measured = script.measure(
        &plan,
        0,
        0,
        &CancelToken::new(),
        &mut |_| {},
        &mut || Ok(()),
    );
    let err = measured.expect_err("the run fails");
    assert!(err.is_bad_input(), "{err}");
    assert_eq!(err.to_string(), expected);
}

#[test]
fn a_shard_the_server_lacks_is_one_line_naming_its_url_as_bad_input() {
    let _turn = python_turn();
    let Some((_data, server)) = served() else {
        return;
    };
    // Shards 0..=3 exist; 4 does not.
    let pattern = server.url("shards/shard-{000000..000004}.tar");
    let missing = server.url("shards/shard-000004.tar");
    let expected = format!("{missing}: HTTP 404 Not Found (curl exit status 22)");
    assert_measuring_fails(&pattern, &expected);
    assert_no_python_left();
}

#[test]
fn a_member_with_an_unknown_extension_is_one_line_naming_shard_and_member() {
    let _turn = python_turn();
    let data = Data::new();
    let bad = data.dir.path().join("shards/shard-000004.tar");
    let mut tar = tar::Builder::new(std::fs::File::create(&bad).unwrap());
    append(&mut tar, "000100.txt", b"a caption");
    tar.finish().unwrap();
    let pattern = format!(
        "{}/shards/shard-{{000000..000004}}.tar",
        data.dir.path().display()
    );
    let expected = format!(
        "{}: member 000100.txt: unknown extension (samples are jpg, jpeg, png, ppm, bmp, pgm, tif, tiff, webp with cls or json)",
        bad.display()
    );
    assert_measuring_fails(&pattern, &expected);
}

/// The data's shards gzip-compressed by hand as `tgz/shard-N.tgz`, and the folder written
/// by `loaderbench shards --compress gz` into `gz/`: both sets' paths, in order.
fn gzip_shard_sets(data: &Data) -> (Vec<String>, Vec<String>) {
    let tgz = data.dir.path().join("tgz");
    std::fs::create_dir(&tgz).unwrap();
    let handmade = data
        .shards()
        .iter()
        .enumerate()
        .map(|(shard, plain)| {
            let mut gzip = flate2::write::GzEncoder::new(Vec::new(), Default::default());
            gzip.write_all(&std::fs::read(plain).unwrap()).unwrap();
            let path = tgz.join(format!("shard-{shard}.tgz"));
            std::fs::write(&path, gzip.finish().unwrap()).unwrap();
            path.display().to_string()
        })
        .collect();
    let written = data.dir.path().join("gz");
    let output = Command::new(env!("CARGO_BIN_EXE_loaderbench"))
        .arg("shards")
        .arg(data.folder())
        .arg(&written)
        .args(["--per-shard", "7", "--compress", "gz"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let mut from_cli: Vec<String> = std::fs::read_dir(&written)
        .unwrap()
        .map(|entry| entry.unwrap().path().display().to_string())
        .collect();
    from_cli.sort();
    assert_eq!(from_cli.len(), (CLASSES * PER_CLASS).div_ceil(7));
    assert!(from_cli.iter().all(|path| path.ends_with(".tar.gz")));
    (handmade, from_cli)
}

#[test]
fn gzip_shards_give_every_sample_of_the_folder_once_per_epoch_on_disk_and_over_http() {
    let _turn = python_turn();
    let data = Data::new();
    let (handmade, from_cli) = gzip_shard_sets(&data);
    let mut sets: Vec<(String, Vec<String>, &str)> = Vec::new();
    for (name, set) in [("by hand", &handmade), ("from the CLI", &from_cli)] {
        for workers in ["0", "2"] {
            sets.push((format!("{name}: nw={workers}"), set.clone(), workers));
        }
    }
    let server = Nginx::serve(data.dir.path(), None);
    if let Some(server) = &server {
        let urls = (0..SHARDS).map(|shard| server.url(&format!("tgz/shard-{shard}.tgz")));
        sets.push(("over HTTP".to_owned(), urls.collect(), "2"));
    }
    let requests: Vec<Request> = sets
        .iter()
        .map(|(_, set, workers)| request(&plan(&[("num_workers", workers)]), shards(set.clone())))
        .collect();
    let read = read_epochs(&requests);
    assert_every_epoch_gives(&read, folder_samples(), |index| sets[index].0.clone());
    drop(server);
    assert_no_python_left();
}

#[test]
fn two_runs_with_one_seed_read_the_shards_samples_in_one_order_a_new_one_each_epoch() {
    let _turn = python_turn();
    let data = Data::new();
    let plan = plan(&[("num_workers", "2"), ("seed", "7")]);
    let first = read_ordered(&plan, shards(data.shards()));
    let second = read_ordered(&plan, shards(data.shards()));
    assert_eq!(first.len(), 2);
    for (epoch, (a, b)) in first.iter().zip(&second).enumerate() {
        assert_eq!(a.0.len(), CLASSES * PER_CLASS);
        assert_eq!(a.0, b.0, "epoch {epoch}: the same order in both runs");
    }
    assert_ne!(first[0].0, first[1].0, "each epoch its own order");
    assert_no_python_left();
}

#[test]
fn a_zstd_shard_is_one_line_naming_it_before_python_starts() {
    let data = Data::new();
    let shard = data.dir.path().join("shards/shard-000003.tar");
    let zst = data.dir.path().join("shards/shard-000003.tar.zst");
    let status = Command::new("zstd")
        .args(["-q", "--rm"])
        .arg(&shard)
        .status()
        .expect("zstd runs");
    assert!(status.success());
    let pattern = format!("{}/shards/shard-*", data.dir.path().display());
    let plan = plan(&[
        ("dataset.kind", "shards"),
        ("dataset.path", &pattern),
        ("dataset.channels", "3"),
    ]);
    let Err(err) = PytorchScript::prepare(&plan, None) else {
        panic!("the zstd shard is read");
    };
    assert!(err.is_bad_input(), "{err}");
    let line = err.to_string();
    assert!(
        line.starts_with(&format!("{}: a zstd-compressed tar: ", zst.display())),
        "{line}"
    );
    assert!(!line.contains('\n'), "{line}");
}
