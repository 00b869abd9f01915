//! CSV export: one row per config, repeat and epoch, ready for a spreadsheet or pandas.
//! The columns are the run's identity, every sweep knob from the registry
//! ([`KNOBS`], values as a preset writes them), then each [`COLUMNS`] entry: what the
//! config ran with and what the epoch measured. A column's name and its cell are one
//! entry, so they cannot drift apart.

use super::Exporter;
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::plan::KNOBS;
use loaderbench_measure::results::{ConfigResult, EpochResult, RunResult};

pub struct Csv;

/// What one row describes.
struct Row<'a> {
    result: &'a RunResult,
    run: &'a ConfigResult,
    epoch: &'a EpochResult,
}

/// A column after the knobs: its name and how a row fills it.
struct Column {
    name: &'static str,
    cell: fn(&Row) -> String,
}

/// The column `name`, filled by `cell`.
const fn column(name: &'static str, cell: fn(&Row) -> String) -> Column {
    Column { name, cell }
}

/// The columns before the knobs.
const IDENTITY: [Column; 3] = [
    column("preset", |r| r.result.preset.clone()),
    column("config", |r| r.run.config_index.to_string()),
    column("label", |r| r.run.label.clone()),
];

/// The column of one stage's seconds over the epoch, named as the stage's field.
macro_rules! stage_column {
    ($stage:ident) => {
        column(stringify!($stage), |r| {
            format!("{:.6}", r.epoch.stages.$stage)
        })
    };
}

/// The columns after the knobs.
const COLUMNS: [Column; 32] = [
    column("pin_memory_effective", |r| {
        r.run.pin_memory_effective.to_string()
    }),
    column("intra_op_threads_used", |r| {
        r.run.intra_op_threads.to_string()
    }),
    column("disturbed", |r| r.run.disturbed.to_string()),
    column("repeat", |r| r.run.repeat.to_string()),
    column("epoch", |r| r.epoch.epoch.to_string()),
    column("seconds", |r| format!("{:.6}", r.epoch.seconds)),
    column("projected", |r| r.epoch.projected.is_some().to_string()),
    column("measured_s", |r| format!("{:.6}", r.epoch.measured_s())),
    column("first_batch_s", |r| format!("{:.6}", r.epoch.first_batch_s)),
    column("batches", |r| r.epoch.batches.to_string()),
    column("samples", |r| r.epoch.samples.to_string()),
    column("throughput", |r| format!("{:.1}", r.epoch.throughput)),
    column("steady_throughput", |r| {
        format!("{:.1}", r.epoch.steady_throughput)
    }),
    stage_column!(fetch_s),
    stage_column!(decompress_s),
    stage_column!(read_s),
    stage_column!(transform_s),
    stage_column!(to_device_s),
    stage_column!(wait_s),
    stage_column!(step_s),
    column("rank_spread_s", |r| {
        format!("{:.6}", r.epoch.rank_spread_s())
    }),
    column("other_load_cores", |r| {
        optional(r.epoch.other_load_cores.map(|c| format!("{c:.3}")))
    }),
    column("own_cpu_s", |r| {
        optional(r.epoch.own_cpu_s.map(|s| format!("{s:.6}")))
    }),
    column("read_bytes", |r| {
        optional(r.epoch.read_bytes.map(|b| b.to_string()))
    }),
    column("read_mb_s", |r| {
        optional(r.epoch.read_mb_s.map(|m| format!("{m:.3}")))
    }),
    column("stayed_warm", |r| optional(r.run.stayed_warm.clone())),
    column("partly_cold", |r| optional(r.run.partly_cold.clone())),
    column("rss_before_bytes", |r| {
        optional(r.run.rss_before_bytes.map(|b| b.to_string()))
    }),
    column("peak_rss_bytes", |r| {
        optional(r.run.peak_rss_bytes.map(|b| b.to_string()))
    }),
    column("memory_pss_bytes", |r| {
        optional(r.epoch.memory.map(|m| m.peak_pss_bytes.to_string()))
    }),
    column("main_pss_bytes", |r| {
        optional(r.epoch.memory.map(|m| m.main_pss_bytes.to_string()))
    }),
    column("worker_pss_bytes", |r| {
        optional(r.epoch.memory.map(|m| m.worker_pss_bytes.to_string()))
    }),
];

/// An empty cell where nothing was measured.
fn optional(cell: Option<String>) -> String {
    cell.unwrap_or_default()
}

fn header() -> Vec<&'static str> {
    let identity = IDENTITY.iter().map(|c| c.name);
    let knobs = KNOBS.iter().map(|k| k.field);
    identity
        .chain(knobs)
        .chain(COLUMNS.iter().map(|c| c.name))
        .collect()
}

fn cells(row: &Row) -> Vec<String> {
    let identity = IDENTITY.iter().map(|c| (c.cell)(row));
    let knobs = KNOBS.iter().map(|k| (k.value)(&row.run.config));
    identity
        .chain(knobs)
        .chain(COLUMNS.iter().map(|c| (c.cell)(row)))
        .collect()
}

impl Exporter for Csv {
    fn extension(&self) -> &'static str {
        "csv"
    }

    fn export(&self, result: &RunResult) -> Result<Vec<u8>> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        let fail = |err: csv::Error| Error::run_caused(format!("CSV export: {err}"), err);
        writer.write_record(header()).map_err(fail)?;
        for run in &result.results {
            for epoch in &run.epochs {
                let row = Row { result, run, epoch };
                writer.write_record(cells(&row)).map_err(fail)?;
            }
        }
        writer
            .into_inner()
            .map_err(|err| Error::run_caused(format!("CSV export: {err}"), err))
    }
}
