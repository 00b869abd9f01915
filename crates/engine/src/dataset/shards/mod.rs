//! Tar shards in WebDataset's layout, read as streams. [`pattern`] turns the preset's
//! `path` into shard locations (local files or `http(s)://` URLs); [`Shards::open`]
//! indexes every shard once ([`index`]: one pass, several shards at a time, so bad input
//! is named before a run starts and the dataset knows its length); `read` decodes a
//! sample's image exactly as the image folder does, its bytes fetched by the reading
//! thread's cursor ([`cursor`]) from a sequential stream on its shard ([`source`]),
//! decompressed where the shard is compressed ([`compression`]: gzip, bzip2, xz). Samples
//! are numbered shard by shard in member order, and [`Dataset::shards`] says which
//! indices each shard holds, so the loader hands out whole shards. Opened at the default
//! shape, it warns where its first image is of another, as the image folder does
//! ([`image_folder::default_shape_warning`]).

mod compression;
mod cursor;
mod index;
mod members;
pub mod pattern;
mod source;
#[cfg(test)]
mod test_tars;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::image_folder::{self, ImageShape};
use super::{
    Dataset, DatasetLimits, OpenProgress, SampleShape, TimedRead, files, image_decode, image_header,
};
use serde::{Deserialize, Serialize};

use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use compression::Compression;
use index::SampleEntry;
use pattern::ShardLocation;
use source::Http;

/// Shards indexed at once when the dataset opens (each is one sequential stream).
const INDEX_THREADS: usize = 8;

/// The shards' samples, shared with the cursors that read them.
pub struct Catalog {
    shards: Vec<Shard>,
    /// The index of each shard's first sample, then the total.
    starts: Vec<usize>,
    /// `dataset.limits.http_stall_s`, which the cursors' HTTP reads are held to.
    http_stall_s: u64,
}

/// One shard, how it is compressed, and its samples, in member order.
#[derive(Serialize, Deserialize)]
struct Shard {
    location: ShardLocation,
    compression: Compression,
    samples: Vec<SampleEntry>,
}

impl Catalog {
    fn new(shards: Vec<Shard>, http_stall_s: u64) -> Self {
        let mut starts = vec![0];
        for shard in &shards {
            starts.push(starts[starts.len() - 1] + shard.samples.len());
        }
        Catalog {
            shards,
            starts,
            http_stall_s,
        }
    }

    fn len(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    /// The shard holding sample `index` (below [`Catalog::len`]) and its place there.
    fn locate(&self, index: usize) -> (usize, usize) {
        let shard = self.starts.partition_point(|&start| start <= index) - 1;
        (shard, index - self.starts[shard])
    }

    /// The index of sample `sample` of shard `shard`.
    fn index_of(&self, shard: usize, sample: usize) -> usize {
        self.starts[shard] + sample
    }
}

/// A dataset of tar shards.
pub struct Shards {
    pattern: String,
    catalog: Arc<Catalog>,
    shape: SampleShape,
    limits: DatasetLimits,
    /// Tells this dataset's cursors from another's on a reading thread.
    id: u64,
    /// That the first image is not of the default shape the dataset is read at (found
    /// at open; a worker's copy has none).
    shape_warning: Option<String>,
}

impl Shards {
    /// Indexes the shards `pattern` names within `limits`, to be read as `channels` ×
    /// `size`, keeping the first `limit` samples when given; `progress` hears how many
    /// shards are done, and `cancel` stops the indexing (and any wait on a server).
    pub fn open(
        pattern: &str,
        limits: &DatasetLimits,
        channels: usize,
        size: [usize; 2],
        limit: Option<usize>,
        progress: &mut dyn FnMut(OpenProgress),
        cancel: &CancelToken,
    ) -> Result<Self> {
        let shape = image_folder::sample_shape(channels, size)?;
        let locations = pattern::shard_locations(pattern, limits.shards)?;
        let http = Http::new(limits.http_stall_s, cancel.clone());
        let mut shards = index_all(locations, &http, limits, progress)?;
        cancel.check()?;
        if let Some(limit) = limit {
            keep_first(&mut shards, limit);
        }
        let mut shards = Shards::new(pattern.to_owned(), shards, shape, *limits);
        shards.shape_warning = shards.first_sample().and_then(|first| {
            let header = || shards.first_image_shape();
            image_folder::default_shape_warning(&first, channels, size, header)
        });
        Ok(shards)
    }

