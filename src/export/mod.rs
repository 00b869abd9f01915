//! Exporters: each turns a [`RunResult`] into the bytes of one file format, reading the
//! result and nothing else. The CLI and the GUI pick one by format name.

mod csv;
mod json;
pub mod markdown;

use crate::error::Result;
use crate::results::RunResult;

pub use self::csv::Csv;
pub use self::json::{Json, VERSION as RESULTS_VERSION};
pub use self::markdown::Markdown;

/// A results file format.
pub trait Exporter {
    /// The usual file extension, without the dot.
    fn extension(&self) -> &'static str;

    /// The file's contents.
    fn export(&self, result: &RunResult) -> Result<Vec<u8>>;
}

/// Every exporter, for menus and `--format` lists.
pub fn all() -> Vec<Box<dyn Exporter>> {
    vec![Box::new(Json), Box::new(Csv), Box::new(Markdown)]
}
