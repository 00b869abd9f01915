//! A dataset cut to its first samples, as a preset's `samples` asks: every question the
//! loader asks of it is passed to the whole dataset, within the first `len` samples.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use super::{Dataset, SampleShape, TimedRead};
use crate::error::Result;

/// The first `len` samples of another dataset.
pub struct Subset {
    inner: Arc<dyn Dataset>,
    len: usize,
}

impl Subset {
    /// The first `len` samples of `inner`, which holds more.
    pub fn new(inner: Arc<dyn Dataset>, len: usize) -> Self {
        Subset { inner, len }
    }
}

impl Dataset for Subset {
    fn len(&self) -> usize {
        self.len
    }

    fn whole_len(&self) -> usize {
        self.inner.whole_len()
    }

    fn shape(&self) -> SampleShape {
        self.inner.shape()
    }

    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        self.inner.read(index, pixels)
    }

    fn read_timed(&self, index: usize, pixels: &mut [u8]) -> Result<TimedRead> {
        self.inner.read_timed(index, pixels)
    }

    fn read_is_fetch(&self) -> bool {
        self.inner.read_is_fetch()
    }

    fn describe(&self) -> String {
        format!("first {} of {}", self.len, self.inner.describe())
    }

    fn files(&self) -> Vec<PathBuf> {
        self.inner.files()
    }

    fn labelled_files(&self) -> Option<Vec<(PathBuf, i64)>> {
        self.inner.labelled_files()
    }

    /// The whole dataset's: [`reopen`](super::reopen) cuts it again.
    fn reopen_index(&self) -> Option<serde_json::Value> {
        self.inner.reopen_index()
    }

    fn release_mapped_pages(&self) -> Result<()> {
        self.inner.release_mapped_pages()
    }

    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }

    fn release_thread_reader(&self) {
        self.inner.release_thread_reader();
    }

    fn shards(&self) -> Option<Vec<Range<usize>>> {
        let shards = self.inner.shards()?;
        Some(
            shards
                .into_iter()
                .map(|shard| shard.start..shard.end.min(self.len))
                .filter(|shard| !shard.is_empty())
                .collect(),
        )
    }
}
