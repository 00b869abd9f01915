//! The engine, the bottom layer: what a benchmark file says ([`preset`]) and what it
//! resolves to ([`plan`]), the datasets, the libtorch transform pipelines, the loader
//! with PyTorch DataLoader semantics and its worker kinds, the device and the training
//! step, and the machine they run on. It knows nothing of measuring runs, results,
//! analysis or any front end; see ARCHITECTURE.md for the layers above it.

pub mod atomic_file;
pub mod builtin;
pub mod cancel;
pub mod child_processes;
pub mod dataset;
pub mod device;
pub mod error;
pub mod loader;
pub mod machine;
pub mod memory;
mod named_values;
pub mod page_cache;
pub mod plan;
pub mod preset;
pub mod python_call;
pub mod secrets;
mod splitmix;
pub mod step;
pub mod transform;

pub use error::{Error, Result};
