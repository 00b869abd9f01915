//! The preloaded Python a process shares with the loaderbench processes it starts (tune's
//! and `--recommend`'s rounds, the test binaries' commands), so that their runs fork
//! their scripts from it instead of each importing torch again. It runs the script with
//! `--preload` and a listening socket as its stdin, serving each connection as a run's
//! own preloaded Python is served ([`super::preloaded`]). It is offered to a child in
//! [`SHARED_VAR`] as `IDENTITY:SOCKET`, where the identity hashes what the scripts would
//! inherit from a Python the run started itself (the Python, the scripts shipped in this
//! program, the environment, the resource limits and the priority): a run whose
//! identity differs starts its own. The scripts it forks for a run are not below the
//! run's process, so the run [adopts](crate::meter::Adopted) them for its meters.

use std::ffi::{OsStr, OsString};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use loaderbench_engine::child_processes::kill_group;
use loaderbench_engine::error::{Error, Result};

use super::folder::ScratchFolder;
use super::preloaded::wanted;

/// The environment variable through which a [`SharedPreloadedPython`] is offered to
/// the loaderbench processes its owner starts: `IDENTITY:SOCKET`.
pub const SHARED_VAR: &str = "LOADERBENCH_PRELOADED";

/// A preloaded Python that this process offers to the loaderbench processes it starts
/// ([`share_with`](SharedPreloadedPython::share_with)), so that each of their runs
/// forks its scripts from it instead of importing torch again: its stdin is a listening
/// socket, each connection served as a run's own preloaded Python is. It imports in the
/// background; a run that connects meanwhile waits for it. Dropping it kills it (the
/// runs connected then start their scripts afresh).
pub struct SharedPreloadedPython {
    process: Child,
    python: PathBuf,
    socket: PathBuf,
    /// `IDENTITY:SOCKET`, what [`SHARED_VAR`] is set to.
    offer: OsString,
    /// Holds the scripts it runs and the socket; removed after the process ends.
    _folder: ScratchFolder,
    /// Its process belongs to none of the configs whose scripts it forks.
    _standing_by: crate::meter::StandingBy,
}

impl SharedPreloadedPython {
    /// Starts `python` on the scripts, listening on a socket beside them. `None` where
    /// preloading is not wanted.
    pub fn start(python: &Path) -> Result<Option<Self>> {
        if !wanted() {
            return Ok(None);
        }
        let folder = ScratchFolder::with_scripts()?;
        let socket = folder.path().join("preloaded.sock");
        let listener =
            UnixListener::bind(&socket).map_err(|err| Error::file(&socket, err.to_string()))?;
        let mut command = Command::new(python);
        command
            .arg(folder.script())
            .arg("--preload")
            .env("TMPDIR", folder.python_temp())
            .stdin(Stdio::from(OwnedFd::from(listener)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let process = loaderbench_engine::child_processes::spawn_tied(command)
            .map_err(|err| Error::run(format!("cannot start {}: {err}", python.display())))?;
        let mut offer = OsString::from(format!("{:016x}:", identity_of(python)));
        offer.push(&socket);
        Ok(Some(SharedPreloadedPython {
            _standing_by: crate::meter::StandingBy::new(process.id()),
            process,
            python: python.to_path_buf(),
            socket,
            offer,
            _folder: folder,
        }))
    }

    /// Its socket, where it runs `python`.
    pub(super) fn socket_for(&self, python: &Path) -> Option<PathBuf> {
        (self.python == python).then(|| self.socket.clone())
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Waits until it has imported torch and serves, at most `limit`; false where it
    /// ended first or the limit passed. A process that measures while it imports (seconds
    /// of CPU) measures beside that load.
    pub fn wait_serving(&self, limit: Duration) -> bool {
        let cancel = loaderbench_engine::cancel::CancelToken::new();
        let served =
            super::preloaded::PreloadedPython::connect(&self.socket, &self.python, &cancel, limit);
        matches!(served, Ok(Some(_)))
    }

    /// Offers it to the loaderbench process `command` starts.
    pub fn share_with(&self, command: &mut Command) {
        command.env(SHARED_VAR, &self.offer);
    }
}

impl Drop for SharedPreloadedPython {
    fn drop(&mut self) {
        kill_group(&mut self.process);
        let _ = self.process.wait();
    }
}

/// What a preloaded Python must share with the process that uses it, as a hash: the
/// Python, the scripts shipped in this program, the environment (but for the offer
/// itself and `TMPDIR`, which each fork is given) and the resource limits and
/// priority the scripts inherit.
fn identity_of(python: &Path) -> u64 {
    let mut hasher = DefaultHasher::new();
    python.as_os_str().as_bytes().hash(&mut hasher);
    super::folder::scripts().for_each(|(name, text)| (name, text).hash(&mut hasher));
    let mut environment: Vec<_> = std::env::vars_os()
        .filter(|(name, _)| name != SHARED_VAR && name != "TMPDIR")
        .collect();
    environment.sort();
    environment.hash(&mut hasher);
    use rustix::process::{Resource, getrlimit};
    for resource in [
        Resource::As,
        Resource::Data,
        Resource::Stack,
        Resource::Nofile,
        Resource::Nproc,
        Resource::Memlock,
        Resource::Core,
    ] {
        let limit = getrlimit(resource);
        (limit.current, limit.maximum).hash(&mut hasher);
    }
    rustix::process::getpriority_process(None)
        .ok()
        .hash(&mut hasher);
    hasher.finish()
}

/// The socket of the shared preloaded Python this process is offered, where it runs
/// `python` as this process would run it.
pub(super) fn offered(python: &Path) -> Option<PathBuf> {
    let offer = std::env::var_os(SHARED_VAR)?;
    let offer = offer.as_bytes();
    let colon = offer.iter().position(|&b| b == b':')?;
    let (identity, socket) = (&offer[..colon], &offer[colon + 1..]);
    let expected = format!("{:016x}", identity_of(python));
    (identity == expected.as_bytes()).then(|| PathBuf::from(OsStr::from_bytes(socket)))
}
