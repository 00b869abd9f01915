//! The engine, the runner and the CLI end to end: the loader with real worker threads,
//! datasets and shards on disk and over HTTP, measurement, analysis, tune, reports and
//! every output as files, the CLI as a process (interrupts and timeouts included), ranks
//! on both runtimes, and the architecture's layers. One test crate, so libtorch is linked
//! once for all of them; the PyTorch runtime's own tests are in `tests/pytorch`, the app's
//! in `tests/app`, and the process workers' leak checks, which read this whole process's
//! children and descriptors, in `tests/process_workers.rs`.

#[path = "../common/mod.rs"]
mod common;

mod analysis;
mod architecture;
mod cache;
mod cli;
mod compressed_shards;
mod hostile_data;
mod hostile_input;
mod interrupt;
mod journals;
mod jpeg;
mod loader;
mod measurement;
mod memory;
mod npy_layouts;
mod outputs;
mod preset_paths;
mod ranks;
mod report;
mod shard_epochs;
mod shards;
mod timeout;
mod tune;
mod waits;
