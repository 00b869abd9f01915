//! The scripted exit's part (`gui --run --json FILE --exit`): when the run ends, the
//! results are written as JSON and the window closes with the exit code `loaderbench
//! run` would give.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::live::Phase;
use loaderbench_measure::results::RunResult;
use loaderbench_present::export::{self, Exporter};

use super::messages::Messages;
use super::runs::RunEnded;

/// What a scripted run does when it ends.
#[derive(Debug, Default)]
pub(super) struct ScriptedExit {
    json: Option<PathBuf>,
    exit: Option<Arc<Mutex<Option<u8>>>>,
    /// Set when a scripted run has ended and the window should close.
    close_requested: bool,
}

impl ScriptedExit {
    pub(super) fn new(json: Option<PathBuf>, exit: Option<Arc<Mutex<Option<u8>>>>) -> Self {
        ScriptedExit {
            json,
            exit,
            close_requested: false,
        }
    }

    /// Whether the window closes when the run ends.
    pub(super) fn exits(&self) -> bool {
        self.exit.is_some()
    }

    /// Whether the window should close now.
    pub(super) fn close_requested(&self) -> bool {
        self.close_requested
    }

    /// Writes the JSON file of the run that `ended` with `result`, and leaves the exit
    /// code for the window to close with.
    pub(super) fn run_ended(
        &mut self,
        ended: &RunEnded,
        result: Option<&RunResult>,
        messages: &mut Messages,
    ) {
        let mut code = match ended.phase {
            Phase::Finished => 0,
            Phase::Cancelled => 130,
            Phase::Running => 1,
            Phase::Failed(_) if ended.bad_input => 2,
            Phase::Failed(_) => 1,
        };
        if let (Some(path), Some(result)) = (&self.json, result) {
            let written = export::Json
                .export(result)
                .and_then(|bytes| loaderbench_engine::atomic_file::write(path, &bytes));
            if let Err(err) = written {
                messages.error(format!("The results could not be written: {err}"));
                code = code.max(1);
            }
        }
        if let Some(exit) = &self.exit {
            if let Ok(mut slot) = exit.lock() {
                *slot = Some(code);
            }
            self.close_requested = true;
        }
    }
}
