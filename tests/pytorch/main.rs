//! The PyTorch runtime for real: the DataLoader beside our engine, tar shards through
//! WebDataset, every JPEG coding PIL reads, the user's own Dataset and training step,
//! its worker kinds (DataLoader's processes, torchdata.nodes threads), and the snippets
//! it writes. One
//! test crate, run by `scripts/test` in its own lane beside the others, since its tests
//! spend most of their time in Python's `import torch` on one core. Tests that run the
//! PyTorch runtime in this process take turns ([`common::process::python_turn`]): they
//! find its processes by parentage.

#[path = "../common/mod.rs"]
mod common;

mod jpeg;
mod loader_snippet;
mod memory;
mod runtime;
mod shards;
mod snippet;
mod spdl;
mod step;
mod user_code;
mod user_dataset;
mod worker_kinds;
