//! Datasets: where samples come from. A [`Dataset`] knows its length and sample shape
//! and copies sample `i` into a caller's buffer; it is shared (`Arc`) by every worker
//! thread, so file-backed datasets are memory-mapped once and N workers cost no extra
//! copies. [`open`] turns a preset's [`DatasetSpec`] into a dataset, checking the files
//! up front so that bad input is reported before a run starts.

mod files;
mod idx;
mod image_decode;
mod image_folder;
mod image_header;
mod limits;
mod npy;
pub mod python_dataset;
mod shards;
mod subset;
mod synthetic;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::pair::height_width;

pub use idx::{IdxError, IdxLayout, IdxRole, idx_files, parse_idx};
pub use image_decode::decode_sample as decode_image;
pub use image_folder::{IMAGE_EXTENSIONS, ImageFolderFiles, ImageShape, list as list_image_folder};
pub use image_header::{BadHeader, check_reader as check_image_header};
pub use limits::DatasetLimits;
pub use npy::{Dtype as NpyDtype, Kind as NpyKind, NpyHeader, parse_npy_header};
pub use shards::check_shard_file;
pub use shards::index_bytes as index_shard_bytes;
pub use shards::pattern::{ShardLocation, shard_locations};
pub use subset::Subset;
pub use synthetic::SYNTHETIC_LEN;

/// Which reader to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetKind {
    /// FashionMNIST-shaped images generated in memory from `seed`; needs no files.
    #[default]
    Synthetic,
    /// MNIST-family IDX files (plain or .gz): a directory or the images file.
    Idx,
    /// One sub-folder per class holding image files (PNG, JPEG, BMP, PPM/PGM, TIFF, WebP).
    ImageFolder,
    /// A uint8 or float32 .npy array, (N, C, H, W) or (N, H, W), plus optional labels.
    Npy,
    /// The user's own PyTorch Dataset: `factory(**args)` from the module at `path`, run
    /// by the pytorch runtime only (see [`python`]).
    Python,
    /// Tar shards in WebDataset's layout: `path` is a pattern (brace ranges such as
    /// `train-{000000..000099}.tar`, globs, or an `http://` URL pattern); each shard's
    /// members are grouped into samples by key (`0001.jpg` with `0001.cls`), decoded as
    /// `image_folder` decodes, and read sequentially, shard by shard.
    Shards,
}

impl DatasetKind {
    /// Every kind, in the order the app lists them.
    pub const ALL: [DatasetKind; 6] = [
        DatasetKind::Synthetic,
        DatasetKind::Idx,
        DatasetKind::ImageFolder,
        DatasetKind::Npy,
        DatasetKind::Python,
        DatasetKind::Shards,
    ];

    /// What the app calls it (a preset writes the snake_case name).
    pub fn label(self) -> &'static str {
        match self {
            DatasetKind::Synthetic => "synthetic",
            DatasetKind::Idx => "idx",
            DatasetKind::ImageFolder => "image folder",
            DatasetKind::Npy => "npy",
            DatasetKind::Python => "python",
            DatasetKind::Shards => "tar shards",
        }
    }
}

/// What the preset says about the dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    #[serde(default)]
    pub kind: DatasetKind,
    /// The file or directory to read (every kind but `synthetic`; for `python`, the module).
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Labels file for `npy` (optional) and `idx` (found beside the images if omitted).
    #[serde(default)]
    pub labels: Option<PathBuf>,
    /// Channels the images are converted to (`image_folder`): 1 (grey) or 3 (RGB).
    #[serde(default = "default_channels")]
    pub channels: usize,
    /// `[height, width]` (or `(h, w)`) that `image_folder` images are resized to.
    #[serde(default = "default_image_size", deserialize_with = "height_width")]
    pub image_size: [usize; 2],
    /// Seed of the synthetic generator.
    #[serde(default)]
    pub seed: u64,
    /// `python`: the module's function that returns the Dataset.
    #[serde(default)]
    pub factory: Option<String>,
    /// `python`: the factory's keyword arguments (strings, numbers, booleans, lists).
    #[serde(default)]
    pub args: BTreeMap<String, serde_json::Value>,
    /// `python`: the module's function whose result is the DataLoader's `collate_fn`.
    #[serde(default)]
    pub collate: Option<String>,
    /// `shards`: samples each worker's shuffle buffer holds when the run shuffles, mixing
    /// within and across its shards as WebDataset's `shuffle(N)` does; 0 keeps member
    /// order (the shard order is still shuffled).
    #[serde(default = "default_shuffle_buffer")]
    pub shuffle_buffer: usize,
    /// The caps on what the dataset's files may make us allocate (`docs/limits.md`).
    #[serde(default, skip_serializing_if = "DatasetLimits::is_default")]
    pub limits: DatasetLimits,
}

