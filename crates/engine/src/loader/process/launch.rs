//! Starting process workers: finding the executable and spawning it with the `__worker`
//! command and only its own descriptors, or forking this process and running the worker
//! loop in the child. Either way the child gets its two pipes and its segments, and dies
//! with the loader's process: both start on the process's launcher thread
//! ([`crate::child_processes`]), whatever thread starts the pool. A forked child runs
//! no panic hook: a hook may take a lock (stderr's, the backtrace printer's, one of the
//! program's own) that another thread held at the fork and that nobody will ever release
//! in the child; a panic there is caught and reported to the loader as a message.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};

use super::fds::{self, ChildProcess, SharedFd};
use super::worker_messages::{self, SharedImageConfig, ToWorker, WorkerConfig};
use super::{Ends, Outgoing, PoolStart, ProcessWorkers, WORKER_EXE_VAR, shared, worker};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::preset::DatasetTransfer;
use crate::transform::Pipeline;

pub(super) fn worker_executable(spec: &ProcessWorkers) -> Result<PathBuf> {
    if let Some(path) = &spec.executable {
        return Ok(path.clone());
    }
    if let Some(path) = std::env::var_os(WORKER_EXE_VAR) {
        return Ok(PathBuf::from(path));
    }
    std::env::current_exe().map_err(|err| {
        Error::run(format!(
            "could not find this program to spawn workers: {err}"
        ))
    })
}

