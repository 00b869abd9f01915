//! `loaderbench shards FOLDER OUT`: an image folder (torchvision's ImageFolder layout)
//! written as tar shards in WebDataset's layout, for `dataset: (kind: shards, ...)`.
//! Samples go in a seeded shuffled order, so that every shard mixes the classes, as
//! `OUT/shard-000000.tar`, … of `--per-shard` samples each (the last may hold fewer), or
//! with `--compress gz` as gzip-compressed `OUT/shard-000000.tar.gz`, …; sample `n` is
//! the members `{n:06}.{ext}` (the file's own bytes, its extension lower-cased: any of
//! the image folder's formats)
//! and `{n:06}.cls` (its class index). A folder that holds shards already is refused
//! rather than mixed with new ones. It ends with the `dataset` line to paste into a
//! preset: the pattern, and the channels and most common size the images' headers give.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use flate2::write::GzEncoder;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use loaderbench_engine::atomic_file;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{DatasetLimits, ImageShape, list_image_folder};
use loaderbench_engine::{Error, Result, counted};

/// An image folder to convert.
#[derive(Debug, Args)]
pub struct ShardsArgs {
    /// The image folder: one sub-folder per class, image files inside (PNG, JPEG, BMP,
    /// PPM/PGM, TIFF, WebP).
    folder: PathBuf,
    /// The folder to write `shard-000000.tar`, … into (made if missing).
    out: PathBuf,
    /// Samples per shard.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    per_shard: u64,
    /// Seed of the order the samples are written in.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Compress each shard (`gz`: gzip, as `.tar.gz`, which both runtimes read).
    #[arg(long, value_enum)]
    compress: Option<Compress>,
}

/// How `loaderbench shards` compresses the shards it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Compress {
    /// gzip, at its default level.
    Gz,
}

/// The extension of the shards written with `compress`.
fn extension(compress: Option<Compress>) -> &'static str {
    match compress {
        None => "tar",
        Some(Compress::Gz) => "tar.gz",
    }
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
        errln!("warning: {warning}");
    }
    let mut samples = listed.samples;
    samples.shuffle(&mut StdRng::seed_from_u64(args.seed));
    std::fs::create_dir_all(&args.out).map_err(|err| Error::io(&args.out, err))?;
    // The per-shard count is at least 1 (clap checked) and a usize on every target.
    let per_shard = usize::try_from(args.per_shard).unwrap_or(usize::MAX);
    let chunks: Vec<&[(PathBuf, i64)]> = samples.chunks(per_shard).collect();
    let extension = extension(args.compress);
    let mut seen = ImagesSeen::default();
    for (shard, chunk) in chunks.iter().enumerate() {
        let first = shard * per_shard;
        let path = args.out.join(shard_name(shard, extension));
        write_shard(&path, first, chunk, args.compress, &mut seen)?;
    }
    let last = chunks.len().saturating_sub(1);
    outln!(
        "wrote {} of {} as {} in {}",
        counted(samples.len(), "sample"),
        counted(listed.classes, "class"),
        counted(chunks.len(), "shard"),
        args.out.display()
    );
    // Absolute: a preset's relative paths are read against the preset's own folder,
    // which need not be this one.
    let out = std::path::absolute(&args.out).map_err(|err| Error::io(&args.out, err))?;
    let pattern = format!(
        "{}/shard-{{000000..{last:06}}}.{extension}",
        brace_escaped(&out.display().to_string())
    );
    // A RON string, its quotes and backslashes escaped, so that the line pastes whole.
    let path = ron::to_string(&pattern).map_err(|err| Error::run(err.to_string()))?;
    outln!("use in a preset:");
    let shape = match seen.most_common() {
        Some(([height, width], count)) => {
            if seen.sizes.len() > 1 {
                outln!(
                    "    // the images come in {} sizes, {width}×{height} the most common ({count} \
                     of {}); image_size is the size every image is resized to",
                    seen.sizes.len(),
                    samples.len()
                );
            }
            let channels = if seen.colour { 3 } else { 1 };
            format!("channels: {channels}, image_size: ({height}, {width}), ")
        }
        None => {
            outln!("    // no image header could be read here: give channels and image_size");
            String::new()
        }
    };
    outln!(
        "    dataset: (kind: shards, path: {path}, {shape}shuffle_buffer: {}),",
        per_shard.min(1000)
    );
    Ok(())
}

