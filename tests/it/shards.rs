//! Tar shards as a user meets them, through the CLI as a process: `loaderbench shards`
//! converting a folder (read back sample for sample), runs over local and HTTP shards
//! (served by a real nginx started by the test), and each kind of bad input named in one
//! line with its exit code: 2 when found before measuring, 1 mid-run.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use image::{Rgb, RgbImage};
use loaderbench_engine::dataset::{self, DatasetKind, DatasetSpec};
use loaderbench_engine::preset::{Preset, WorkerKind};
use rand::{Rng, SeedableRng, rngs::StdRng};
use tempfile::TempDir;

use common::nginx::{self, Nginx};
use common::process::running;
use common::runs::SavedRun;
use common::{
    assert_error_line, assert_printed, every_sample, json_file, loaderbench, loaderbench_command,
    path_str, stderr, stdout, wait_with_deadline,
};

#[test]
fn nginx_serves_a_folder_and_leaves_no_process() {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::write(root.path().join("a.tar"), b"shard bytes").unwrap();
    let Some(mut server) = Nginx::serve(root.path(), Some(1 << 20)) else {
        return;
    };
    let pid = server.pid();
    let response = nginx::get(&server.url("a.tar"));
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("shard bytes"), "{response}");
    let missing = nginx::get(&server.url("missing.tar"));
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    server.stop();
    assert!(!running(pid), "nginx {pid} still runs after stop");
    drop(server);
}

/// A class folder tree: `classes` folders of `per_class` noisy images of varied sizes
/// about `side` pixels wide, PNG and JPEG (one with an upper-case `.JPG`, one `.jpeg`).
fn image_folder(classes: usize, per_class: usize, side: u32) -> TempDir {
    let dir = TempDir::new().unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    for class in 0..classes {
        let folder = dir.path().join(format!("class-{class}"));
        std::fs::create_dir(&folder).unwrap();
        for i in 0..per_class {
            let (width, height) = (side + i as u32 % 5, side - 4 + class as u32);
            let image = RgbImage::from_fn(width, height, |_, _| Rgb(rng.random()));
            let name = match i % 4 {
                0 => format!("{i}.png"),
                1 => format!("{i}.JPG"),
                2 => format!("{i}.jpeg"),
                _ => format!("{i}.jpg"),
            };
            let format = if i % 4 == 0 {
                image::ImageFormat::Png
            } else {
                image::ImageFormat::Jpeg
            };
            image.save_with_format(folder.join(name), format).unwrap();
        }
    }
    dir
}

