//! Measurement, the layer above the engine: the runner sweeps a plan's configs on a
//! background thread through a runtime (our loader, the real PyTorch DataLoader or an
//! SPDL pipeline in [`pytorch`], or several ranks), reads the interference meter around every epoch (a
//! long epoch cut after a window of its batches and projected: [`window`]) and streams
//! [`Event`]s; the records it produces ([`results`]) are journalled as each
//! config finishes. The measuring child process the app uses lives here too. It never
//! analyses what it measured: that is the consumer's job (see ARCHITECTURE.md).

pub mod disturbance;
pub mod engine_epoch;
pub mod events;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
mod journal;
pub mod measuring_child;
pub mod memory_watch;
pub mod meter;
pub mod parent_gate;
pub mod process_memory;
mod python_environment;
pub mod pytorch;
pub mod rank_merge;
mod ranks;
pub mod results;
pub mod results_file;
pub mod run_header;
mod runner;
pub mod scratch;
pub mod stats;
pub mod storage_reads;
pub mod summary;
pub mod time_left;
pub mod timeline_budget;
pub mod tune_trail;
pub mod window;

pub use events::*;
pub use journal::{
    BEING_WRITTEN, DATA_DIR_ENV, Journal, NEVER_ENDED, claim_journal, data_dir, default_journal,
    new_journal, parse_journal, read_journal, runs_dir,
};
pub use rank_merge::{RanksSummary, merge as merge_rank_epochs};
pub use ranks::rank_main;
pub use runner::{EpochGate, RunHandle, RunOptions, spawn};