    /// The dataset a parent opened, from its [`Dataset::reopen_index`]: no shard is read.
    pub fn from_index(
        pattern: &Path,
        limits: &DatasetLimits,
        channels: usize,
        size: [usize; 2],
        index: serde_json::Value,
    ) -> Result<Self> {
        let shape = image_folder::sample_shape(channels, size)?;
        let shards: Vec<Shard> = serde_json::from_value(index)
            .map_err(|err| Error::run(format!("the shards' index sent to a worker: {err}")))?;
        Ok(Shards::new(
            pattern.display().to_string(),
            shards,
            shape,
            *limits,
        ))
    }

    fn new(pattern: String, shards: Vec<Shard>, shape: SampleShape, limits: DatasetLimits) -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        Shards {
            pattern,
            catalog: Arc::new(Catalog::new(shards, limits.http_stall_s)),
            shape,
            limits,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shape_warning: None,
        }
    }

    /// The first sample's image, named as the warnings name a member: `SHARD: MEMBER`.
    fn first_sample(&self) -> Option<String> {
        let shard = self.catalog.shards.first()?;
        let member = &shard.samples.first()?.member;
        Some(crate::secrets::redact(&format!("{}: {member}", shard.location)).into_owned())
    }

    /// The first sample's image size and colour, its bytes fetched as a read fetches them
    /// (this thread's cursor let go of after); `None` where they cannot be read here.
    fn first_image_shape(&self) -> Option<ImageShape> {
        let header = |bytes: &[u8]| Ok(ImageShape::of(std::io::Cursor::new(bytes)));
        let read = cursor::read(self.id, &self.catalog, 0, header);
        cursor::release(self.id);
        read.ok()?.0
    }
}

impl Dataset for Shards {
    fn len(&self) -> usize {
        self.catalog.len()
    }

    fn shape(&self) -> SampleShape {
        self.shape
    }

    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        Ok(self.read_timed(index, pixels)?.label)
    }

    fn read_timed(&self, index: usize, pixels: &mut [u8]) -> Result<TimedRead> {
        files::check_index(index, self.len())?;
        let (shard, sample) = self.catalog.locate(index);
        let shard = &self.catalog.shards[shard];
        let entry = &shard.samples[sample];
        let ((), fetched) = cursor::read(self.id, &self.catalog, index, |bytes| {
            image_decode::decode_sample(bytes, self.shape, &self.limits, pixels)
                .map_err(|problem| shard.location.bad(format!("{}: {problem}", entry.member)))
        })?;
        Ok(TimedRead {
            label: entry.label,
            fetch: fetched.fetch,
            decompress: fetched.decompress,
        })
    }

    fn describe(&self) -> String {
        let shards = self.catalog.shards.len();
        let files = files::describe("shards", Path::new(&self.pattern), self.len(), self.shape);
        let shards = crate::counted(shards, "shard");
        crate::secrets::redact(&format!("{files}, {shards}")).into_owned()
    }

    fn warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> = self.shape_warning.iter().cloned().collect();
        let shards = &self.catalog.shards;
        let mut clipped = shards.iter().flat_map(|shard| {
            let clipped = shard.samples.iter().filter(|sample| sample.pil_clips);
            clipped.map(move |sample| (&shard.location, &sample.member))
        });
        if let Some((location, member)) = clipped.next() {
            let first = format!("{location}: {member}");
            let count = 1 + clipped.count();
            let warning = image_header::clipped_grey_warning(count, self.len(), &first);
            warnings.push(crate::secrets::redact(&warning).into_owned());
        }
        warnings
    }

    fn shards(&self) -> Option<Vec<Range<usize>>> {
        let starts = &self.catalog.starts;
        Some(starts.windows(2).map(|pair| pair[0]..pair[1]).collect())
    }

    fn files(&self) -> Vec<PathBuf> {
        let locations = self.catalog.shards.iter().map(|shard| &shard.location);
        locations
            .filter_map(|location| location.file().map(Path::to_path_buf))
            .collect()
    }

    fn reopen_index(&self) -> Option<serde_json::Value> {
        serde_json::to_value(&self.catalog.shards).ok()
    }

    fn release_thread_reader(&self) {
        cursor::release(self.id);
    }
}