fn default_channels() -> usize {
    1
}

fn default_image_size() -> [usize; 2] {
    [28, 28]
}

fn default_shuffle_buffer() -> usize {
    1000
}

impl Default for DatasetSpec {
    fn default() -> Self {
        DatasetSpec {
            kind: DatasetKind::Synthetic,
            path: None,
            labels: None,
            channels: default_channels(),
            image_size: default_image_size(),
            seed: 0,
            factory: None,
            args: BTreeMap::new(),
            collate: None,
            shuffle_buffer: default_shuffle_buffer(),
            limits: DatasetLimits::DEFAULT,
        }
    }
}

/// The element type of a sample's pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PixelKind {
    U8,
    F32,
}

impl PixelKind {
    pub fn bytes(self) -> usize {
        match self {
            PixelKind::U8 => 1,
            PixelKind::F32 => 4,
        }
    }
}

/// The shape of one sample: channels-first pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleShape {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub pixel: PixelKind,
}

impl SampleShape {
    /// Bytes one sample takes in a buffer.
    pub fn sample_bytes(&self) -> usize {
        self.channels * self.height * self.width * self.pixel.bytes()
    }
}

/// A sample read by [`Dataset::read_timed`]: its label, the time its fetch took, and
/// the part of that fetch spent decompressing (a compressed shard's stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedRead {
    pub label: i64,
    pub fetch: Duration,
    pub decompress: Duration,
}

/// A source of labelled samples, shared by all workers.
pub trait Dataset: Send + Sync {
    /// Number of samples.
    fn len(&self) -> usize;

    /// Samples in the whole dataset: more than [`len`](Dataset::len) where a preset's
    /// `samples` cut it.
    fn whole_len(&self) -> usize {
        self.len()
    }

    /// True when there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shape every sample has.
    fn shape(&self) -> SampleShape;

    /// Copies sample `index` (channels-first, native-endian pixels) into `pixels`, which
    /// is exactly `shape().sample_bytes()` long, and returns its label.
    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64>;

    /// [`Dataset::read`], also saying how long getting the sample's bytes from storage
    /// took (the fetch: reading a file or a shard's stream, copying out of a mapping),
    /// apart from decoding them. The default, for a dataset without storage, reports none.
    fn read_timed(&self, index: usize, pixels: &mut [u8]) -> Result<TimedRead> {
        let label = self.read(index, pixels)?;
        Ok(TimedRead {
            label,
            fetch: Duration::ZERO,
            decompress: Duration::ZERO,
        })
    }

    /// True when reading a sample is nothing but getting its bytes from storage (a copy
    /// out of a memory-mapped file): the loader then counts a batch's whole read as its
    /// fetch, timing the batch once rather than every sample.
    fn read_is_fetch(&self) -> bool {
        false
    }

    /// One line for humans: the kind, the source and the size.
    fn describe(&self) -> String;

    /// For a dataset read as a stream of shards (tar shards): each shard's samples as a
    /// range of indices in reading order, the ranges covering `0..len()` in order. The
    /// loader then hands whole shards to ranks and workers and shuffles through a
    /// buffer, as WebDataset does, instead of drawing indices; each worker then asks for
    /// its samples in an order that reads its shards one after the other, front to back.
    /// `None` (the default) for a dataset read by index.
    fn shards(&self) -> Option<Vec<Range<usize>>> {
        None
    }

