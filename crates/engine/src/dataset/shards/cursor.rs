//! Reading a shard dataset's samples as streams: each reading thread (a worker thread, a
//! worker process's thread, or the consumer at `num_workers = 0`) keeps a cursor per
//! dataset in thread-local state, keyed by the dataset's id: an open stream on one
//! shard at a position, and the raw bytes of samples it passed over that are not asked
//! for yet. The loader asks each thread for its shards one after the other, front to
//! back, reordered only by a shuffle buffer, so a sample is either ahead of the stream
//! (read forward, holding the samples between), or held already. Moving to another shard
//! first reads the rest of the current one into the held samples (a shuffle buffer still
//! holds them), then drains it so its HTTP connection serves the next GET. A sample the
//! stream has passed and does not hold (asked twice, or again in a later epoch on a
//! stream still open) reopens its shard, which is slow but right. So the held bytes stay
//! within about a shuffle buffer (plus a batch) of raw images per reading thread, and a
//! pass that stops partway lets go of its thread's cursor ([`release`]).
//! A cursor inherited through `fork` (its process id differs) is abandoned, never used:
//! the parent's connection and buffers are not the child's to touch. A fetch says how
//! long it took and how much of that went to decompressing (a compressed shard's
//! streams add their decoders' time to the cursor's clock).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::Catalog;
use super::compression::DecompressClock;
use super::source::{Http, ShardStream};
use crate::cancel::CancelToken;
use crate::dataset::image_decode;
use crate::error::{Error, Result};

thread_local! {
    static CURSORS: RefCell<HashMap<u64, Cursor>> = RefCell::new(HashMap::new());
}

/// The time a fetch took, and the part of it spent decompressing.
pub struct Fetched {
    pub fetch: Duration,
    pub decompress: Duration,
}

/// Gets sample `index` of the dataset `id` (whose samples `catalog` lists) on this
/// thread's cursor and hands its image's bytes to `decode`; returns what `decode`
/// returned and the time spent fetching (zero for a sample already held).
pub fn read<T>(
    id: u64,
    catalog: &Arc<Catalog>,
    index: usize,
    decode: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<(T, Fetched)> {
    CURSORS.with_borrow_mut(|cursors| {
        cursors.retain(|_, cursor| cursor.catalog.strong_count() > 0);
        let pid = std::process::id();
        if cursors.get(&id).is_some_and(|c| c.pid != pid)
            && let Some(inherited) = cursors.remove(&id)
        {
            // Dropping would close the parent's connection state from here (TLS could
            // say goodbye on its behalf); leaking a forked copy is harmless.
            std::mem::forget(inherited);
        }
        let cursor = cursors
            .entry(id)
            .or_insert_with(|| Cursor::new(catalog, pid));
        if let Some(bytes) = cursor.held.remove(&index) {
            let none = Fetched {
                fetch: Duration::ZERO,
                decompress: Duration::ZERO,
            };
            return Ok((decode(&bytes)?, none));
        }
        let started = Instant::now();
        let decompressed_before = cursor.clock.total();
        let fetched = cursor.fetch(catalog, index);
        if fetched.is_err() {
            // Where a failed stream stands is unknown: the next read reopens.
            cursor.open = None;
        }
        fetched?;
        let fetch = Fetched {
            fetch: started.elapsed(),
            decompress: cursor.clock.total().saturating_sub(decompressed_before),
        };
        let decoded = decode(&cursor.bytes);
        if cursor.bytes.capacity() > image_decode::SCRATCH_KEPT_BYTES {
            // One large member must not keep the thread's buffer that large.
            cursor.bytes = Vec::new();
        }
        Ok((decoded?, fetch))
    })
}

/// Drops this thread's cursor on the dataset `id`: its open stream (closing its
/// connection) and the samples it held.
pub fn release(id: u64) {
    CURSORS.with_borrow_mut(|cursors| {
        if let Some(cursor) = cursors.remove(&id)
            && cursor.pid != std::process::id()
        {
            // Inherited through fork: not this process's to close (see `read`).
            std::mem::forget(cursor);
        }
    });
}

/// One thread's reading state for one dataset.
struct Cursor {
    catalog: Weak<Catalog>,
    pid: u32,
    http: Http,
    /// The time this cursor's streams spent decompressing.
    clock: DecompressClock,
    open: Option<OpenShard>,
    /// Samples passed over, by index, waiting to be asked for.
    held: HashMap<usize, Vec<u8>>,
    /// The sample just fetched.
    bytes: Vec<u8>,
}

/// The stream on one shard and the next of its samples it would reach.
struct OpenShard {
    shard: usize,
    next: usize,
    stream: ShardStream,
}

impl Cursor {
    fn new(catalog: &Arc<Catalog>, pid: u32) -> Self {
        Cursor {
            catalog: Arc::downgrade(catalog),
            pid,
            // A read the run no longer wants ends with its stall window.
            http: Http::new(catalog.http_stall_s, CancelToken::new()),
            clock: DecompressClock::default(),
            open: None,
            held: HashMap::new(),
            bytes: Vec::new(),
        }
    }

    /// Reads sample `index` (not held) into `self.bytes`.
    fn fetch(&mut self, catalog: &Catalog, index: usize) -> Result<()> {
        let (shard, sample) = catalog.locate(index);
        let ahead = |open: &OpenShard| open.shard == shard && open.next <= sample;
        if !self.open.as_ref().is_some_and(ahead) {
            if self.open.as_ref().is_some_and(|open| open.shard != shard) {
                self.finish_shard(catalog)?;
            }
            let entry = &catalog.shards[shard];
            let stream =
                ShardStream::open(&entry.location, &self.http, entry.compression, &self.clock)
                    .map_err(|err| Error::run_caused(err.to_string(), err))?;
            self.open = Some(OpenShard {
                shard,
                next: 0,
                stream,
            });
        }
        while self.open.as_ref().is_some_and(|open| open.next < sample) {
            self.pass_one(catalog)?;
        }
        let open = self.open.as_mut().expect("opened above");
        read_sample(catalog, open, &mut self.bytes)?;
        if open.next == catalog.shards[shard].samples.len() {
            self.open.take().expect("open").stream.finish();
        }
        Ok(())
    }

    /// Reads the rest of the open shard into the held samples and closes its stream.
    fn finish_shard(&mut self, catalog: &Catalog) -> Result<()> {
        while let Some(open) = &self.open {
            if open.next == catalog.shards[open.shard].samples.len() {
                self.open.take().expect("open").stream.finish();
                break;
            }
            self.pass_one(catalog)?;
        }
        Ok(())
    }

    /// Reads the open shard's next sample into the held samples.
    fn pass_one(&mut self, catalog: &Catalog) -> Result<()> {
        let open = self.open.as_mut().expect("a shard is open");
        let index = catalog.index_of(open.shard, open.next);
        let mut bytes = Vec::new();
        read_sample(catalog, open, &mut bytes)?;
        self.held.insert(index, bytes);
        Ok(())
    }
}

/// Reads the open shard's next sample's image into `bytes`.
fn read_sample(catalog: &Catalog, open: &mut OpenShard, bytes: &mut Vec<u8>) -> Result<()> {
    let shard = &catalog.shards[open.shard];
    let sample = &shard.samples[open.next];
    open.stream
        .read_at(sample.offset, sample.size, bytes)
        .map_err(|err| {
            Error::run_caused(
                format!(
                    "{}: {}: the shard stopped: {err}",
                    shard.location, sample.member
                ),
                err,
            )
        })?;
    open.next += 1;
    Ok(())
}
