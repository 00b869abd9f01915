//! Ctrl-C for the CLI: the first SIGINT, SIGTERM or SIGHUP asks the run to stop, so the
//! workers are stopped and every requested export is still written with what was
//! measured (the run marked cancelled, exit code 130); a second one exits at once with
//! code 130. The handler runs on the `ctrlc` crate's own thread, so it may print and
//! exit; the run polls [`requested`] between events.

use std::sync::atomic::{AtomicUsize, Ordering};

use loaderbench_engine::Error;
use loaderbench_engine::Result;

/// The exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_CODE: u8 = 130;

static INTERRUPTS: AtomicUsize = AtomicUsize::new(0);

/// Installs the handler; call once, before the run starts.
pub fn install() -> Result<()> {
    ctrlc::set_handler(|| {
        if INTERRUPTS.fetch_add(1, Ordering::SeqCst) == 0 {
            eprintln!("\nstopping: writing what was measured (press Ctrl-C again to quit at once)");
        } else {
            quit_now();
        }
    })
    .map_err(|err| Error::run_caused(format!("could not catch Ctrl-C: {err}"), err))
}

/// Whether the user asked the run to stop.
pub fn requested() -> bool {
    INTERRUPTS.load(Ordering::SeqCst) > 0
}

/// Exits with [`EXIT_CODE`] without running exit handlers: libtorch's static destructors
/// must not run under the threads still measuring. Spawned and forked workers die with
/// this process (see `loader::process`).
fn quit_now() -> ! {
    #[cfg(unix)]
    // SAFETY: _exit ends the process at once; it takes no pointers and never returns.
    unsafe {
        libc::_exit(i32::from(EXIT_CODE))
    }
    #[cfg(not(unix))]
    std::process::exit(i32::from(EXIT_CODE))
}
