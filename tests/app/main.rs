//! The desktop app through egui_kittest: the window and its runs, the setup panel, the
//! analysis and baselines, charts, saved documents, the pacing of frames during a run,
//! and tune. One test crate (built with the `gui` feature), so libtorch and the app are
//! linked once for all of them.

#[path = "../common/mod.rs"]
mod common;

mod analysis;
mod charts;
mod documents;
mod pacing;
mod setup;
mod tune;
mod window;
