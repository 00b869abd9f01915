//! Markdown export: the classic experiment's tables, one per pipeline —
//! `num_workers | persistent | pin | first batch | epoch 1 | epoch 2 …` in seconds with
//! two decimals (medians when a config was repeated, followed by their 95% bootstrap
//! interval: `0.53 [0.49, 0.58]`) — plus columns for any other knob that varies, the
//! machine they were measured on, and each question's recommendation with its snippet
//! (the text a pull request or an issue quotes). The table itself is [`ResultsTable`]'s.

use std::fmt::Write;

use super::Exporter;
use crate::tables::results_table::ResultsTable;
use loaderbench_engine::error::Result;
use loaderbench_engine::preset::Runtime;
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
        text.push_str(&recommendations(result));
        Ok(text.into_bytes())
    }
}

/// Each question's recommendation, as the JSON export's `analysis` holds it: its text
/// (the verdict last) and its snippet as a code block, Python for the PyTorch and SPDL
/// runtimes, RON (preset lines) for our engine.
fn recommendations(result: &RunResult) -> String {
    let analysis = loaderbench_analysis::Analysis::of(result);
    let mut text = String::new();
    for recommendation in &analysis.recommendations {
        if text.is_empty() {
            text.push_str("\n## Recommendations\n");
        }
        let _ = write!(
            text,
            "\n### {}\n\n{}\n",
            recommendation.group, recommendation.text
        );
        if let Some(snippet) = &recommendation.snippet {
            let config = recommendation.config.and_then(|i| result.configs.get(i));
            let language = match config.map(|c| c.runtime) {
                Some(Runtime::Loaderbench) => "ron",
                _ => "python",
            };
            let _ = write!(text, "\n```{language}\n{snippet}\n```\n");
        }
    }
    text
}

/// The aligned Markdown table of one pipeline's configs.
pub fn table(result: &RunResult, pipeline: &str) -> String {
    ResultsTable::of(result, pipeline).markdown()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_engine::plan::Config;
    use loaderbench_measure::fixtures::{config, each_once, two_epochs};

    /// After the tables, each question's recommendation and its snippet: RON for our
    /// engine's preset lines, Python for the PyTorch runtime's DataLoader.
    #[test]
    fn each_recommendation_follows_the_tables_with_its_snippet() {
        let pytorch = Config {
            runtime: Runtime::Pytorch,
            worker_kind: loaderbench_engine::preset::WorkerKind::Auto,
            ..config(0, false)
        };
        let configs = vec![config(0, false), pytorch];
        let mut measured = each_once(configs, || two_epochs(0.5, 0.1, 11));
        measured.setup = Some(loaderbench_engine::preset::Preset::default());
        let text = String::from_utf8(Markdown.export(&measured).unwrap()).unwrap();
        let (tables, recommendations) = text.split_once("\n## Recommendations\n").unwrap();
        assert!(tables.contains("| epoch 2 |"), "{tables}");
        let sections: Vec<&str> = recommendations.split("\n### ").skip(1).collect();
        assert_eq!(sections.len(), 2, "{recommendations}");
        assert!(
            sections[0].contains(" · loaderbench\n\nUse nw=0."),
            "{}",
            sections[0]
        );
        assert!(
            sections[0].contains("\n```ron\nshuffle: "),
            "{}",
            sections[0]
        );
        assert!(
            sections[1].contains(" · pytorch\n\nUse nw=0"),
            "{}",
            sections[1]
        );
        assert!(
            sections[1].contains("\n```python\nimport torch\n") && sections[1].ends_with("```\n"),
            "{}",
            sections[1]
        );
    }
}
