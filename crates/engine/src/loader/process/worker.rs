//! The worker's side: a loop that reads tasks from its pipe, builds each batch with the
//! same code thread workers use, and hands it back through a free segment of its
//! shared-memory ring (or as the data of a pipe frame), until the pipe reaches
//! end-of-file. [`worker_main`] is a spawned worker (the hidden `__worker` command);
//! [`forked_worker`] is what a forked child runs.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Instant;

use memmap2::MmapMut;
use tch::Kind;

use super::copy::{CopiedDataset, PackedDataset};
use super::worker_messages::{
    BatchHeader, ToParent, ToWorker, WorkerConfig, read_data, read_header, write_frame,
};
use super::{fds, shared};
use crate::dataset::{self, Dataset};
use crate::error::{Error, Result};
use crate::loader::collate::{BuiltBatch, build_batch};
use crate::loader::threads::panic_message;
use crate::transform::Pipeline;

/// A spawned worker: reads its config from `tasks_fd`; opens, maps or receives the
/// dataset; then serves tasks. Returns the process exit code.
pub fn worker_main(tasks_fd: i32, results_fd: i32) -> i32 {
    tch::set_num_threads(1);
    let (Some(tasks), Some(results)) = (fds::inherited(tasks_fd), fds::inherited(results_fd))
    else {
        eprintln!(
            "error: __worker is started by the loader, not by hand (fd {tasks_fd} or \
             {results_fd} is not open)"
        );
        return 2;
    };
    let mut input = BufReader::new(&tasks);
    let start = match read_start(&mut input) {
        Ok(start) => start,
        Err(error) => return start_failed(&results, &error),
    };
    let (config, dataset, pipeline) = start;
    let Some(segments) = config
        .segments
        .iter()
        .map(|&fd| fds::inherited(fd))
        .collect::<Option<Vec<File>>>()
    else {
        let error = Error::run("the loader's shared-memory segments were not inherited");
        return start_failed(&results, &error);
    };
    let segments: Vec<&File> = segments.iter().collect();
    serve_or_code(
        config.worker,
        &*dataset,
        &pipeline,
        input,
        &results,
        &segments,
    )
}

/// A forked worker: the dataset and pipeline are the parent's, inherited.
pub fn forked_worker(
    worker: usize,
    dataset: &Arc<dyn Dataset>,
    pipeline: &Pipeline,
    copy: bool,
    tasks: &File,
    results: &File,
    segments: &[&File],
) -> i32 {
    let copied;
    let dataset: &dyn Dataset = if copy {
        copied = match CopiedDataset::from_dataset(&**dataset) {
            Ok(copied) => copied,
            Err(error) => return start_failed(results, &error),
        };
        &copied
    } else {
        &**dataset
    };
    serve_or_code(
        worker,
        dataset,
        pipeline,
        BufReader::new(tasks),
        results,
        segments,
    )
}

fn serve_or_code(
    worker: usize,
    dataset: &dyn Dataset,
    pipeline: &Pipeline,
    tasks: impl Read,
    results: &File,
    segments: &[&File],
) -> i32 {
    if write_frame(&mut &*results, &ToParent::Ready, &[]).is_err() {
        return 1;
    }
    let mut server = Server {
        worker,
        tasks,
        results,
        segments: segments
            .iter()
            .map(|file| Segment { file, map: None })
            .collect(),
        free: vec![true; segments.len()],
        pending: VecDeque::new(),
    };
    match server.serve(dataset, pipeline) {
        Ok(()) => 0,
        // The parent is gone or closed the pipe mid-frame: nobody to report to.
        Err(_) => 1,
    }
}

type Start = (WorkerConfig, Box<dyn Dataset>, Pipeline);

fn read_start(input: &mut impl Read) -> Result<Start> {
    let broken =
        |err: io::Error| Error::run_caused(format!("reading the worker's config: {err}"), err);
    let (message, data_len) = read_header::<ToWorker>(input)
        .map_err(broken)?
        .ok_or_else(|| Error::run("the loader closed the pipe before sending a config"))?;
    let ToWorker::Start(config) = message else {
        return Err(Error::run("the first message was not the worker's config"));
    };
    let data = read_data(input, data_len).map_err(broken)?;
    let dataset: Box<dyn Dataset> = match (&config.copy, config.shared, &config.dataset) {
        (Some(layout), _, _) => Box::new(PackedDataset::new(*layout, data)?),
        (None, Some(shared), _) => Box::new(shared::map(shared)?),
        (None, None, Some(spec)) => Box::new(ArcDataset(dataset::reopen(
            spec,
            config.samples,
            config.index.clone(),
        )?)),
        (None, None, None) => return Err(Error::run("the worker was sent no dataset")),
    };
    let pipeline = Pipeline::new(
        &config.pipeline,
        &config.normalize,
        dataset.shape().channels,
    )?
    .at(config.transform_at);
    Ok((*config, dataset, pipeline))
}

/// An opened dataset behind the box the worker holds.
struct ArcDataset(Arc<dyn Dataset>);

impl Dataset for ArcDataset {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn shape(&self) -> dataset::SampleShape {
        self.0.shape()
    }
    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        self.0.read(index, pixels)
    }
    fn read_timed(&self, index: usize, pixels: &mut [u8]) -> Result<dataset::TimedRead> {
        self.0.read_timed(index, pixels)
    }
    fn read_is_fetch(&self) -> bool {
        self.0.read_is_fetch()
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
}

fn start_failed(results: &File, error: &Error) -> i32 {
    let message = ToParent::StartFailed {
        error: error.to_string(),
        bad_input: error.is_bad_input(),
    };
    let _ = write_frame(&mut &*results, &message, &[]);
    2
}