/// Indexes every shard, a few at a time (URLs through `http`, whose cancel token stops
/// the pass), reporting shards done; the first bad shard in `locations` order among
/// those found is the error.
fn index_all(
    locations: Vec<ShardLocation>,
    http: &Http,
    limits: &DatasetLimits,
    progress: &mut dyn FnMut(OpenProgress),
) -> Result<Vec<Shard>> {
    let total = locations.len();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<index::Indexed>>>> =
        Mutex::new((0..total).map(|_| None).collect());
    let work = || {
        while !http.is_cancelled() {
            let at = next.fetch_add(1, Ordering::Relaxed);
            let Some(location) = locations.get(at) else {
                return;
            };
            let indexed = index::index_shard(location, http, limits);
            let failed = indexed.is_err();
            // A poisoned lock only means another indexer panicked; the slots are plain.
            results.lock().unwrap_or_else(|p| p.into_inner())[at] = Some(indexed);
            done.fetch_add(1, Ordering::Relaxed);
            if failed {
                next.store(total, Ordering::Relaxed);
            }
        }
    };
    let caller = std::thread::current();
    std::thread::scope(|scope| {
        let threads = total.min(INDEX_THREADS);
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    work();
                    caller.unpark();
                })
            })
            .collect();
        while !workers.iter().all(|worker| worker.is_finished()) {
            let checked = done.load(Ordering::Relaxed);
            progress(OpenProgress { checked, total });
            std::thread::park_timeout(std::time::Duration::from_millis(100));
        }
    });
    // A shard cut off by the cancel reads as broken: the cancel is the answer.
    if http.is_cancelled() {
        return Err(Error::Cancelled);
    }
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut shards = Vec::with_capacity(total);
    for (location, indexed) in locations.into_iter().zip(results) {
        match indexed {
            Some(Ok(indexed)) => shards.push(Shard {
                location,
                compression: indexed.compression,
                samples: indexed.samples,
            }),
            Some(Err(error)) => return Err(error),
            // Shards are taken in order, so every slot before the first failure is
            // filled; an empty one means an indexer thread died.
            None => return Err(Error::run("indexing the shards stopped without an error")),
        }
    }
    progress(OpenProgress {
        checked: total,
        total,
    });
    Ok(shards)
}

/// The byte ranges of the images the index pass finds in a shard held in `bytes`,
/// within `limits`: the pass a local shard gets at open, on bytes in memory (the fuzz
/// target's entry).
pub fn index_bytes(bytes: &[u8], limits: &DatasetLimits) -> Result<Vec<Range<u64>>> {
    let location = ShardLocation::File(PathBuf::from("shard.tar"));
    let cursor = std::io::Cursor::new(bytes);
    let samples = index::index_seekable(&location, cursor, bytes.len() as u64, limits)?;
    Ok(samples
        .iter()
        .map(|sample| sample.offset..sample.offset + sample.size)
        .collect())
}

/// Fails unless the local shard at `path` is a tar that both runtimes read: plain, or
/// compressed as its name says with gzip, bzip2 or xz (its first bytes are read).
pub fn check_shard_file(path: &Path) -> Result<()> {
    let location = ShardLocation::File(path.to_path_buf());
    let mut file = std::fs::File::open(path)
        .map_err(|err| location.caused(format!("cannot open: {err}"), err))?;
    let head = compression::read_head(&mut file)
        .map_err(|err| location.caused(format!("cannot read: {err}"), err))?;
    compression::of_shard(&location, &head).map(|_| ())
}

