//! Markdown export: the classic experiment's tables, one per pipeline —
//! `num_workers | persistent | pin | first batch | epoch 1 | epoch 2 …` in seconds with
//! two decimals (medians when a config was repeated, followed by their 95% bootstrap
//! interval: `0.53 [0.49, 0.58]`) — plus columns for any other knob that varies, and the
//! machine they were measured on. The table itself is [`ResultsTable`]'s.

use std::fmt::Write;

use super::Exporter;
use crate::tables::results_table::ResultsTable;
use loaderbench_engine::error::Result;
use loaderbench_measure::results::RunResult;

pub struct Markdown;

impl Exporter for Markdown {
    fn extension(&self) -> &'static str {
        "md"
    }

    fn export(&self, result: &RunResult) -> Result<Vec<u8>> {
        let mut text = format!("# {}\n\n", result.preset);
        for pipeline in result.pipelines() {
            let _ = write!(text, "## {pipeline}\n\n{}\n", table(result, &pipeline));
            let stages = crate::tables::stages::table(result, &pipeline);
            if !stages.is_empty() {
                let _ = write!(
                    text,
                    "Where the time goes (milliseconds per batch):\n\n{stages}\n"
                );
            }
        }
        let _ = writeln!(text, "Dataset: {}  ", result.dataset);
        let _ = write!(text, "Machine: {}", result.machine.summary());
        if let Some(python) = result.python() {
            let _ = write!(text, "  \nPyTorch runtime: {}", python.summary());
        }
        text.push('\n');
        if result.repeats > 1 {
            let _ = writeln!(
                text,
                "\nSeconds are medians of {} repeats, with their 95% bootstrap interval.",
                result.repeats
            );
        }
        Ok(text.into_bytes())
    }
}

/// The aligned Markdown table of one pipeline's configs.
pub fn table(result: &RunResult, pipeline: &str) -> String {
    ResultsTable::of(result, pipeline).markdown()
}
