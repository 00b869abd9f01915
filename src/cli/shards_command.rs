//! `loaderbench shards FOLDER OUT`: an image folder (torchvision's ImageFolder layout)
//! written as tar shards in WebDataset's layout, for `dataset: (kind: shards, ...)`.
//! Samples go in a seeded shuffled order, so that every shard mixes the classes, as
//! `OUT/shard-000000.tar`, … of `--per-shard` samples each (the last may hold fewer);
//! sample `n` is the members `{n:06}.{jpg|jpeg|png}` (the file's own bytes, its
//! extension lower-cased) and `{n:06}.cls` (its class index). A folder that holds shards
//! already is refused rather than mixed with new ones.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use loaderbench_engine::atomic_file;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{DatasetLimits, list_image_folder};
use loaderbench_engine::{Error, Result};

/// An image folder to convert.
#[derive(Debug, Args)]
pub struct ShardsArgs {
    /// The image folder: one sub-folder per class, PNG/JPEG files inside.
    folder: PathBuf,
    /// The folder to write `shard-000000.tar`, … into (made if missing).
    out: PathBuf,
    /// Samples per shard.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    per_shard: u64,
    /// Seed of the order the samples are written in.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn shards(args: ShardsArgs) -> Result<()> {
    refuse_old_shards(&args.out)?;
    let listed = list_image_folder(
        &args.folder,
        &DatasetLimits::DEFAULT,
        &mut |_| {},
        &CancelToken::new(),
    )?;
    for warning in &listed.warnings {
        eprintln!("warning: {warning}");
    }
    let mut samples = listed.samples;
    samples.shuffle(&mut StdRng::seed_from_u64(args.seed));
    std::fs::create_dir_all(&args.out).map_err(|err| Error::io(&args.out, err))?;
    // The per-shard count is at least 1 (clap checked) and a usize on every target.
    let per_shard = usize::try_from(args.per_shard).unwrap_or(usize::MAX);
    let chunks: Vec<&[(PathBuf, i64)]> = samples.chunks(per_shard).collect();
    for (shard, chunk) in chunks.iter().enumerate() {
        let first = shard * per_shard;
        write_shard(&args.out.join(shard_name(shard)), first, chunk)?;
    }
    let last = chunks.len().saturating_sub(1);
    println!(
        "wrote {} samples of {} classes as {} shards in {}",
        samples.len(),
        listed.classes,
        chunks.len(),
        args.out.display()
    );
    println!("use in a preset:");
    println!(
        "    dataset: (kind: shards, path: \"{}/shard-{{000000..{last:06}}}.tar\", channels: 3, \
         image_size: (64, 64), shuffle_buffer: {}),",
        args.out.display(),
        per_shard.min(1000)
    );
    Ok(())
}

fn shard_name(shard: usize) -> String {
    format!("shard-{shard:06}.tar")
}

/// Fails when `out` already holds shards this command would write among.
fn refuse_old_shards(out: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(out) else {
        return Ok(());
    };
    let mut old: Vec<String> = entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("shard-") && name.ends_with(".tar"))
        .collect();
    old.sort();
    match old.first() {
        Some(first) => Err(Error::file(
            out,
            format!(
                "holds {} shard(s) already ({first}, …): remove them or choose another folder",
                old.len()
            ),
        )),
        None => Ok(()),
    }
}

/// Writes the samples `first..` of `chunk` as the tar at `path`, whole or not at all
/// (an interrupted run leaves no shard cut short).
fn write_shard(path: &Path, first: usize, chunk: &[(PathBuf, i64)]) -> Result<()> {
    let mut unreadable = None;
    let written = atomic_file::write_with(path, |out| {
        let mut tar = tar::Builder::new(out);
        for (n, (image, label)) in (first..).zip(chunk) {
            let bytes = std::fs::read(image).inspect_err(|err| {
                unreadable = Some(Error::file(image, format!("cannot read: {err}")));
            })?;
            let extension = image
                .extension()
                .map(|ext| ext.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            append(&mut tar, &format!("{n:06}.{extension}"), &bytes)?;
            append(
                &mut tar,
                &format!("{n:06}.cls"),
                label.to_string().as_bytes(),
            )?;
        }
        tar.finish()
    });
    match unreadable {
        Some(error) => Err(error),
        None => written,
    }
}

/// One member with fixed metadata, so that the same folder and seed give the same bytes.
fn append(tar: &mut tar::Builder<impl Write>, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    tar.append_data(&mut header, name, bytes)
}