    /// The local files the samples are read from (what `cache: cold` evicts from the
    /// page cache before each epoch); empty for a dataset with no local files.
    fn files(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    /// For a dataset of one file per sample (an image folder), each sample's file and
    /// label in index order, before `samples` cut it: what the PyTorch runtime's
    /// `ImageFolder` reads, so that both runtimes read the same files. `None` otherwise.
    fn labelled_files(&self) -> Option<Vec<(PathBuf, i64)>> {
        None
    }

    /// What a spawned worker needs beside the preset's spec to reopen this dataset
    /// without redoing slow work (a shard dataset's index, which took a pass over every
    /// shard, over the network for URLs; an image folder's listing, which took a walk and
    /// a check of every file's header); `None` where the spec is enough. See [`reopen`].
    fn reopen_index(&self) -> Option<serde_json::Value> {
        None
    }

    /// Unmaps the pages of this process's memory maps of the files (they stay mapped,
    /// and fault back in from the page cache or storage when read): the kernel never
    /// evicts a mapped page, so `cache: cold` releases them before it evicts.
    fn release_mapped_pages(&self) -> Result<()> {
        Ok(())
    }

    /// What opening the dataset skipped or changed that the user should hear of (a
    /// folder an image folder's walk had already listed); see [`open_warnings`].
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Lets go of what the calling thread holds to read this dataset (a shard dataset's
    /// open stream and the samples it passed over), so that its next read starts from
    /// storage: after a pass that stopped partway (the process's warm-up).
    fn release_thread_reader(&self) {}
}

/// How far opening a dataset has got: `checked` of its `total` files (image folders
/// check every file's header, which takes a while for a large folder).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenProgress {
    pub checked: usize,
    pub total: usize,
}

/// Opens the dataset a preset describes, limited to its first `samples` samples.
pub fn open(spec: &DatasetSpec, samples: Option<usize>) -> Result<Arc<dyn Dataset>> {
    open_with_progress(spec, samples, &mut |_| {}, &CancelToken::new())
}

/// [`open`], telling `progress` how far it has got while it checks files; once `cancel`
/// is cancelled, the open stops within a second (between files and shards, and in any
/// wait on a server) with `Error::Cancelled`.
pub fn open_with_progress(
    spec: &DatasetSpec,
    samples: Option<usize>,
    progress: &mut dyn FnMut(OpenProgress),
    cancel: &CancelToken,
) -> Result<Arc<dyn Dataset>> {
    let path = || {
        spec.path.clone().ok_or_else(|| {
            Error::value(format!(
                "dataset.path: the {} dataset needs a path",
                spec.kind.label()
            ))
        })
    };
    let dataset: Arc<dyn Dataset> = match spec.kind {
        DatasetKind::Synthetic => Arc::new(synthetic::Synthetic::generate(
            samples.unwrap_or(SYNTHETIC_LEN),
            spec.seed,
        )?),
        DatasetKind::Idx => Arc::new(idx::Idx::open(
            &path()?,
            spec.labels.as_deref(),
            &spec.limits,
        )?),
        DatasetKind::ImageFolder => Arc::new(image_folder::ImageFolder::open(
            &path()?,
            spec.channels,
            spec.image_size,
            &spec.limits,
            progress,
            cancel,
        )?),
        DatasetKind::Npy => Arc::new(npy::Npy::open(&path()?, spec.labels.as_deref())?),
        DatasetKind::Python => return Err(Error::value(python_dataset::ENGINE_REFUSAL)),
        DatasetKind::Shards => {
            let path = path()?;
            let pattern = path.to_str().ok_or_else(|| {
                Error::value(format!("dataset.path: {} is not UTF-8", path.display()))
            })?;
            let shards = shards::Shards::open(
                pattern,
                &spec.limits,
                spec.channels,
                spec.image_size,
                samples,
                progress,
                cancel,
            )?;
            Arc::new(shards)
        }
    };
    if dataset.is_empty() {
        return Err(Error::value(format!(
            "{}: the dataset has no samples",
            dataset.describe()
        )));
    }
    Ok(match samples {
        Some(n) if n < dataset.len() => Arc::new(Subset::new(dataset, n)),
        _ => dataset,
    })
}

/// Opens the dataset `spec` describes in a spawned worker: from `index` (what the
/// parent's dataset gave as [`Dataset::reopen_index`]) where there is one, else as
/// [`open`] does; cut to `samples` as [`open`] cuts it.
pub fn reopen(
    spec: &DatasetSpec,
    samples: Option<usize>,
    index: Option<serde_json::Value>,
) -> Result<Arc<dyn Dataset>> {
    let path = spec.path.as_deref().unwrap_or(std::path::Path::new(""));
    let dataset: Arc<dyn Dataset> = match (spec.kind, index) {
        (DatasetKind::Shards, Some(index)) => Arc::new(shards::Shards::from_index(
            path,
            &spec.limits,
            spec.channels,
            spec.image_size,
            index,
        )?),
        (DatasetKind::ImageFolder, Some(index)) => Arc::new(image_folder::ImageFolder::from_index(
            path,
            spec.channels,
            spec.image_size,
            &spec.limits,
            index,
        )?),
        _ => return open(spec, samples),
    };
    Ok(match samples {
        Some(n) if n < dataset.len() => Arc::new(Subset::new(dataset, n)),
        _ => dataset,
    })
}

/// The warnings of a dataset `open` gave for `samples`: what opening it skipped
/// ([`Dataset::warnings`]), and a `samples` larger than the dataset (all of it is used).
pub fn open_warnings(samples: Option<usize>, dataset: &dyn Dataset) -> Vec<String> {
    let mut warnings = dataset.warnings();
    if let Some(asked) = samples.filter(|&n| n > dataset.len()) {
        warnings.push(format!(
            "samples = {asked} but the dataset holds {}: all {} are used",
            dataset.len(),
            dataset.len()
        ));
    }
    warnings
}
