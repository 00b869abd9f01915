//! JSON export: the whole [`RunResult`], pretty-printed; what the other tools read.

use super::Exporter;
use crate::error::{Error, Result};
use crate::results::RunResult;

pub struct Json;

impl Exporter for Json {
    fn extension(&self) -> &'static str {
        "json"
    }

    fn export(&self, result: &RunResult) -> Result<Vec<u8>> {
        let mut bytes =
            serde_json::to_vec_pretty(result).map_err(|err| Error::run(err.to_string()))?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
