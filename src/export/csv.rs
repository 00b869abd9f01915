//! CSV export: one row per config, repeat and epoch, with every knob and stage total in
//! its own column (with ranks, the spread between the slowest and the fastest rank),
//! ready for a spreadsheet or pandas.

use super::Exporter;
use crate::error::{Error, Result};
use crate::results::RunResult;

pub struct Csv;

const HEADER: [&str; 28] = [
    "preset",
    "config",
    "label",
    "pipeline",
    "batch_size",
    "num_workers",
    "worker_kind",
    "persistent_workers",
    "prefetch_factor",
    "pin_memory",
    "pin_memory_effective",
    "in_order",
    "device",
    "repeat",
    "epoch",
    "seconds",
    "first_batch_s",
    "batches",
    "samples",
    "throughput",
    "steady_throughput",
    "read_s",
    "transform_s",
    "to_device_s",
    "wait_s",
    "peak_rss_bytes",
    "ranks",
    "rank_spread_s",
];

impl Exporter for Csv {
    fn extension(&self) -> &'static str {
        "csv"
    }

    fn export(&self, result: &RunResult) -> Result<Vec<u8>> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        let fail = |err: csv::Error| Error::run(format!("CSV export: {err}"));
        writer.write_record(HEADER).map_err(fail)?;
        for run in &result.results {
            let c = &run.config;
            for epoch in &run.epochs {
                let row: [String; 28] = [
                    result.preset.clone(),
                    run.config_index.to_string(),
                    run.label.clone(),
                    c.pipeline.name().to_owned(),
                    c.batch_size.to_string(),
                    c.num_workers.to_string(),
                    format!("{:?}", c.worker_kind).to_lowercase(),
                    c.persistent_workers.to_string(),
                    c.prefetch_factor.to_string(),
                    c.pin_memory.to_string(),
                    run.pin_memory_effective.to_string(),
                    c.in_order.to_string(),
                    c.device.to_string(),
                    run.repeat.to_string(),
                    epoch.epoch.to_string(),
                    format!("{:.6}", epoch.seconds),
                    format!("{:.6}", epoch.first_batch_s),
                    epoch.batches.to_string(),
                    epoch.samples.to_string(),
                    format!("{:.1}", epoch.throughput),
                    format!("{:.1}", epoch.steady_throughput),
                    format!("{:.6}", epoch.stages.read_s),
                    format!("{:.6}", epoch.stages.transform_s),
                    format!("{:.6}", epoch.stages.to_device_s),
                    format!("{:.6}", epoch.stages.wait_s),
                    run.peak_rss_bytes
                        .map(|b| b.to_string())
                        .unwrap_or_default(),
                    c.ranks.to_string(),
                    format!("{:.6}", epoch.rank_spread_s()),
                ];
                writer.write_record(&row).map_err(fail)?;
            }
        }
        writer
            .into_inner()
            .map_err(|err| Error::run(format!("CSV export: {err}")))
    }
}
