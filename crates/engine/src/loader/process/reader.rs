//! Talking to a running process worker: the writer thread that feeds its task pipe, and
//! the reader thread that turns its frames into [`WorkerMessage`]s, copying each batch
//! out of its segment (or the pipe) into a fresh tensor and freeing the segment at once.

use std::fs::File;
use std::io::BufReader;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use memmap2::Mmap;
use tch::{Device, Kind, Tensor};

use super::fds::{ChildProcess, SharedFd};
use super::worker_messages::{
    BatchHeader, ToParent, ToWorker, read_data, read_header, write_frame,
};
use super::{Outgoing, ended};
use crate::error::{Error, Result};
use crate::loader::collate::BuiltBatch;
use crate::loader::pool::WorkerMessage;

pub(super) fn write_tasks(pipe: &SharedFd, queue: &Receiver<Outgoing>) {
    let mut out = pipe.file();
    for outgoing in queue {
        let sent = match &outgoing {
            Outgoing::Start(message, copy) => {
                let data = copy.as_ref().map_or(&[][..], |copy| copy.1.as_slice());
                write_frame(&mut out, message, data)
            }
            Outgoing::Message(message) => write_frame(&mut out, message, &[]),
            Outgoing::Close => return,
        };
        if sent.is_err() {
            // The worker is gone; its reader reports how it ended.
            return;
        }
    }
}

/// The loader's side of one worker's results pipe.
pub(super) struct Reader {
    pub(super) worker: usize,
    pub(super) child: Arc<ChildProcess>,
    pub(super) asked_at: Instant,
    /// Each segment and the loader's mapping of it.
    pub(super) segments: Vec<(SharedFd, Option<Mmap>)>,
    pub(super) free: Sender<Outgoing>,
    pub(super) results: Sender<WorkerMessage>,
}

impl Reader {
    pub(super) fn run(mut self, pipe: &SharedFd) {
        let mut input = BufReader::new(pipe.file());
        let mut ready = false;
        loop {
            let message = match read_header::<ToParent>(&mut input) {
                Ok(Some((message, data_len))) => self.receive(message, data_len, &mut input),
                Ok(None) | Err(_) => Err(self.died(ready)),
            };
            let message = message.unwrap_or_else(|error| WorkerMessage::Died { error });
            let ended = matches!(message, WorkerMessage::Died { .. });
            ready |= matches!(message, WorkerMessage::Ready { .. });
            if self.results.send(message).is_err() || ended {
                return;
            }
        }
    }

    fn receive(
        &mut self,
        message: ToParent,
        data_len: u64,
        input: &mut BufReader<&File>,
    ) -> Result<WorkerMessage> {
        let worker = self.worker;
        Ok(match message {
            ToParent::Ready => WorkerMessage::Ready {
                worker,
                startup: self.asked_at.elapsed(),
            },
            ToParent::StartFailed { error, bad_input } => {
                return Err(rebuild_error(
                    format!("loader-worker-{worker} could not start: {error}"),
                    bad_input,
                ));
            }
            ToParent::Failed {
                epoch,
                batch,
                error,
                bad_input,
            } => WorkerMessage::Failed {
                worker,
                epoch,
                batch,
                error: rebuild_error(error, bad_input),
            },
            ToParent::Batch(header) => {
                let built = self.take_batch(&header, data_len, input)?;
                WorkerMessage::Batch {
                    epoch: header.epoch,
                    batch: header.batch,
                    built: Box::new(built),
                }
            }
        })
    }

    /// Copies a batch out of its segment (freeing it) or the pipe into fresh tensors.
    fn take_batch(
        &mut self,
        header: &BatchHeader,
        data_len: u64,
        input: &mut BufReader<&File>,
    ) -> Result<BuiltBatch> {
        let started = Instant::now();
        let worker = self.worker;
        let broken = |err: std::io::Error| {
            Error::run_caused(
                format!("loader-worker-{worker}: reading a batch: {err}"),
                err,
            )
        };
        let images = Tensor::f_empty(header.shape.as_slice(), (Kind::Float, Device::Cpu))?;
        if images.numel() * 4 != header.bytes {
            return Err(Error::run(format!(
                "loader-worker-{worker} sent a batch of the wrong size"
            )));
        }
        // SAFETY: `images` was just allocated as a contiguous CPU tensor of exactly
        // `header.bytes` bytes (checked above) and nothing else refers to it yet.
        let target =
            unsafe { std::slice::from_raw_parts_mut(images.data_ptr() as *mut u8, header.bytes) };
        match header.segment {
            Some(segment) => {
                let map = self.mapping(segment, header.bytes).map_err(broken)?;
                target.copy_from_slice(&map[..header.bytes]);
                // Nobody listening means the pool is going away.
                let _ = self
                    .free
                    .send(Outgoing::Message(ToWorker::SegmentFree { segment }));
                read_data(input, data_len).map_err(broken)?;
            }
            None => {
                if data_len != header.bytes as u64 {
                    return Err(Error::run(format!(
                        "loader-worker-{worker} sent a batch of the wrong size"
                    )));
                }
                std::io::Read::read_exact(input, target).map_err(broken)?;
            }
        }
        let labels = Tensor::f_from_slice(&header.labels)?;
        let seconds = Duration::from_secs_f64;
        Ok(BuiltBatch {
            images,
            labels,
            collate: seconds(header.collate_s),
            read: seconds(header.read_s),
            fetch: seconds(header.fetch_s),
            decompress: seconds(header.decompress_s),
            transform: seconds(header.transform_s),
            transfer: seconds(header.put_s) + started.elapsed(),
        })
    }

    /// The loader's mapping of `segment`, remapped when the worker has grown it.
    fn mapping(&mut self, segment: usize, bytes: usize) -> std::io::Result<&Mmap> {
        let (fd, map) = self
            .segments
            .get_mut(segment)
            .ok_or_else(|| std::io::Error::other(format!("no segment {segment}")))?;
        if map.as_ref().is_none_or(|m| m.len() < bytes) {
            // SAFETY: the worker wrote this region before announcing the batch and will
            // not touch it again until the loader frees the segment.
            *map = Some(unsafe { Mmap::map(fd.file())? });
        }
        match map {
            Some(map) if map.len() >= bytes => Ok(map),
            _ => Err(std::io::Error::other(
                "the segment is smaller than the batch",
            )),
        }
    }

    /// The error for a worker whose pipe ended: how its process ended.
    fn died(&self, ready: bool) -> Error {
        let when = if ready { "" } else { " before it was ready" };
        ended(self.worker, &self.child, when)
    }
}

fn rebuild_error(message: String, bad_input: bool) -> Error {
    if bad_input {
        Error::value(message)
    } else {
        Error::run(message)
    }
}
