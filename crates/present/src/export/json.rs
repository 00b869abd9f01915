//! JSON export: the whole [`RunResult`], pretty-printed, with its [`Analysis`] beside
//! the measurements under `analysis`, and the results format's `version`; what the other
//! tools read. The file reads back as a `RunResult`
//! ([`loaderbench_measure::results_file::read`]).

use serde::Serialize;

use super::Exporter;
use loaderbench_analysis::Analysis;
use loaderbench_engine::error::{Error, Result};
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file::VERSION;

pub struct Json;

/// The exported document: the format version, the result's fields, then `analysis`.
#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    #[serde(flatten)]
    result: &'a RunResult,
    analysis: Analysis,
}

impl Exporter for Json {
    fn extension(&self) -> &'static str {
        "json"
    }

    fn export(&self, result: &RunResult) -> Result<Vec<u8>> {
        let document = Document {
            version: VERSION,
            result,
            analysis: Analysis::of(result),
        };
        let mut bytes = serde_json::to_vec_pretty(&document)
            .map_err(|err| Error::run_caused(err.to_string(), err))?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
