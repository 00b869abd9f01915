//! The shared dataset image: how a spawned worker "reopens" a dataset that has no files
//! (the synthetic one) without generating it again. The loader packs its dataset once
//! into a sealed, read-only shared-memory image and keeps it for its whole life, so a
//! pool restarted every epoch reuses it; each spawned worker inherits the descriptor,
//! maps it read-only and serves samples straight from the mapping. The pages are the
//! same for every worker, so a worker adds no private copy of the dataset (its PSS holds
//! only its share of them), and its start-up is the mapping, not the generation.

use std::sync::OnceLock;

use memmap2::Mmap;

use super::copy::{self, PackedDataset};
use super::fds::{self, SharedFd};
use super::worker_messages::{CopyLayout, SharedImageConfig};
use crate::dataset::{Dataset, DatasetKind, DatasetSpec};
use crate::error::{Error, Result};

/// A packed dataset in shared memory.
pub struct SharedImage {
    pub fd: SharedFd,
    pub layout: CopyLayout,
}

/// A loader's image, made the first time a pool needs it and closed with the loader.
#[derive(Default)]
pub struct ImageCache(OnceLock<SharedImage>);

impl ImageCache {
    /// The image of `dataset`, packing it on first use.
    pub fn get_or_pack(&self, dataset: &dyn Dataset) -> Result<&SharedImage> {
        if let Some(image) = self.0.get() {
            return Ok(image);
        }
        let image = pack(dataset)?;
        // A loader starts its pools one at a time, so nobody else can have set it.
        Ok(self.0.get_or_init(|| image))
    }
}

/// Whether a spawned worker reopening `spec` gets the shared image: a dataset without
/// files would otherwise be generated again in every worker.
pub fn serves_image(spec: &DatasetSpec) -> bool {
    spec.kind == DatasetKind::Synthetic
}

fn pack(dataset: &dyn Dataset) -> Result<SharedImage> {
    let layout = copy::layout_of(dataset);
    let fd = fds::sealed_image(copy::packed_bytes(layout)?, |bytes| {
        copy::pack_into(dataset, bytes)
    })?;
    Ok(SharedImage { fd, layout })
}

/// The worker's side: maps the inherited image read-only (closing the descriptor, which
/// the mapping no longer needs).
pub fn map(config: SharedImageConfig) -> Result<PackedDataset<Mmap>> {
    let file = fds::inherited(config.fd).ok_or_else(|| {
        Error::run(format!(
            "the shared dataset (fd {}) was not inherited",
            config.fd
        ))
    })?;
    // SAFETY: the image is sealed against writing, shrinking and growing (Linux), and
    // elsewhere nobody writes it after the loader packed it, so the mapping never changes
    // under the worker.
    let bytes = unsafe { Mmap::map(&file) }.map_err(|err| {
        Error::run_caused(format!("could not map the shared dataset: {err}"), err)
    })?;
    PackedDataset::new(config.layout, bytes)
}
