//! The operating-system pieces a worker process is built from: pipes, shared-memory
//! segments that only this user can open (a `memfd` on Linux — it has no name at all —
//! elsewhere a 0600 POSIX segment under a random name that is unlinked the moment it is
//! created), read-only shared images written once (a sealed `memfd` on Linux), and the
//! child process itself, reaped exactly once so that its pid is never
//! signalled after it may have been reused.
//!
//! Every descriptor a pool holds is listed in a process-wide registry for as long as it
//! is open, so that a forked worker can close the ones that belong to other workers:
//! otherwise a sibling holding a copy of a pipe's end would hide its end-of-file. A file
//! the process writes beside its loaders (a journal, whose lock a worker's copy would
//! keep for the worker's life) is listed there too ([`SharedFd::unshared`]).

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions, WaitStatus, kill_process, waitpid};

use crate::error::{Error, Result};

static OPEN: Mutex<Vec<RawFd>> = Mutex::new(Vec::new());

/// The registry of descriptors that pools hold; a fork takes this lock so that the
/// child sees a consistent list.
pub fn registry() -> MutexGuard<'static, Vec<RawFd>> {
    // A panic while holding this lock cannot leave the list half-edited (every edit is
    // one push or one removal), so a poisoned lock is still a valid list.
    OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A registered, close-on-exec descriptor: a pipe end, a segment, or a file no forked
/// worker keeps.
pub struct SharedFd {
    file: Option<File>,
}

impl SharedFd {
    fn new(fd: OwnedFd) -> SharedFd {
        registry().push(fd.as_raw_fd());
        SharedFd {
            file: Some(File::from(fd)),
        }
    }

    /// `file`, listed so that every worker forked while it is open closes its copy at
    /// once: a lock held on it ends when this process closes it, not when the last
    /// worker forked meanwhile exits.
    pub fn unshared(file: File) -> SharedFd {
        SharedFd::new(OwnedFd::from(file))
    }

    pub fn file(&self) -> &File {
        // `file` is only taken in `drop`.
        self.file
            .as_ref()
            .expect("a SharedFd holds its file until dropped")
    }

    pub fn raw(&self) -> RawFd {
        self.file().as_raw_fd()
    }
}

impl Drop for SharedFd {
    fn drop(&mut self) {
        let mut open = registry();
        if let Some(file) = self.file.take() {
            let fd = file.as_raw_fd();
            open.retain(|&f| f != fd);
            // Closed while the registry is locked, so no fork sees the number listed
            // after it has been reused for something else.
            drop(file);
        }
    }
}

/// Takes ownership of descriptor `fd`, which the loader that spawned this worker handed
/// it for its sole use; `None` if no such descriptor is open (the worker was started by
/// hand, or the loader did not pass it on).
pub fn inherited(fd: RawFd) -> Option<File> {
    use std::os::fd::{BorrowedFd, FromRawFd};
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is only borrowed for the check, which inspects the descriptor table;
    // a number that is not open makes it fail with EBADF.
    rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(fd) }).ok()?;
    // SAFETY: the descriptor is open and was inherited for this process's sole use.
    Some(unsafe { File::from_raw_fd(fd) })
}

/// A pipe: (read end, write end), both close-on-exec.
pub fn pipe() -> Result<(SharedFd, SharedFd)> {
    let (reader, writer) = std::io::pipe()
        .map_err(|err| Error::run_caused(format!("could not create a pipe: {err}"), err))?;
    Ok((
        SharedFd::new(OwnedFd::from(reader)),
        SharedFd::new(OwnedFd::from(writer)),
    ))
}

/// An empty shared-memory segment only this user can open; it grows as batches need.
pub fn segment() -> Result<SharedFd> {
    let fd = new_segment(c"loaderbench-batches", false).map_err(|err| {
        Error::run_caused(
            format!("could not create a shared-memory segment: {err}"),
            err,
        )
    })?;
    Ok(SharedFd::new(fd))
}

/// A shared image of `len` bytes that `fill` writes once, read-only from then on: on
/// Linux its memfd is sealed against writing, shrinking and growing, so a worker that
/// maps it can rely on it never changing or shrinking under the mapping.
pub fn sealed_image(len: usize, fill: impl FnOnce(&mut [u8]) -> Result<()>) -> Result<SharedFd> {
    let failed =
        |err: std::io::Error| Error::run_caused(format!("could not share the dataset: {err}"), err);
    let fd = SharedFd::new(new_segment(c"loaderbench-dataset", true).map_err(failed)?);
    fd.file().set_len(len as u64).map_err(failed)?;
    if len == 0 {
        fill(&mut [])?;
    } else {
        // SAFETY: the image was just created; nothing else maps or writes it yet.
        let mut map = unsafe { memmap2::MmapMut::map_mut(fd.file()) }.map_err(failed)?;
        fill(&mut map)?;
        // The writable mapping must be gone before the write seal can be added.
        drop(map);
    }
    seal(fd.file()).map_err(failed)?;
    Ok(fd)
}

#[cfg(target_os = "linux")]
fn seal(file: &File) -> std::io::Result<()> {
    use rustix::fs::SealFlags;
    let seals = SealFlags::WRITE | SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL;
    Ok(rustix::fs::fcntl_add_seals(file, seals)?)
}

/// POSIX shared memory has no seals; the image is only ever mapped read-only.
#[cfg(all(unix, not(target_os = "linux")))]
fn seal(_file: &File) -> std::io::Result<()> {
    Ok(())
}

