//! loaderbench: measure and tune deep-learning data-loader configurations.
//!
//! The library is the engine: presets are checked and resolved into a plan, the runner
//! sweeps its configs on a background thread through a loader with PyTorch DataLoader
//! semantics (datasets, libtorch transform pipelines, worker pools) and streams events;
//! results are plain data that exporters turn into JSON, CSV or Markdown. The desktop app
//! and the CLI are thin front ends over the same event stream.

pub mod analysis;
pub mod baseline;
pub mod bench;
pub mod builtin;
pub mod cancel;
pub mod children;
pub mod compare;
pub mod dataset;
pub mod device;
pub mod documents;
pub mod error;
pub mod export;
#[cfg(feature = "gui")]
pub mod gui;
pub mod knobs;
pub mod loader;
pub mod machine;
pub mod memory;
pub mod overlay;
pub mod plan;
pub mod preset;
pub mod reference;
pub mod report;
pub mod results;
pub mod stats;
pub mod step;
pub mod transform;
pub mod views;

pub use error::{Error, Result};
