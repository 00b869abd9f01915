//! The knob table: every sweep knob of a benchmark, defined once, as plain data. Each
//! [`Knob`] record says what the knob is everywhere but in its own fields: what tables
//! and the app call it, its part of a config's label, its column in tables and the CSV,
//! the `DataLoader(...)` keyword it is in a recommendation's snippet, and the value the
//! PyTorch runtime's script receives under its name. The knob's fields are written out
//! in [`Preset`](crate::preset::Preset) (a list, with the default list a preset that
//! leaves it out gets), [`ConfigPoint`](crate::preset::ConfigPoint) (an optional value)
//! and [`Config`](crate::plan::Config) (one value), under the record's `field` name; the
//! tests below hold the table and those fields to each other.
//!
//! [`KNOBS_IN_CONFIG_ORDER`] is the order configs, results and the JSON hold the knobs;
//! a config's label names the classic knobs (`num_workers`, `persistent_workers`,
//! `pin_memory`) first, then the others in this order, and tables show their columns in
//! this order too. [`KNOBS`] is the order the sweep expands them in (the first varies
//! slowest), which is also the CSV's and the preset snippet's.
//!
//! Adding a knob is its record here (in both lists), its field in the three types, its
//! behaviour (the loader, the runner or the checks that read it), and, when the PyTorch
//! runtime takes it (`script_value` is set), its name in `KNOBS` of
//! `python/pytorch_loader.py`. A value type new to the table also needs
//! [`KnobValue`](crate::preset::KnobValue), which every `named_values!` enum has.

use serde::Serialize;
use serde_json::Value;

use crate::plan::Config;
use crate::preset::IntraOpThreads;

mod records;
use records::*;

/// One sweep knob.
pub struct Knob {
    /// The field's name in presets, extra configs, configs, results, the CSV and the
    /// PyTorch runtime's request.
    pub field: &'static str,
    /// What tables and the app call it.
    pub label: &'static str,
    /// A config's value, as a preset would write it (the CSV's cell).
    pub value: fn(&Config) -> String,
    /// Its part of a config's label, given the config that holds the values most
    /// configs share; `None` leaves it out.
    pub tag: fn(&Config, &Config) -> Option<String>,
    /// Its column in tables.
    pub column: Column,
    /// Its `DataLoader(...)` argument, if PyTorch's DataLoader takes it.
    pub python: Option<Python>,
    /// The value the PyTorch runtime's script gets under the knob's name, if that
    /// runtime takes it.
    pub script_value: Option<fn(&Config) -> Value>,
}

/// A knob's column in the results table.
pub enum Column {
    /// One of the classic experiment's columns, always shown first
    /// (`num_workers | persistent | pin`); labels name these knobs first too.
    Classic,
    /// No column.
    None,
    /// A column, where the configs' cells differ.
    WhereVaries(fn(&Config) -> String),
    /// A column, where the test says the configs differ.
    Where(fn(&Config) -> String, fn(&[Config]) -> bool),
}

impl Column {
    /// The cell of `config`, and whether `configs` need the column; `None` for no
    /// column or a classic one.
    pub fn of(&self, configs: &[Config]) -> Option<fn(&Config) -> String> {
        match *self {
            Column::Classic | Column::None => None,
            Column::WhereVaries(cell) => configs
                .iter()
                .any(|c| cell(c) != cell(&configs[0]))
                .then_some(cell),
            Column::Where(cell, varies) => varies(configs).then_some(cell),
        }
    }
}

/// A knob as a keyword argument of PyTorch's `DataLoader`.
pub struct Python {
    pub keyword: &'static str,
    /// A config's value as Python code; `None` leaves the argument out (PyTorch refuses
    /// some without workers).
    pub value: fn(&Config) -> Option<String>,
}

/// Every sweep knob, in grid order: the first varies slowest, `num_workers` fastest, so
/// its list reads top to bottom in tables.
pub const KNOBS: [Knob; 17] = [
    RUNTIME,
    START_METHOD,
    PIPELINE,
    CACHE,
    TRANSFORM_AT,
    BATCH_SIZE,
    DEVICE,
    WORKER_KIND,
    DATASET_TRANSFER,
    BATCH_TRANSFER,
    PERSISTENT_WORKERS,
    PIN_MEMORY,
    PREFETCH_FACTOR,
    IN_ORDER,
    INTRA_OP_THREADS,
    RANKS,
    NUM_WORKERS,
];

/// Every sweep knob, in the order configs hold them, labels name them and tables show
/// them.
pub const KNOBS_IN_CONFIG_ORDER: [Knob; KNOBS.len()] = [
    PIPELINE,
    TRANSFORM_AT,
    BATCH_SIZE,
    NUM_WORKERS,
    WORKER_KIND,
    PERSISTENT_WORKERS,
    PREFETCH_FACTOR,
    PIN_MEMORY,
    IN_ORDER,
    DEVICE,
    DATASET_TRANSFER,
    BATCH_TRANSFER,
    RUNTIME,
    START_METHOD,
    INTRA_OP_THREADS,
    RANKS,
    CACHE,
];

/// The knob named `field`, if it is one.
pub fn knob(field: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|knob| knob.field == field)
}

/// A rank's intra-op threads: `auto` is one thread per rank when there are several, as
/// torchrun sets OMP_NUM_THREADS=1 for each of its processes; without it every rank
/// starts a thread per core and they spin against each other. The PyTorch runtime's
/// ranks run with the same.
pub fn rank_threads(threads: IntraOpThreads, world: usize) -> IntraOpThreads {
    match threads {
        IntraOpThreads::Auto if world > 1 => IntraOpThreads::Count(1),
        other => other,
    }
}

/// `True` or `False`.
pub(crate) fn python_bool(value: bool) -> String {
    if value { "True" } else { "False" }.to_owned()
}

pub(crate) fn json<T: Serialize + ?Sized>(value: &T) -> Value {
    // Knob values are plain enums, numbers and strings, which serde_json always takes.
    serde_json::to_value(value).unwrap_or(Value::Null)
}