/// `loaderbench shards FOLDER OUT --per-shard N`; returns the pattern it printed.
fn convert(folder: &Path, out: &Path, per_shard: usize) -> String {
    let per_shard = per_shard.to_string();
    let output = loaderbench(&[
        "shards",
        path_str(folder),
        path_str(out),
        "--per-shard",
        &per_shard,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = stdout(&output);
    let pattern = printed
        .split("path: \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no pattern in: {printed}"));
    pattern.to_owned()
}

fn spec(kind: DatasetKind, path: &str, channels: usize) -> DatasetSpec {
    DatasetSpec {
        kind,
        path: Some(path.into()),
        channels,
        image_size: [12, 10],
        shuffle_buffer: 8,
        ..DatasetSpec::default()
    }
}

/// A preset over `path` (a shard pattern) with `num_workers` configs, saved in `dir`.
fn shards_preset(dir: &Path, path: &str, num_workers: Vec<usize>, epochs: usize) -> PathBuf {
    let mut preset = common::runs::tiny_preset(1_000, epochs);
    preset.samples = None;
    preset.dataset = spec(DatasetKind::Shards, path, 1);
    preset.batch_size = vec![4];
    preset.num_workers = num_workers;
    let file = dir.join("shards.ron");
    preset.save(&file).unwrap();
    file
}

/// `loaderbench run PRESET -q` with its JSON and journal in the preset's folder.
fn run_preset(preset: &Path) -> Output {
    let saved = SavedRun::in_dir(preset.parent().unwrap());
    // Each run a journal of its own: one that exists is refused.
    let _ = std::fs::remove_file(&saved.journal);
    loaderbench(&saved.run_args(path_str(preset), &[]))
}

#[test]
fn a_folder_converted_to_shards_reads_back_as_the_same_samples() {
    let folder = image_folder(3, 7, 20);
    let out = TempDir::new().unwrap();
    let pattern = convert(folder.path(), out.path(), 5);
    assert!(
        pattern.ends_with("/shard-{000000..000004}.tar"),
        "{pattern}"
    );
    let shards = dataset::open(&spec(DatasetKind::Shards, &pattern, 3), None).unwrap();
    let images = dataset::open(
        &spec(DatasetKind::ImageFolder, path_str(folder.path()), 3),
        None,
    )
    .unwrap();
    assert_eq!(shards.len(), 21);
    let ranges = shards.shards().expect("a sharded dataset");
    assert_eq!(ranges.len(), 5);
    assert_eq!(ranges[0], 0..5);
    assert!(ranges.windows(2).all(|pair| pair[0].end == pair[1].start));
    assert_eq!(
        ranges.last().unwrap().end,
        21,
        "the last shard holds one sample"
    );
    assert_eq!(shards.files().len(), 5);
    let mut from_shards = every_sample(&*shards);
    let mut from_folder = every_sample(&*images);
    // Shuffled: the classes are mixed within the first shard.
    let first_labels: Vec<i64> = from_shards[..5].iter().map(|(label, _)| *label).collect();
    assert!(
        first_labels.iter().any(|&l| l != first_labels[0]),
        "{first_labels:?}"
    );
    from_shards.sort();
    from_folder.sort();
    assert!(
        from_shards == from_folder,
        "the shards hold the folder's samples"
    );
    let members = tar_members(&out.path().join("shard-000000.tar"));
    assert_eq!(members.len(), 10);
    assert_eq!(members[1], "000000.cls");
    assert!(members.iter().all(|m| !m.contains("JPG")), "{members:?}");
}

fn tar_members(path: &Path) -> Vec<String> {
    let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|entry| entry.unwrap().path().unwrap().display().to_string())
        .collect()
}

