//! Stopping a CLI run from outside: Ctrl-C at a terminal, `timeout`, a scheduler's SIGTERM
//! at its time limit, a closed terminal's SIGHUP. The first signal asks the run to stop:
//! the workers are stopped, every requested export is still written with what was
//! measured (the run marked cancelled), and the process exits with 128 + the signal's
//! number (130 for SIGINT, 143 for SIGTERM), as shells and schedulers expect. The same
//! signal often arrives twice within microseconds (`timeout`, `scancel` and container
//! runtimes signal the process and then its whole group), so every signal within
//! [`REPEAT_WINDOW`] of the first is that same request. A later one is a user pressing
//! Ctrl-C again: the process quits at once, after the [`on_quit`] writer saves what was
//! measured if it takes under [`LAST_WRITE_LIMIT`]. Signals are taken on a thread of
//! their own, so handling them may print, write and exit. A SIGHUP ignored when the
//! process starts (`nohup`) stays ignored: the run outlives its terminal.

use std::sync::{Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

use loaderbench_engine::Error;
use loaderbench_engine::Result;

/// Signals this close to the first one are the same request delivered again.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(1);

/// How long quitting at once waits for the [`on_quit`] writer.
pub const LAST_WRITE_LIMIT: Duration = Duration::from_secs(1);

/// SIGINT's number, which Ctrl-C sends (the same on every platform Rust runs on).
const SIGINT: i32 = 2;

/// The first stop request: which signal, and when.
struct Request {
    signal: i32,
    at: Instant,
}

static REQUEST: OnceLock<Request> = OnceLock::new();

/// What to save when the user quits at once; taken by the first such quit.
type LastWrite = Box<dyn FnOnce() + Send>;
static LAST_WRITE: Mutex<Option<LastWrite>> = Mutex::new(None);

/// Starts taking SIGINT, SIGTERM and SIGHUP (Ctrl-C and its kin elsewhere); call before
/// the run starts. Later calls do nothing.
pub fn install() -> Result<()> {
    static INSTALLED: Once = Once::new();
    let mut outcome = Ok(());
    INSTALLED.call_once(|| outcome = listen());
    outcome
}

#[cfg(unix)]
fn listen() -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut caught = vec![SIGINT, SIGTERM];
    // Under `nohup` (or a shell's `trap '' HUP`) the user asked for the run to outlive
    // its terminal: SIGHUP stays ignored, as POSIX shells leave a signal ignored on entry.
    if !ignored(SIGHUP) {
        caught.push(SIGHUP);
    }
    let mut signals = signal_hook::iterator::Signals::new(caught)
        .map_err(|err| Error::run_caused(format!("could not catch Ctrl-C: {err}"), err))?;
    std::thread::Builder::new()
        .name("loaderbench-signals".to_owned())
        .spawn(move || signals.forever().for_each(on_signal))
        .map_err(|err| Error::run_caused(format!("could not catch Ctrl-C: {err}"), err))?;
    Ok(())
}

/// Whether `signal` is ignored in this process (as it started: nothing here ignores one).
#[cfg(unix)]
fn ignored(signal: i32) -> bool {
    // SAFETY: sigaction with no new action only reads the current one into `current`.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

#[cfg(not(unix))]
fn listen() -> Result<()> {
    ctrlc::set_handler(|| on_signal(SIGINT))
        .map_err(|err| Error::run_caused(format!("could not catch Ctrl-C: {err}"), err))
}

/// Whether the run was asked to stop.
pub fn requested() -> bool {
    REQUEST.get().is_some()
}

/// The exit code of a stopped run: 128 + the number of the signal that stopped it.
pub fn exit_code() -> u8 {
    let signal = REQUEST.get().map_or(SIGINT, |request| request.signal);
    u8::try_from(128 + signal).unwrap_or(130)
}

/// Sets what quitting at once saves (the exports, from the journal); it runs on the
/// signal thread, at most once.
pub fn on_quit(write: impl FnOnce() + Send + 'static) {
    *lock_last_write() = Some(Box::new(write));
}

fn lock_last_write() -> std::sync::MutexGuard<'static, Option<LastWrite>> {
    // A writer that panicked leaves nothing half-done that matters here.
    LAST_WRITE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn on_signal(signal: i32) {
    let Some(first) = REQUEST.get() else {
        let _ = REQUEST.set(Request {
            signal,
            at: Instant::now(),
        });
        errln!("\nstopping: writing what was measured (press Ctrl-C again to quit at once)");
        return;
    };
    if first.at.elapsed() >= REPEAT_WINDOW {
        quit_now(signal);
    }
}

/// Saves what was measured if that takes under [`LAST_WRITE_LIMIT`], then exits with
/// 128 + `signal` without running exit handlers: libtorch's static destructors must not
/// run under the threads still measuring. Spawned and forked workers die with this
/// process (see `loader::process`).
fn quit_now(signal: i32) -> ! {
    errln!("quitting at once");
    if let Some(write) = lock_last_write().take() {
        let (done, written) = crossbeam_channel::bounded(1);
        let writer = std::thread::Builder::new().spawn(move || {
            write();
            let _ = done.send(());
        });
        if writer.is_err() || written.recv_timeout(LAST_WRITE_LIMIT).is_err() {
            errln!("the exports were not written in time; the journal keeps what was measured");
        }
    }
    let code = 128 + signal;
    #[cfg(unix)]
    // SAFETY: _exit ends the process at once; it takes no pointers and never returns.
    unsafe {
        libc::_exit(code)
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}
