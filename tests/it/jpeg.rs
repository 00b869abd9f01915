//! Every JPEG coding PIL reads, on our engine through the CLI as a process: an image
//! folder and a tar shard of baseline, progressive, arithmetic-coded and lossless JPEGs
//! run (zune-jpeg decodes the first two, libjpeg-turbo the others), and a 12-bit JPEG,
//! which PIL refuses too, is refused before measuring with one line naming the file, or
//! the shard and its member, and saying that 12-bit JPEGs are not supported.

use std::path::Path;
use std::process::Output;

use tempfile::TempDir;

use crate::common;
use common::jpeg::{self, Coding};
use common::{assert_error_line, loaderbench, path_str, stderr};

/// A one-epoch run of seed-light on the dataset `kind` at `path`, in batches of 2.
fn run_on(kind: &str, path: &Path) -> Output {
    let dir = TempDir::new().unwrap();
    let journal = dir.path().join("run.jsonl");
    let kind = format!("dataset.kind={kind}");
    let dataset = format!("dataset.path={}", path_str(path));
    let mut args = vec!["run", "seed-light", "-q", "--journal", path_str(&journal)];
    for set in [
        kind.as_str(),
        &dataset,
        "dataset.image_size=[12, 16]",
        "num_workers=0,2",
        "persistent_workers=false",
        "pin_memory=false",
        "epochs=1",
        "batch_size=2",
    ] {
        args.extend(["--set", set]);
    }
    loaderbench(&args)
}

/// A tar shard at `path` of `members` (each a name and its bytes).
fn write_shard(path: &Path, members: &[(String, Vec<u8>)]) {
    let mut tar = tar::Builder::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in members {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, bytes.as_slice())
            .unwrap();
    }
    tar.finish().unwrap();
}

/// Each coding's JPEG of picture `n` as a WebDataset sample: its image and its class.
fn shard_members(n: u32) -> Vec<(String, Vec<u8>)> {
    Coding::ALL
        .iter()
        .enumerate()
        .flat_map(|(class, &coding)| {
            let key = format!("{:04}", class as u32 * 10 + n);
            let image = jpeg::encode(&jpeg::picture(n, 20, 14), coding);
            [
                (format!("{key}.jpg"), image),
                (format!("{key}.cls"), class.to_string().into_bytes()),
            ]
        })
        .collect()
}

#[test]
fn every_jpeg_coding_pil_reads_runs_from_a_folder_and_from_a_shard() {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("folder");
    jpeg::folder_of_every_coding(&folder, 3, 20, 14);
    let output = run_on("image_folder", &folder);
    assert!(output.status.success(), "{}", stderr(&output));
    let shard = dir.path().join("every-coding.tar");
    write_shard(&shard, &[shard_members(0), shard_members(1)].concat());
    let output = run_on("shards", &shard);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_12_bit_jpeg_is_refused_naming_the_file_or_the_shard_member() {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("folder");
    jpeg::folder_of_every_coding(&folder, 1, 20, 14);
    let twelve_bit = jpeg::twelve_bit(&jpeg::picture(0, 20, 14));
    let file = folder.join("baseline/monkey12.jpg");
    std::fs::write(&file, &twelve_bit).unwrap();
    assert_error_line(
        &run_on("image_folder", &folder),
        2,
        &[path_str(&file), "a 12-bit JPEG: not supported"],
    );
    let shard = dir.path().join("with-12-bit.tar");
    let mut members = shard_members(0);
    members.extend([
        ("0099.jpg".to_owned(), twelve_bit),
        ("0099.cls".to_owned(), b"1".to_vec()),
    ]);
    write_shard(&shard, &members);
    assert_error_line(
        &run_on("shards", &shard),
        2,
        &[path_str(&shard), "0099.jpg", "a 12-bit JPEG: not supported"],
    );
}
