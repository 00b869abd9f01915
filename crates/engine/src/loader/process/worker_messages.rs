//! What parent and worker say to each other over their pipes. A frame is a little-endian
//! `u32` header length, a `u64` data length, the header (a JSON message) and the data
//! (raw bytes: a dataset copy, or a batch's pixels when batches travel by pipe). JSON
//! keeps the messages readable; the bulk never goes through it.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

use crate::dataset::{DatasetSpec, SampleShape};
use crate::preset::TransformAt;
use crate::transform::{Normalize, PipelineSpec};

/// What a spawned worker is told first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerConfig {
    pub worker: usize,
    /// Where to open the dataset (`reopen`); `None` when the frame's data holds a copy
    /// or the worker serves the shared image.
    pub dataset: Option<DatasetSpec>,
    pub samples: Option<usize>,
    /// What the parent's dataset gave to reopen it without slow work (a shard index).
    #[serde(default)]
    pub index: Option<serde_json::Value>,
    /// The copy's layout, when the frame's data holds one.
    pub copy: Option<CopyLayout>,
    pub pipeline: PipelineSpec,
    /// Where the pipeline runs: on whole batches or per sample.
    #[serde(default)]
    pub transform_at: TransformAt,
    pub normalize: Normalize,
    /// Descriptors of the shared-memory ring; empty when batches travel by pipe.
    pub segments: Vec<i32>,
    /// The shared dataset image to serve (`reopen` of a dataset without files).
    pub shared: Option<SharedImageConfig>,
}

/// The shared dataset image a spawned worker inherited: its descriptor and layout.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SharedImageConfig {
    pub fd: i32,
    pub layout: CopyLayout,
}

/// How a packed dataset (a copy, or the shared image) is laid out: every sample's
/// pixels, then every label as `i64`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct CopyLayout {
    pub len: usize,
    pub shape: SampleShape,
}

/// Parent to worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ToWorker {
    Start(Box<WorkerConfig>),
    Task {
        epoch: u64,
        batch: usize,
        indices: Vec<usize>,
        seed: u64,
    },
    /// The parent has taken the batch out of this segment; it may be reused.
    SegmentFree {
        segment: usize,
    },
}

/// Worker to parent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ToParent {
    Ready,
    /// The worker could not start (the dataset would not open, say).
    StartFailed {
        error: String,
        bad_input: bool,
    },
    Batch(Box<BatchHeader>),
    Failed {
        epoch: u64,
        batch: usize,
        error: String,
        bad_input: bool,
    },
}

/// A finished batch; its pixels are in `segment`, or follow as the frame's data.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchHeader {
    pub epoch: u64,
    pub batch: usize,
    /// The float images' shape.
    pub shape: Vec<i64>,
    pub labels: Vec<i64>,
    pub bytes: usize,
    pub segment: Option<usize>,
    pub read_s: f64,
    pub fetch_s: f64,
    pub decompress_s: f64,
    pub collate_s: f64,
    pub transform_s: f64,
    /// The worker's part of the crossing: writing the pixels out.
    pub put_s: f64,
}

/// Writes one frame.
pub fn write_frame<M: Serialize>(out: &mut impl Write, message: &M, data: &[u8]) -> io::Result<()> {
    let header = serde_json::to_vec(message).map_err(io::Error::other)?;
    let header_len = u32::try_from(header.len()).map_err(io::Error::other)?;
    let mut head = Vec::with_capacity(12 + header.len());
    head.extend_from_slice(&header_len.to_le_bytes());
    head.extend_from_slice(&(data.len() as u64).to_le_bytes());
    head.extend_from_slice(&header);
    out.write_all(&head)?;
    out.write_all(data)?;
    out.flush()
}

/// Reads a frame's header; the caller then reads exactly `data_len` bytes of data.
/// `Ok(None)` at a clean end of file.
pub fn read_header<M: for<'de> Deserialize<'de>>(
    input: &mut impl Read,
) -> io::Result<Option<(M, u64)>> {
    let mut lengths = [0u8; 12];
    match input.read_exact(&mut lengths[..1]) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(err) => return Err(err),
    }
    input.read_exact(&mut lengths[1..])?;
    let (header_len, data_len) = lengths.split_at(4);
    let header_len = u32::from_le_bytes(header_len.try_into().map_err(io::Error::other)?);
    let data_len = u64::from_le_bytes(data_len.try_into().map_err(io::Error::other)?);
    let mut header = vec![0; header_len as usize];
    input.read_exact(&mut header)?;
    let message = serde_json::from_slice(&header).map_err(io::Error::other)?;
    Ok(Some((message, data_len)))
}

/// Reads a frame's data into a new buffer.
pub fn read_data(input: &mut impl Read, data_len: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(data_len).map_err(io::Error::other)?;
    let mut data = Vec::new();
    data.try_reserve_exact(len).map_err(io::Error::other)?;
    data.resize(len, 0);
    input.read_exact(&mut data)?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_end_cleanly() {
        let mut wire = Vec::new();
        let task = ToWorker::Task {
            epoch: 1,
            batch: 2,
            indices: vec![5, 6],
            seed: 9,
        };
        write_frame(&mut wire, &task, b"abc").unwrap();
        write_frame(&mut wire, &ToWorker::SegmentFree { segment: 3 }, &[]).unwrap();
        let mut input = wire.as_slice();
        let (message, len) = read_header::<ToWorker>(&mut input).unwrap().unwrap();
        assert!(matches!(message, ToWorker::Task { batch: 2, .. }));
        assert_eq!(read_data(&mut input, len).unwrap(), b"abc");
        let (message, len) = read_header::<ToWorker>(&mut input).unwrap().unwrap();
        assert!(matches!(message, ToWorker::SegmentFree { segment: 3 }));
        assert_eq!(len, 0);
        assert!(read_header::<ToWorker>(&mut input).unwrap().is_none());
    }

    #[test]
    fn a_cut_frame_is_an_error_not_an_end() {
        let mut wire = Vec::new();
        write_frame(&mut wire, &ToParent::Ready, &[]).unwrap();
        let mut input = &wire[..wire.len() - 1];
        assert!(read_header::<ToParent>(&mut input).is_err());
    }
}