struct Task {
    epoch: u64,
    batch: usize,
    indices: Vec<usize>,
    seed: u64,
}

struct Segment<'a> {
    file: &'a File,
    map: Option<MmapMut>,
}

struct Server<'a, R> {
    worker: usize,
    tasks: R,
    results: &'a File,
    segments: Vec<Segment<'a>>,
    free: Vec<bool>,
    pending: VecDeque<Task>,
}

impl<R: Read> Server<'_, R> {
    fn serve(&mut self, dataset: &dyn Dataset, pipeline: &Pipeline) -> io::Result<()> {
        loop {
            let task = match self.pending.pop_front() {
                Some(task) => task,
                None => match self.next_task()? {
                    Some(task) => task,
                    None => return Ok(()),
                },
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                build_batch(dataset, pipeline, &task.indices, task.seed)
            }));
            let failure = match outcome {
                Ok(Ok(built)) => match self.send_batch(&task, built)? {
                    Ok(()) => continue,
                    Err(error) => error,
                },
                Ok(Err(error)) => error,
                Err(panic) => Error::run(format!(
                    "loader-worker-{} crashed: {}",
                    self.worker,
                    panic_message(&panic)
                )),
            };
            let message = ToParent::Failed {
                epoch: task.epoch,
                batch: task.batch,
                error: failure.to_string(),
                bad_input: failure.is_bad_input(),
            };
            write_frame(&mut self.results, &message, &[])?;
        }
    }

    /// Reads messages until a task comes; `None` at end of file (the loader is done).
    fn next_task(&mut self) -> io::Result<Option<Task>> {
        loop {
            let Some((message, data_len)) = read_header::<ToWorker>(&mut self.tasks)? else {
                return Ok(None);
            };
            read_data(&mut self.tasks, data_len)?;
            match message {
                ToWorker::Task {
                    epoch,
                    batch,
                    indices,
                    seed,
                } => {
                    return Ok(Some(Task {
                        epoch,
                        batch,
                        indices,
                        seed,
                    }));
                }
                ToWorker::SegmentFree { segment } => {
                    if let Some(free) = self.free.get_mut(segment) {
                        *free = true;
                    }
                }
                ToWorker::Start(_) => {}
            }
        }
    }

    /// A free segment, waiting for the loader to return one (tasks that come meanwhile
    /// are kept for later).
    fn free_segment(&mut self) -> io::Result<usize> {
        loop {
            if let Some(segment) = self.free.iter().position(|&free| free) {
                return Ok(segment);
            }
            match self.next_task()? {
                Some(task) => self.pending.push_back(task),
                None => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            }
        }
    }

    /// Sends a built batch; the inner error is a batch that could not be sent (reported
    /// as a failed batch), the outer one a broken pipe.
    fn send_batch(&mut self, task: &Task, built: BuiltBatch) -> io::Result<Result<()>> {
        let started = Instant::now();
        let images = match built
            .images
            .f_to_kind(Kind::Float)
            .and_then(|t| t.f_contiguous())
        {
            Ok(images) => images,
            Err(error) => return Ok(Err(error.into())),
        };
        let labels = match Vec::<i64>::try_from(&built.labels) {
            Ok(labels) => labels,
            Err(error) => return Ok(Err(error.into())),
        };
        let bytes = images.numel() * 4;
        // SAFETY: `images` is a contiguous CPU float tensor of `bytes` bytes that lives
        // until the end of this function; nothing writes to it meanwhile.
        let pixels = unsafe { std::slice::from_raw_parts(images.data_ptr() as *const u8, bytes) };
        let mut header = BatchHeader {
            epoch: task.epoch,
            batch: task.batch,
            shape: images.size(),
            labels,
            bytes,
            segment: None,
            read_s: built.read.as_secs_f64(),
            fetch_s: built.fetch.as_secs_f64(),
            decompress_s: built.decompress.as_secs_f64(),
            collate_s: built.collate.as_secs_f64(),
            transform_s: built.transform.as_secs_f64(),
            put_s: 0.0,
        };
        if self.segments.is_empty() {
            header.put_s = started.elapsed().as_secs_f64();
            write_frame(
                &mut self.results,
                &ToParent::Batch(Box::new(header)),
                pixels,
            )?;
            return Ok(Ok(()));
        }
        let segment = self.free_segment()?;
        let target = &mut self.segments[segment];
        let map = match map_at_least(target, bytes) {
            Ok(map) => map,
            Err(error) => return Ok(Err(Error::run(format!("shared memory: {error}")))),
        };
        map[..bytes].copy_from_slice(pixels);
        self.free[segment] = false;
        header.segment = Some(segment);
        header.put_s = started.elapsed().as_secs_f64();
        write_frame(&mut self.results, &ToParent::Batch(Box::new(header)), &[])?;
        Ok(Ok(()))
    }
}

/// The segment's mapping, grown (the segment and the mapping) to hold `bytes`.
fn map_at_least<'m>(segment: &'m mut Segment<'_>, bytes: usize) -> io::Result<&'m mut MmapMut> {
    let big_enough = segment.map.as_ref().is_some_and(|map| map.len() >= bytes);
    if !big_enough {
        segment.map = None;
        if segment.file.metadata()?.len() < bytes as u64 {
            segment.file.set_len(bytes as u64)?;
        }
        // SAFETY: the segment is shared only with the loader, which reads a region only
        // after this worker has written it and said so, and never while it is rewritten
        // (the worker reuses a segment only once the loader has freed it).
        segment.map = Some(unsafe { MmapMut::map_mut(segment.file)? });
    }
    segment
        .map
        .as_mut()
        .ok_or_else(|| io::Error::other("the segment is not mapped"))
}