/// Keeps the first `limit` samples, in shard order.
fn keep_first(shards: &mut Vec<Shard>, limit: usize) {
    let mut left = limit;
    shards.retain_mut(|shard| {
        shard.samples.truncate(left);
        left -= shard.samples.len();
        !shard.samples.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    use tempfile::TempDir;

    use std::time::Duration;

    use super::test_tars::{compressed, samples, write_tar};
    use super::*;

    /// Three shards of 4, 5 and 3 samples numbered 0..12 (see `test_tars::samples`).
    fn three_shards() -> (TempDir, String) {
        let dir = TempDir::new().unwrap();
        for (shard, (first, count)) in [(0, 4), (4, 5), (9, 3)].into_iter().enumerate() {
            let path = dir.path().join(format!("s-{shard:03}.tar"));
            write_tar(&path, &samples(first, count));
        }
        let pattern = format!("{}/s-{{000..002}}.tar", dir.path().display());
        (dir, pattern)
    }

    /// The shards `pattern` names as 3×2×3 samples within the default limits, the first
    /// `limit` of them when given.
    fn try_open(pattern: &str, limit: Option<usize>) -> Result<Shards> {
        Shards::open(
            pattern,
            &DatasetLimits::DEFAULT,
            3,
            [2, 3],
            limit,
            &mut |_| {},
            &CancelToken::new(),
        )
    }

    fn open(pattern: &str, limit: Option<usize>) -> Shards {
        try_open(pattern, limit).unwrap()
    }

    /// Sample `n`'s pixels and label as `test_tars::samples` made them.
    fn expected(n: usize) -> (Vec<u8>, i64) {
        let colour = [(n * 7 % 256) as u8, (n * 13 % 256) as u8, 9];
        let pixels = colour.iter().flat_map(|&c| [c; 6]).collect();
        (pixels, (n % 3) as i64)
    }

    fn read(shards: &Shards, index: usize) -> (Vec<u8>, i64) {
        let mut pixels = vec![0; 18];
        let label = shards.read(index, &mut pixels).unwrap();
        (pixels, label)
    }

    /// A 16-bit grey PNG member, which PIL clips, is warned of, naming its shard; the
    /// 8-bit samples beside it are not.
    #[test]
    fn a_shard_s_16_bit_grey_images_are_warned_of() {
        let dir = TempDir::new().unwrap();
        let mut members = samples(0, 2);
        let mut grey = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageLuma16(image::ImageBuffer::from_pixel(3, 2, image::Luma([9000])))
            .write_to(&mut grey, image::ImageFormat::Png)
            .unwrap();
        members.push(("000002.png".to_owned(), grey.into_inner()));
        members.push(("000002.cls".to_owned(), b"1".to_vec()));
        let path = dir.path().join("s-000.tar");
        write_tar(&path, &members);
        let plain = dir.path().join("t-000.tar");
        write_tar(&plain, &samples(0, 2));
        let open_path = |path: &Path| open(&path.display().to_string(), None);
        assert_eq!(open_path(&plain).warnings(), Vec::<String>::new());
        let warnings = open_path(&path).warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let first = format!(
            "1 of 3 images are 16-bit grey (the first: {}: 000002.png)",
            path.display()
        );
        assert!(warnings[0].starts_with(&first), "{warnings:?}");
    }

    /// Shards of 3×2 colour images opened at the default shape (1 × 28 × 28) are warned
    /// of, naming the first sample's shard and member, a compressed shard's as a plain
    /// one's; at a shape of the preset's own they are not, and the samples read the same
    /// after the first was fetched for its header.
    #[test]
    fn shards_left_at_the_default_shape_are_warned_of() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("s-000.tar");
        write_tar(&path, &samples(0, 4));
        let gzipped = dir.path().join("s-000.tar.gz");
        let plain = std::fs::read(&path).unwrap();
        std::fs::write(&gzipped, compressed(&plain, Compression::Gzip)).unwrap();
        let defaults = crate::dataset::DatasetSpec::default();
        for path in [&path, &gzipped] {
            let pattern = path.display().to_string();
            let at_defaults = Shards::open(
                &pattern,
                &DatasetLimits::DEFAULT,
                defaults.channels,
                defaults.image_size,
                None,
                &mut |_| {},
                &CancelToken::new(),
            )
            .unwrap();
            let warnings = at_defaults.warnings();
            let said = format!(
                "{}: 000000.png: 3×2 colour images (the first's header)",
                path.display()
            );
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(warnings[0].starts_with(&said), "{warnings:?}");
            assert!(
                warnings[0].contains("channels: 3, image_size: [2, 3]"),
                "{warnings:?}"
            );
            let own = open(&pattern, None);
            assert_eq!(own.warnings(), Vec::<String>::new());
            for index in 0..4 {
                assert_eq!(read(&own, index), expected(index), "sample {index}");
            }
        }
    }

    #[test]
    fn samples_are_numbered_shard_by_shard_and_each_shard_is_a_range() {
        let (dir, pattern) = three_shards();
        let shards = open(&pattern, None);
        assert_eq!(shards.len(), 12);
        assert_eq!(shards.shards(), Some(vec![0..4, 4..9, 9..12]));
        let files: Vec<PathBuf> = (0..3)
            .map(|n| dir.path().join(format!("s-{n:03}.tar")))
            .collect();
        assert_eq!(shards.files(), files);
        assert!(
            shards.describe().ends_with("(12 × 3×2×3 u8), 3 shards"),
            "{}",
            shards.describe()
        );
        for index in 0..12 {
            assert_eq!(read(&shards, index), expected(index), "sample {index}");
        }
    }

    #[test]
    fn a_shuffle_buffer_order_and_a_second_pass_read_the_same_samples() {
        let (_dir, pattern) = three_shards();
        let shards = open(&pattern, None);
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..2 {
            // A buffer of 3: each request is one of the next few samples in stream order.
            let mut buffer = Vec::new();
            for index in 0..12 {
                buffer.push(index);
                if buffer.len() == 3 {
                    let taken = buffer.swap_remove(rng.random_range(0..3));
                    assert_eq!(read(&shards, taken), expected(taken), "sample {taken}");
                }
            }
            buffer.shuffle(&mut rng);
            for taken in buffer {
                assert_eq!(read(&shards, taken), expected(taken), "sample {taken}");
            }
        }
        // Asked again while its stream is still open and past it: the shard reopens.
        for index in [0, 1, 0, 2] {
            assert_eq!(read(&shards, index), expected(index), "sample {index}");
        }
        // Backwards: each shard opens at its last sample, holding the ones before it.
        for index in (0..12).rev() {
            assert_eq!(read(&shards, index), expected(index), "sample {index}");
        }
    }

    #[test]
    fn another_thread_reads_on_a_cursor_of_its_own() {
        let (_dir, pattern) = three_shards();
        let shards = open(&pattern, None);
        assert_eq!(read(&shards, 5), expected(5));
        std::thread::scope(|scope| {
            scope.spawn(|| assert_eq!(read(&shards, 6), expected(6)));
        });
        assert_eq!(read(&shards, 6), expected(6));
        let mut pixels = vec![0; 18];
        let timed = shards.read_timed(7, &mut pixels).unwrap();
        assert!(
            timed.fetch > std::time::Duration::ZERO,
            "7 is read from the stream"
        );
    }

    #[test]
    fn gzip_bzip2_and_xz_shards_read_the_same_samples_and_time_their_decompression() {
        let dir = TempDir::new().unwrap();
        let kinds = [
            ("tar.gz", Compression::Gzip),
            ("tbz2", Compression::Bzip2),
            ("tar.xz", Compression::Xz),
        ];
        let plain = dir.path().join("plain");
        for (shard, ((first, count), (extension, compression))) in
            [(0, 4), (4, 5), (9, 3)].into_iter().zip(kinds).enumerate()
        {
            write_tar(&plain, &samples(first, count));
            let bytes = compressed(&std::fs::read(&plain).unwrap(), compression);
            std::fs::write(dir.path().join(format!("s-{shard}.{extension}")), bytes).unwrap();
        }
        std::fs::remove_file(&plain).unwrap();
        let shards = open(&format!("{}/s-*", dir.path().display()), None);
        assert_eq!(shards.shards(), Some(vec![0..4, 4..9, 9..12]));
        let mut pixels = vec![0; 18];
        for index in 0..12 {
            let timed = shards.read_timed(index, &mut pixels).unwrap();
            assert_eq!((pixels.clone(), timed.label), expected(index), "{index}");
            assert!(timed.decompress <= timed.fetch, "within the fetch");
            if [0, 4, 9].contains(&index) {
                assert!(
                    timed.decompress > Duration::ZERO,
                    "shard {index} decompressed"
                );
            }
        }
        let reopened = Shards::from_index(
            Path::new(""),
            &DatasetLimits::DEFAULT,
            3,
            [2, 3],
            shards.reopen_index().unwrap(),
        )
        .unwrap();
        assert_eq!(read(&reopened, 10), expected(10), "a worker's reopen");
    }

    #[test]
    fn a_limit_keeps_the_first_samples_and_shortens_the_last_shard() {
        let (_dir, pattern) = three_shards();
        let shards = open(&pattern, Some(6));
        assert_eq!(shards.len(), 6);
        assert_eq!(shards.shards(), Some(vec![0..4, 4..6]));
        assert_eq!(shards.files().len(), 2);
        assert_eq!(read(&shards, 5), expected(5));
    }

    #[test]
    fn the_first_bad_shard_is_named() {
        let (dir, pattern) = three_shards();
        std::fs::write(dir.path().join("s-001.tar"), b"").unwrap();
        let err = try_open(&pattern, None).err().unwrap().to_string();
        assert!(err.contains("s-001.tar: no samples in this shard"), "{err}");
        std::fs::remove_file(dir.path().join("s-000.tar")).unwrap();
        let err = try_open(&pattern, None).err().unwrap().to_string();
        assert!(err.contains("s-000.tar: cannot open"), "{err}");
    }
}