#[test]
fn the_pattern_to_paste_is_absolute_whatever_folder_it_was_written_from() {
    // A preset's relative paths are read against the preset's folder, so a pattern
    // printed relative to this one would break once pasted into a preset elsewhere.
    let folder = image_folder(2, 2, 20);
    let here = TempDir::new().unwrap();
    let output = common::loaderbench_command(&["shards", path_str(folder.path()), "out"])
        .current_dir(here.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = format!(
        "path: \"{}/shard-{{000000..",
        here.path().join("out").display()
    );
    assert_printed(&output, &expected);
    assert_printed(&output, "wrote 4 samples of 2 classes as 1 shard in out");
}

#[test]
fn the_line_to_paste_reads_back_as_the_shards_written_whatever_the_folder_is_named() {
    // A folder named with braces, a comma and a quote made a line that named other
    // shards, or no valid preset at all.
    let folder = image_folder(2, 2, 20);
    let here = TempDir::new().unwrap();
    let out = here.path().join("runs {a,b} \"q\"");
    let output = loaderbench(&["shards", path_str(folder.path()), path_str(&out)]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = common::stdout(&output);
    let line = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("dataset: "))
        .expect("the line to paste");
    let preset = here.path().join("pasted.ron");
    let ron = format!(
        "(version: 1, name: \"pasted\", dataset: {})",
        line.trim_end_matches(',')
    );
    std::fs::write(&preset, ron).unwrap();
    let output = loaderbench(&["validate", path_str(&preset)]);
    assert!(output.status.success(), "{}", stderr(&output));
    // Validating opens the dataset: every shard the pattern names is read.
    assert_printed(&output, "pasted.ron: ok");
}

/// The line to paste gives the images' own channels and most common size, not a fixed
/// guess: three colour PNGs of 32×24 and two grey JPEGs of 40×30 are `channels: 3,
/// image_size: (24, 32)`, with a comment that the sizes differ; grey images alone are
/// `channels: 1`.
#[test]
fn the_line_to_paste_gives_the_images_channels_and_most_common_size() {
    let folder = TempDir::new().unwrap();
    for class in ["colour", "grey"] {
        std::fs::create_dir(folder.path().join(class)).unwrap();
    }
    for i in 0..3 {
        let image = RgbImage::from_pixel(32, 24, Rgb([200, 10, i]));
        image
            .save(folder.path().join(format!("colour/{i}.png")))
            .unwrap();
    }
    for i in 0..2 {
        let image = image::GrayImage::from_pixel(40, 30, image::Luma([i * 9]));
        image
            .save(folder.path().join(format!("grey/{i}.jpg")))
            .unwrap();
    }
    let converted = || {
        let out = TempDir::new().unwrap();
        let output = loaderbench(&["shards", path_str(folder.path()), path_str(out.path())]);
        assert!(output.status.success(), "{}", stderr(&output));
        output
    };
    let output = converted();
    assert_printed(
        &output,
        "channels: 3, image_size: (24, 32), shuffle_buffer: 1000)",
    );
    assert_printed(&output, "come in 2 sizes, 32×24 the most common (3 of 5)");
    std::fs::remove_dir_all(folder.path().join("colour")).unwrap();
    let output = converted();
    assert_printed(
        &output,
        "channels: 1, image_size: (30, 40), shuffle_buffer: 1000)",
    );
    assert!(!stdout(&output).contains("sizes"), "{}", stdout(&output));
}

#[test]
fn converting_into_a_folder_that_holds_shards_is_refused() {
    let folder = image_folder(2, 2, 20);
    let out = TempDir::new().unwrap();
    convert(folder.path(), out.path(), 3);
    let output = loaderbench(&["shards", path_str(folder.path()), path_str(out.path())]);
    assert_error_line(
        &output,
        2,
        &[path_str(out.path()), "holds 2 shard(s) already"],
    );
}

#[test]
fn shards_on_disk_run_with_and_without_workers() {
    let folder = image_folder(2, 9, 20);
    let out = TempDir::new().unwrap();
    let pattern = convert(folder.path(), out.path(), 4);
    let preset = shards_preset(out.path(), &pattern, vec![0, 2], 2);
    let output = run_preset(&preset);
    assert!(output.status.success(), "{}", stderr(&output));
    let json = json_file(&out.path().join("run.json"));
    let epoch = &json["results"][0]["epochs"][1];
    assert_eq!(epoch["samples"], 18);
    assert!(
        epoch["stages"]["fetch_s"].as_f64().unwrap() > 0.0,
        "{epoch}"
    );
}

#[test]
fn forked_and_spawned_workers_read_shards_on_disk_and_over_http() {
    let folder = image_folder(2, 9, 20);
    let out = TempDir::new().unwrap();
    let pattern = convert(folder.path(), out.path(), 4);
    let Some(server) = Nginx::serve(out.path(), None) else {
        return;
    };
    let url = server.url(pattern.rsplit('/').next().unwrap());
    for path in [pattern.as_str(), url.as_str()] {
        let preset = shards_preset(out.path(), path, vec![2], 2);
        let mut edited = Preset::load(&preset).unwrap();
        edited.worker_kind = vec![WorkerKind::Fork, WorkerKind::Spawn];
        edited.save(&preset).unwrap();
        let output = run_preset(&preset);
        assert!(output.status.success(), "{path}: {}", stderr(&output));
        let json = json_file(&out.path().join("run.json"));
        let results = json["results"].as_array().unwrap();
        let kinds: Vec<&str> = results
            .iter()
            .map(|r| r["config"]["worker_kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["fork", "spawn"]);
        for result in results {
            let epoch = &result["epochs"][1];
            assert_eq!(epoch["samples"], 18, "{path}: {result}");
            let fetch = epoch["stages"]["fetch_s"].as_f64().unwrap();
            assert!(fetch > 0.0, "the workers' fetch comes back: {epoch}");
        }
    }
    // Over HTTP, one GET per shard for each of: the index pass when the run opens the
    // shards and each of the two configs' two epochs, and one for the process's untimed
    // warm-up pass, which reads the first shard only, and one more of the first shard
    // when the run opens them, for its first image's header (colour images, read at the
    // default channels, are warned of). A shard is never fetched twice in an epoch, and
    // spawned workers reopen from the parent's index instead of fetching it again.
    let passes = 1 + 2 * 2;
    let sent = server.bodies_sent();
    assert_eq!(sent.len(), 5 * passes + 2, "{sent:?}");
    let size = |shard: usize| {
        let path = out.path().join(format!("shard-{shard:06}.tar"));
        std::fs::metadata(path).unwrap().len()
    };
    let every_shard: u64 = (0..5).map(size).sum();
    let bytes: u64 = sent.iter().map(|(_, bytes)| bytes).sum();
    assert_eq!(bytes, every_shard * passes as u64 + 2 * size(0), "{sent:?}");
}

/// Three shards of 4 samples of about `side` × `side` in a folder: the image folder, the
/// shards' folder and their pattern.
fn shard_folder(side: u32) -> (TempDir, TempDir, String) {
    let folder = image_folder(2, 6, side);
    let out = TempDir::new().unwrap();
    let pattern = convert(folder.path(), out.path(), 4);
    (folder, out, pattern)
}

/// Shards of colour photos left at the default shape (1 × 28 × 28, FashionMNIST's) are
/// warned of before measuring, naming the first sample's shard and member, and the line
/// that keeps them as they are.
#[test]
fn shards_left_at_the_default_shape_are_warned_of() {
    let (_folder, out, pattern) = shard_folder(20);
    let mut preset = common::runs::tiny_preset(1_000, 1);
    preset.samples = None;
    preset.dataset = DatasetSpec {
        kind: DatasetKind::Shards,
        path: Some(pattern.into()),
        ..DatasetSpec::default()
    };
    let file = out.path().join("defaults.ron");
    preset.save(&file).unwrap();
    let output = loaderbench(&["validate", path_str(&file)]);
    assert!(output.status.success(), "{}", stderr(&output));
    let first = out.path().join("shard-000000.tar");
    let said = format!("{}: ", first.display());
    let printed = format!("{}{}", stdout(&output), stderr(&output));
    let warning = printed
        .lines()
        .find(|line| line.contains(&said) && line.contains("colour images (the first's header)"))
        .unwrap_or_else(|| panic!("no warning naming {said} in: {printed}"));
    assert!(warning.contains("are read as 1×28×28"), "{warning}");
    assert!(warning.contains("channels: 3"), "{warning}");
}

/// The shards of [`shard_folder`] served by nginx, at `bytes_per_s` (`None`: as fast
/// as it can); `None` where nginx is not installed.
struct ServedShards {
    _folder: TempDir,
    out: TempDir,
    server: Nginx,
    /// The shards' pattern under the server's root.
    name: String,
}

impl ServedShards {
    fn start(side: u32, bytes_per_s: Option<u64>) -> Option<ServedShards> {
        let (folder, out, pattern) = shard_folder(side);
        let server = Nginx::serve(out.path(), bytes_per_s)?;
        let name = pattern.rsplit('/').next().unwrap().to_owned();
        Some(ServedShards {
            _folder: folder,
            out,
            server,
            name,
        })
    }

    /// The URL of `name` on the server.
    fn url(&self, name: &str) -> String {
        self.server.url(name)
    }

    /// The URL of the shards' pattern.
    fn pattern_url(&self) -> String {
        self.url(&self.name)
    }
}

/// Replaces shard 1 of `out` with a tar of `members` and runs on the shards.
fn run_with_bad_shard(members: &[(&str, Vec<u8>)]) -> (Output, PathBuf) {
    let (_folder, out, pattern) = shard_folder(20);
    let bad = out.path().join("shard-000001.tar");
    let mut builder = tar::Builder::new(std::fs::File::create(&bad).unwrap());
    for (name, bytes) in members {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, &bytes[..]).unwrap();
    }
    builder.into_inner().unwrap();
    let preset = shards_preset(out.path(), &pattern, vec![0], 1);
    (run_preset(&preset), bad)
}

fn png_bytes() -> Vec<u8> {
    let mut bytes = std::io::Cursor::new(Vec::new());
    RgbImage::from_pixel(4, 4, Rgb([1, 2, 3]))
        .write_to(&mut bytes, image::ImageFormat::Png)
        .unwrap();
    bytes.into_inner()
}

#[test]
fn a_member_without_a_label_is_named_before_measuring() {
    let (output, bad) = run_with_bad_shard(&[("a.png", png_bytes()), ("b.png", png_bytes())]);
    assert_error_line(&output, 2, &[path_str(&bad), "a.png: no label"]);
}

#[test]
fn an_unknown_extension_is_named_before_measuring() {
    let (output, bad) = run_with_bad_shard(&[("a.png", png_bytes()), ("a.txt", b"x".to_vec())]);
    assert_error_line(&output, 2, &[path_str(&bad), "a.txt: unknown extension"]);
}

#[test]
fn two_images_under_one_key_are_named_before_measuring() {
    let members = [
        ("a.png", png_bytes()),
        ("a.jpg", png_bytes()),
        ("a.cls", b"1".to_vec()),
    ];
    let (output, bad) = run_with_bad_shard(&members);
    assert_error_line(
        &output,
        2,
        &[path_str(&bad), "a.jpg: two images under the key a"],
    );
}

#[test]
fn a_truncated_tar_is_named_before_measuring() {
    let (_folder, out, pattern) = shard_folder(20);
    let shard = out.path().join("shard-000002.tar");
    let bytes = std::fs::read(&shard).unwrap();
    std::fs::write(&shard, &bytes[..bytes.len() / 2]).unwrap();
    let preset = shards_preset(out.path(), &pattern, vec![0], 1);
    assert_error_line(&run_preset(&preset), 2, &[path_str(&shard), "truncated"]);
}

#[test]
fn an_empty_or_unmatched_pattern_is_named_before_measuring() {
    let dir = TempDir::new().unwrap();
    let preset = shards_preset(dir.path(), "", vec![0], 1);
    assert_error_line(
        &run_preset(&preset),
        2,
        &["dataset.path: the shard pattern is empty"],
    );
    let pattern = format!("{}/train-*.tar", path_str(dir.path()));
    let preset = shards_preset(dir.path(), &pattern, vec![0], 1);
    assert_error_line(&run_preset(&preset), 2, &[&pattern, "no file matches"]);
}

#[test]
fn shards_over_http_run_and_a_missing_shard_is_a_404() {
    let Some(served) = ServedShards::start(20, None) else {
        return;
    };
    let preset = shards_preset(served.out.path(), &served.pattern_url(), vec![0, 2], 2);
    let output = run_preset(&preset);
    assert!(output.status.success(), "{}", stderr(&output));
    let missing = served.url("shard-{000000..000003}.tar");
    let preset = shards_preset(served.out.path(), &missing, vec![0], 1);
    let line = assert_error_line(&run_preset(&preset), 2, &["shard-000003.tar", "HTTP 404"]);
    assert!(line.contains(&served.url("shard-000003.tar")), "{line}");
}

#[test]
fn a_server_that_goes_away_mid_run_fails_it_naming_the_shard_and_keeps_what_was_measured() {
    // About 40 KB per shard at 40 KB/s: an epoch over three shards takes seconds.
    let Some(mut served) = ServedShards::start(64, Some(40_000)) else {
        return;
    };
    let preset = shards_preset(served.out.path(), &served.pattern_url(), vec![0, 1, 2], 1);
    let run = SavedRun::in_dir(served.out.path());
    let child = loaderbench_command(&run.run_args(path_str(&preset), &[]))
        .spawn()
        .unwrap();
    common::wait_for_configs(&run.journal, 1, Duration::from_secs(120));
    served.server.stop();
    let output = wait_with_deadline(child, Duration::from_secs(120));
    assert_error_line(&output, 1, &[&served.url("shard-")]);
    let saved = run.exported();
    let kept = saved["results"].as_array().unwrap();
    assert!(
        !kept.is_empty() && kept.len() < 3,
        "{} configs kept",
        kept.len()
    );
}

#[test]
fn a_spawned_worker_reopens_shards_from_the_parent_s_index_without_fetching_them_again() {
    let Some(served) = ServedShards::start(20, None) else {
        return;
    };
    let server = &served.server;
    let spec = DatasetSpec {
        kind: DatasetKind::Shards,
        path: Some(served.pattern_url().into()),
        channels: 3,
        image_size: [16, 16],
        ..DatasetSpec::default()
    };
    let opened = dataset::open(&spec, None).unwrap();
    let indexed = server.requests();
    assert_eq!(indexed, 3, "indexing is one GET per shard");
    // What a spawned worker does with the index its config carries.
    let reopened = dataset::reopen(&spec, None, opened.reopen_index()).unwrap();
    assert_eq!(
        server.requests(),
        indexed,
        "reopening from the index fetches nothing"
    );
    assert_eq!(reopened.shards(), opened.shards());
    let bytes = opened.shape().sample_bytes();
    let (mut a, mut b) = (vec![0; bytes], vec![0; bytes]);
    for index in [0, 5, 11] {
        assert_eq!(
            opened.read(index, &mut a).unwrap(),
            reopened.read(index, &mut b).unwrap()
        );
        assert_eq!(a, b, "sample {index}");
    }
}

/// Every file a run saved in `dir` (all but the preset), and what it printed, as one text.
fn everything_shown_and_saved(output: &Output, dir: &Path) -> String {
    let mut text = format!("{}{}", stdout(output), stderr(output));
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.path().is_file() && entry.path().extension().is_none_or(|ext| ext != "ron") {
            text.push_str(&String::from_utf8_lossy(
                &std::fs::read(entry.path()).unwrap(),
            ));
        }
    }
    text
}

#[test]
fn secrets_in_a_shard_url_are_never_shown_or_saved() {
    let Some(served) = ServedShards::start(20, None) else {
        return;
    };
    let name = served.name.as_str();
    let with_secrets = |name: &str| {
        served
            .url(name)
            .replace("http://", "http://alice:s3cr3tpw@")
            + "?sig=${LOADERBENCH_TEST_SIG}"
    };
    let sig: (&str, &std::ffi::OsStr) = ("LOADERBENCH_TEST_SIG", "TOPSECRETSIG".as_ref());
    let run = |path: &str, vars: &[(&str, &std::ffi::OsStr)]| {
        let dir = TempDir::new().unwrap();
        let preset = shards_preset(dir.path(), path, vec![0], 1);
        let saved = SavedRun::in_dir(dir.path());
        let md = dir.path().join("run.md");
        let mut args = saved.run_args(path_str(&preset), &[]);
        args.extend(["--md", path_str(&md)]);
        let output = common::loaderbench_with(&args, vars);
        let everything = everything_shown_and_saved(&output, dir.path());
        (output, everything)
    };

    let (output, everything) = run(&with_secrets(name), &[sig]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(everything.contains("http://***@127.0.0.1"), "{everything}");
    for secret in ["s3cr3tpw", "TOPSECRETSIG"] {
        assert!(!everything.contains(secret), "{secret} in: {everything}");
    }

    let (output, everything) = run(&with_secrets("nope-{0..1}.tar"), &[sig]);
    let line = assert_error_line(&output, 2, &["nope-0.tar?***", "HTTP 404"]);
    assert!(line.contains("http://***@127.0.0.1"), "{line}");
    for secret in ["s3cr3tpw", "TOPSECRETSIG"] {
        assert!(!everything.contains(secret), "{secret} in: {everything}");
    }

    let (output, _) = run(&with_secrets(name), &[]);
    assert_error_line(
        &output,
        2,
        &["the environment variable LOADERBENCH_TEST_SIG that the URL names is not set"],
    );
}

#[test]
fn a_host_s_login_comes_from_netrc_and_is_never_shown() {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            headers.push(line.trim_end().to_owned());
        }
        let mut stream = stream;
        stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .unwrap();
        headers
    });
    let dir = TempDir::new().unwrap();
    let netrc = dir.path().join("netrc");
    std::fs::write(&netrc, "machine 127.0.0.1 login alice password s3cr3tpw\n").unwrap();
    let url = format!("http://127.0.0.1:{port}/s-0.tar");
    let preset = shards_preset(dir.path(), &url, vec![0], 1);
    let output = common::loaderbench_with(
        &["run", path_str(&preset), "-q"],
        &[("NETRC", netrc.as_os_str())],
    );
    let line = assert_error_line(&output, 2, &["s-0.tar", "HTTP 404"]);
    assert!(!line.contains("s3cr3tpw"), "{line}");
    let headers = server.join().unwrap();
    // base64("alice:s3cr3tpw")
    assert!(
        headers
            .iter()
            .any(|h| h.eq_ignore_ascii_case("authorization: Basic YWxpY2U6czNjcjN0cHc=")),
        "{headers:?}"
    );
}
