//! Markdown export: the classic experiment's tables, one per pipeline —
//! `num_workers | persistent | pin | first batch | epoch 1 | epoch 2 …` in seconds with
//! two decimals (medians when a config was repeated, followed by their 95% bootstrap
//! interval: `0.53 [0.49, 0.58]`) — plus columns for any other knob that varies, and the
//! machine they were measured on.

use std::fmt::Write;

use super::Exporter;
use crate::error::Result;
use crate::plan::Config;
use crate::results::{RunResult, SummaryRow};

pub struct Markdown;

impl Exporter for Markdown {
    fn extension(&self) -> &'static str {
        "md"
    }

    fn export(&self, result: &RunResult) -> Result<Vec<u8>> {
        let mut text = format!("# {}\n\n", result.preset);
        for pipeline in result.pipelines() {
            let _ = write!(text, "## {pipeline}\n\n{}\n", table(result, &pipeline));
        }
        let _ = writeln!(text, "Dataset: {}  ", result.dataset);
        let _ = writeln!(text, "Machine: {}", result.machine.summary());
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

/// Seconds with two decimals (`<0.01` rather than a misleading `0.00`); a dash for no
/// value.
pub fn seconds(value: Option<f64>) -> String {
    match value {
        None => "-".to_owned(),
        Some(s) if s > 0.0 && s < 0.005 => "<0.01".to_owned(),
        Some(s) => format!("{s:.2}"),
    }
}

/// The aligned Markdown table of one pipeline's configs.
pub fn table(result: &RunResult, pipeline: &str) -> String {
    let rows: Vec<SummaryRow> = result
        .summary()
        .into_iter()
        .filter(|row| row.config.pipeline.name() == pipeline)
        .collect();
    let extra = varying_knobs(&result.configs);
    let mut header: Vec<String> = ["num_workers", "persistent", "pin"]
        .map(String::from)
        .to_vec();
    header.extend(extra.iter().map(|(name, _)| (*name).to_owned()));
    header.push("first batch".to_owned());
    header.extend((1..=result.epochs).map(|e| format!("epoch {e}")));
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let c = &row.config;
            let pin = match (c.pin_memory, row.pin_memory_effective) {
                (true, false) => "True (no-op)".to_owned(),
                (pin, _) => python_bool(pin),
            };
            let mut line = vec![
                c.num_workers.to_string(),
                python_bool(c.persistent_workers),
                pin,
            ];
            line.extend(extra.iter().map(|(_, value)| value(c)));
            line.push(with_interval(row.first_batch_s, row.first_batch_interval_s));
            line.extend(
                row.epoch_s
                    .iter()
                    .zip(&row.epoch_interval_s)
                    .map(|(s, interval)| with_interval(*s, *interval)),
            );
            line
        })
        .collect();
    render(&header, &cells)
}

/// Seconds, followed by the interval when there is one.
pub fn with_interval(value: Option<f64>, interval: Option<(f64, f64)>) -> String {
    match interval {
        Some((low, high)) => format!(
            "{} [{}, {}]",
            seconds(value),
            seconds(Some(low)),
            seconds(Some(high))
        ),
        None => seconds(value),
    }
}

fn python_bool(value: bool) -> String {
    if value { "True" } else { "False" }.to_owned()
}

type KnobColumn = (&'static str, fn(&Config) -> String);

/// Knobs beyond the classic three whose value differs between configs.
fn varying_knobs(configs: &[Config]) -> Vec<KnobColumn> {
    let candidates: [KnobColumn; 9] = [
        ("worker kind", |c| c.worker_kind.name().to_owned()),
        ("batch size", |c| c.batch_size.to_string()),
        ("prefetch", |c| c.prefetch_factor.to_string()),
        ("in order", |c| python_bool(c.in_order)),
        ("device", |c| c.device.to_string()),
        ("dataset transfer", |c| c.dataset_transfer.name().to_owned()),
        ("batch transfer", |c| c.batch_transfer.name().to_owned()),
        ("runtime", |c| format!("{:?}", c.runtime).to_lowercase()),
        ("start method", |c| {
            if c.uses_start_method() {
                c.start_method.name().to_owned()
            } else {
                "-".to_owned()
            }
        }),
    ];
    candidates
        .into_iter()
        .filter(|(_, value)| configs.iter().any(|c| value(c) != value(&configs[0])))
        .collect()
}

/// An aligned Markdown table.
pub fn render(header: &[String], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count(), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut text = line(header);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    text.push_str(&line(&rule));
    for row in rows {
        text.push_str(&line(row));
    }
    text
}