/// A new memfd named `name` (the name only shows in `/proc`), close-on-exec, and
/// sealable when `sealable`.
#[cfg(target_os = "linux")]
fn new_segment(name: &std::ffi::CStr, sealable: bool) -> std::io::Result<OwnedFd> {
    use rustix::fs::MemfdFlags;
    let flags = if sealable {
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING
    } else {
        MemfdFlags::CLOEXEC
    };
    Ok(rustix::fs::memfd_create(name, flags)?)
}

#[cfg(all(unix, not(target_os = "linux")))]
fn new_segment(_name: &std::ffi::CStr, _sealable: bool) -> std::io::Result<OwnedFd> {
    use rand::Rng;
    use rustix::fs::Mode;
    use rustix::shm::OFlags;
    let name = format!("/lb-{:016x}", rand::rng().random::<u64>());
    // O_EXCL makes a guessed name fail instead of opening someone else's segment.
    let fd = rustix::shm::open(
        &name,
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL,
        Mode::RUSR | Mode::WUSR,
    )?;
    // The name is gone at once; only descriptors (ours, and the worker's inherited
    // copy) keep the segment alive, so nothing is left behind when they close.
    rustix::shm::unlink(&name)?;
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
    Ok(fd)
}

/// A worker's process, reaped exactly once.
pub struct ChildProcess {
    pid: Pid,
    /// How it ended, once reaped.
    ended: Mutex<Option<String>>,
}

impl ChildProcess {
    pub fn new(pid: Pid) -> ChildProcess {
        ChildProcess {
            pid,
            ended: Mutex::new(None),
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid.as_raw_nonzero().get().unsigned_abs()
    }

    /// How the process ended, reaping it if it has; `None` while it runs.
    pub fn try_reap(&self) -> Option<String> {
        let mut ended = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        if ended.is_none() {
            match waitpid(Some(self.pid), WaitOptions::NOHANG) {
                Ok(Some((_, status))) => *ended = Some(describe_status(status)),
                Ok(None) => {}
                Err(_) => *ended = Some("ended (its status is unknown)".to_owned()),
            }
        }
        ended.clone()
    }

    /// Waits up to `patience` for the process to end on its own.
    pub fn wait(&self, patience: Duration) -> Option<String> {
        let deadline = Instant::now() + patience;
        loop {
            if let Some(ended) = self.try_reap() {
                return Some(ended);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Kills the process (if it has not been reaped) and reaps it.
    pub fn kill(&self) {
        {
            let ended = self.ended.lock().unwrap_or_else(|p| p.into_inner());
            if ended.is_none() {
                // The pid is our unreaped child, so it cannot have been reused.
                let _ = kill_process(self.pid, Signal::KILL);
            }
        }
        // SIGKILL cannot be caught; the kernel ends the process promptly.
        self.wait(Duration::from_secs(5));
    }
}

fn describe_status(status: WaitStatus) -> String {
    if let Some(code) = status.exit_status() {
        format!("exited with status {code}")
    } else if let Some(signal) = status.terminating_signal() {
        format!("was killed by signal {signal} ({})", signal_name(signal))
    } else {
        format!("ended with wait status {}", status.as_raw())
    }
}

fn signal_name(signal: i32) -> &'static str {
    match Signal::from_named_raw(signal) {
        Some(Signal::KILL) => "SIGKILL",
        Some(Signal::TERM) => "SIGTERM",
        Some(Signal::SEGV) => "SIGSEGV",
        Some(Signal::ABORT) => "SIGABRT",
        Some(Signal::BUS) => "SIGBUS",
        Some(Signal::INT) => "SIGINT",
        Some(Signal::PIPE) => "SIGPIPE",
        _ => "a signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_registered_while_open() {
        let (reader, writer) = pipe().unwrap();
        let fds = (reader.raw(), writer.raw());
        assert!(registry().contains(&fds.0) && registry().contains(&fds.1));
        drop(reader);
        assert!(!registry().contains(&fds.0));
        drop(writer);
    }

    #[test]
    fn a_sealed_image_holds_what_was_written_and_refuses_writes() {
        use std::io::{Read, Seek, Write};
        let image = sealed_image(5, |bytes| {
            bytes.copy_from_slice(b"hello");
            Ok(())
        })
        .unwrap();
        let mut read = String::new();
        image.file().read_to_string(&mut read).unwrap();
        assert_eq!(read, "hello");
        if cfg!(target_os = "linux") {
            let mut file = image.file();
            file.rewind().unwrap();
            assert!(file.write_all(b"j").is_err(), "the image is sealed");
            assert!(image.file().set_len(1).is_err(), "the image cannot shrink");
        }
    }

    #[test]
    #[expect(clippy::zombie_processes, reason = "ChildProcess reaps it")]
    fn exit_statuses_read_as_words() {
        let ended = |script: &str| {
            let child = std::process::Command::new("sh")
                .args(["-c", script])
                .spawn()
                .unwrap();
            let pid = Pid::from_child(&child);
            ChildProcess::new(pid).wait(Duration::from_secs(10))
        };
        assert_eq!(ended("exit 3").as_deref(), Some("exited with status 3"));
        assert_eq!(
            ended("kill -9 $$").as_deref(),
            Some("was killed by signal 9 (SIGKILL)")
        );
    }
}