/// How a spawned worker gets its dataset.
pub(super) enum SpawnDataset<'a> {
    /// Sent a private copy with its config.
    Copy(&'a Arc<(worker_messages::CopyLayout, Vec<u8>)>),
    /// Inherits the shared image and maps it.
    Image(&'a shared::SharedImage),
    /// Opens the dataset's files itself, with the dataset's [`reopen_index`] if it has
    /// one.
    ///
    /// [`reopen_index`]: crate::dataset::Dataset::reopen_index
    Reopen(Option<serde_json::Value>),
}

/// Starts a spawned worker; returns it and the config frame its writer sends first.
pub(super) fn spawn(
    id: usize,
    spec: &ProcessWorkers,
    ends: &Ends,
    dataset: SpawnDataset<'_>,
) -> Result<(Arc<ChildProcess>, Outgoing)> {
    use std::os::unix::process::CommandExt;
    let executable = worker_executable(spec)?;
    let mut keep = ends.workers_fds();
    if let SpawnDataset::Image(image) = &dataset {
        keep.push(image.fd.raw());
    }
    let mut command = std::process::Command::new(&executable);
    command
        .arg("__worker")
        .arg("--tasks-fd")
        .arg(ends.tasks_read.raw().to_string())
        .arg("--results-fd")
        .arg(ends.results_write.raw().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    let child_keep = keep.clone();
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe calls (fcntl) without allocating; the descriptors are open in
    // the child, inherited from this process.
    unsafe {
        command.pre_exec(move || {
            for &fd in &child_keep {
                let fd = std::os::fd::BorrowedFd::borrow_raw(fd);
                rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
            }
            Ok(())
        });
    }
    let child = crate::child_processes::spawn_tied_leaving_interrupts(command).map_err(|err| {
        Error::run(format!(
            "could not spawn loader-worker-{id} ({}): {err}",
            executable.display()
        ))
    })?;
    let child = Arc::new(ChildProcess::new(rustix::process::Pid::from_child(&child)));
    let (copy, shared, index) = match dataset {
        SpawnDataset::Copy(copy) => (Some(copy), None, None),
        SpawnDataset::Image(image) => (
            None,
            Some(SharedImageConfig {
                fd: image.fd.raw(),
                layout: image.layout,
            }),
            None,
        ),
        SpawnDataset::Reopen(index) => (None, None, index),
    };
    let config = WorkerConfig {
        worker: id,
        dataset: match (copy, shared) {
            (None, None) => Some(spec.dataset.clone().ok_or_else(|| {
                Error::value("dataset_transfer reopen needs a dataset a worker can open; use copy")
            })?),
            _ => None,
        },
        samples: spec.samples,
        index,
        copy: copy.map(|copy| copy.0),
        pipeline: spec.pipeline.clone(),
        transform_at: spec.transform_at,
        normalize: spec.normalize.clone(),
        segments: ends.segments.iter().map(SharedFd::raw).collect(),
        shared,
    };
    let start = ToWorker::Start(Box::new(config));
    Ok((child, Outgoing::Start(start, copy.cloned())))
}

/// Forks worker `id` on the launcher thread and hands back its ends with it.
pub(super) fn fork(
    id: usize,
    spec: &ProcessWorkers,
    start: &PoolStart<'_>,
    ends: Ends,
) -> Result<(Ends, Arc<ChildProcess>)> {
    let copy = spec.dataset_transfer == DatasetTransfer::Copy;
    let (dataset, pipeline) = (start.dataset.clone(), start.pipeline.clone());
    no_panic_hook_in_forked_children();
    crate::child_processes::on_launcher(move || {
        let child = fork_here(id, &dataset, &pipeline, copy, &ends)?;
        Ok((ends, child))
    })
}

fn fork_here(
    id: usize,
    dataset: &Arc<dyn Dataset>,
    pipeline: &Pipeline,
    copy: bool,
    ends: &Ends,
) -> Result<Arc<ChildProcess>> {
    let keep = ends.workers_fds();
    let parent = rustix::process::getpid();
    let open = fds::registry();
    // SAFETY: fork duplicates this process; the child below runs only our worker code
    // and libtorch (one thread), then `_exit`s without unwinding into the caller.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        IN_FORKED_CHILD.store(true, Ordering::Relaxed);
        for &fd in open.iter().filter(|fd| !keep.contains(fd)) {
            // SAFETY: closing the child's copies of other workers' descriptors (first,
            // so that a lock the parent lets go of is free as soon as it does).
            unsafe { libc::close(fd) };
        }
        crate::child_processes::die_with_parent(parent);
        crate::child_processes::leave_interrupts_to_parent();
        tch::set_num_threads(1);
        let code = catch_exit(|| {
            let segments: Vec<&File> = ends.segments.iter().map(SharedFd::file).collect();
            worker::forked_worker(
                id,
                dataset,
                pipeline,
                copy,
                ends.tasks_read.file(),
                ends.results_write.file(),
                &segments,
            )
        });
        // SAFETY: ends the child without running the parent's destructors or atexit
        // handlers.
        unsafe { libc::_exit(code) };
    }
    // Read before anything else can set errno.
    let fork_error = std::io::Error::last_os_error();
    drop(open);
    forked(id, pid, fork_error)
}

/// The parent's side of `fork`'s return: the child, or the error for -1, which is no
/// child's pid (taken as one, reaping would wait for any child and killing would signal
/// every process this user may signal).
fn forked(id: usize, pid: libc::pid_t, fork_error: std::io::Error) -> Result<Arc<ChildProcess>> {
    match (pid > 0)
        .then(|| rustix::process::Pid::from_raw(pid))
        .flatten()
    {
        Some(pid) => Ok(Arc::new(ChildProcess::new(pid))),
        None => Err(Error::run(format!(
            "could not fork loader-worker-{id}: {fork_error}"
        ))),
    }
}

/// Set in a forked child first thing: its panics skip every hook.
static IN_FORKED_CHILD: AtomicBool = AtomicBool::new(false);

/// Wraps the process's panic hook (once, in the parent, before its first fork) so that
/// it does nothing in a forked child and what it did before everywhere else.
fn no_panic_hook_in_forked_children() {
    static WRAPPED: Once = Once::new();
    WRAPPED.call_once(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_FORKED_CHILD.load(Ordering::Relaxed) {
                hook(info);
            }
        }));
    });
}

fn catch_exit(work: impl FnOnce() -> i32) -> i32 {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or(101)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_that_failed_is_an_error_naming_the_worker_never_a_child_of_pid_minus_one() {
        let error = forked(3, -1, std::io::Error::from_raw_os_error(libc::EAGAIN))
            .err()
            .expect("fork's -1 is no child");
        assert_eq!(
            error.to_string(),
            "could not fork loader-worker-3: Resource temporarily unavailable (os error 11)"
        );
    }
}