/// What the images written hold, as their headers say: the sizes and colour the line to
/// paste suggests.
#[derive(Debug, Default)]
struct ImagesSeen {
    /// Each `[height, width]`, with its count and the order it was first met in.
    sizes: HashMap<[u32; 2], (usize, usize)>,
    /// Whether any image holds colour.
    colour: bool,
}

impl ImagesSeen {
    /// Counts the image file `bytes`, where its header can be read.
    fn add(&mut self, bytes: &[u8]) {
        let Some(shape) = ImageShape::of(std::io::Cursor::new(bytes)) else {
            return;
        };
        self.colour |= shape.colour;
        let order = self.sizes.len();
        self.sizes
            .entry([shape.height, shape.width])
            .or_insert((0, order))
            .0 += 1;
    }

    /// The most common `[height, width]` (the first met of equally common ones) and its
    /// count; `None` where no header could be read.
    fn most_common(&self) -> Option<([u32; 2], usize)> {
        self.sizes
            .iter()
            .min_by_key(|(_, (count, order))| (std::cmp::Reverse(*count), *order))
            .map(|(size, (count, _))| (*size, *count))
    }
}

/// `text` with what brace expansion reads (`{`, `}`, `,` and the escape itself) escaped,
/// so that a folder named `runs {a,b}` stays one folder in the pattern.
fn brace_escaped(text: &str) -> String {
    text.chars()
        .fold(String::with_capacity(text.len()), |mut out, c| {
            if matches!(c, '{' | '}' | ',' | '\\') {
                out.push('\\');
            }
            out.push(c);
            out
        })
}

fn shard_name(shard: usize, extension: &str) -> String {
    format!("shard-{shard:06}.{extension}")
}

/// Fails when `out` already holds shards this command would write among.
fn refuse_old_shards(out: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(out) else {
        return Ok(());
    };
    let mut old: Vec<String> = entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            name.starts_with("shard-") && [".tar", ".tar.gz"].iter().any(|end| name.ends_with(end))
        })
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

/// Writes the samples `first..` of `chunk` as the tar at `path`, compressed as `compress`
/// says, whole or not at all (an interrupted run leaves no shard cut short).
fn write_shard(
    path: &Path,
    first: usize,
    chunk: &[(PathBuf, i64)],
    compress: Option<Compress>,
    seen: &mut ImagesSeen,
) -> Result<()> {
    let mut unreadable = None;
    let written = atomic_file::write_with(path, |out| match compress {
        None => {
            let mut tar = tar::Builder::new(out);
            append_samples(&mut tar, first, chunk, &mut unreadable, seen)?;
            tar.finish()
        }
        Some(Compress::Gz) => {
            let gzip = GzEncoder::new(out, flate2::Compression::default());
            let mut tar = tar::Builder::new(gzip);
            append_samples(&mut tar, first, chunk, &mut unreadable, seen)?;
            tar.into_inner()?.finish().map(drop)
        }
    });
    match unreadable {
        Some(error) => Err(error),
        None => written,
    }
}

/// Appends the samples `first..` of `chunk` to `tar`, each image's header counted in
/// `seen`; an image that cannot be read is put in `unreadable` (named) as well as
/// failing the write.
fn append_samples(
    tar: &mut tar::Builder<impl Write>,
    first: usize,
    chunk: &[(PathBuf, i64)],
    unreadable: &mut Option<Error>,
    seen: &mut ImagesSeen,
) -> std::io::Result<()> {
    for (n, (image, label)) in (first..).zip(chunk) {
        let bytes = std::fs::read(image).inspect_err(|err| {
            *unreadable = Some(Error::file(image, format!("cannot read: {err}")));
        })?;
        seen.add(&bytes);
        let extension = image
            .extension()
            .map(|ext| ext.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        append(tar, &format!("{n:06}.{extension}"), &bytes)?;
        append(tar, &format!("{n:06}.cls"), label.to_string().as_bytes())?;
    }
    Ok(())
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
