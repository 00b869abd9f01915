//! The knobs as the plan uses them: [`Config`]'s fields and one [`Knob`] record each,
//! both generated from the knob table ([`crate::knob_table`]); [`KNOBS`] in grid order (the
//! first varies slowest, `num_workers` fastest, so its list reads top to bottom in
//! tables). A knob is a list in [`Preset`], an optional value in [`ConfigPoint`] and a
//! value in [`Config`], under the same field name; the plan's empty-list check, grid,
//! extra configs and common config, and the CSV's knob columns work from this list
//! through the serde form of those three types.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::device::DeviceSpec;
use crate::preset::{
    BatchTransfer, Cache, ConfigPoint, DatasetTransfer, IntraOpThreads, Preset, Runtime,
    StartMethod, TransformAt, WorkerKind,
};
use crate::transform::PipelineSpec;

/// One sweep knob.
pub struct Knob {
    /// The field's name in presets, extra configs, results, the CSV and the reference
    /// script's request.
    pub field: &'static str,
    /// What tables and the app call it.
    pub label: &'static str,
    /// A config's value, as a preset would write it.
    pub value: fn(&Config) -> String,
    /// Its part of a config's label, given the config that holds the values most
    /// configs share; `None` leaves it out.
    pub tag: fn(&Config, &Config) -> Option<String>,
    /// Its column in tables.
    pub column: Column,
    /// Its `DataLoader(...)` argument, if PyTorch's DataLoader takes it.
    pub python: Option<Python>,
    /// The value the reference script gets under the knob's name, if the pytorch
    /// runtime takes it.
    pub reference: Option<fn(&Config) -> Value>,
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

/// Generates [`Config`] (each knob's value, then the fields given here), its knob
/// records and [`KNOBS`].
macro_rules! config_and_knobs {
    (
        { $($config:tt)* }
        knobs: [$(
            $(#[doc = $doc:literal])*
            $field:ident: $knob_type:ty $(=> $config_type:ty)? {
                presets: [$($_preset_default:expr),+ $(,)?],
                config: [$(#[$config_meta:meta])*],
                label: $label:literal,
                value: $value:expr,
                tag: $tag:expr,
                column: $column:expr,
                python: $python:expr,
                reference: $reference:expr $(,)?
            },
        )*]
        grid: [$($grid:ident),* $(,)?]
    ) => {
        /// One point of the sweep: every loader knob with a single value.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct Config {
            $(
                $(#[doc = $doc])*
                $(#[$config_meta])*
                pub $field: config_type!($knob_type $(=> $config_type)?),
            )*
            $($config)*
        }

        /// Each knob's record, under its field's name.
        #[allow(non_upper_case_globals)]
        mod record {
            use super::*;
            $(
                pub const $field: Knob = Knob {
                    field: stringify!($field),
                    label: $label,
                    value: $value,
                    tag: $tag,
                    column: $column,
                    python: $python,
                    reference: $reference,
                };
            )*
        }

        /// Every sweep knob, in grid order.
        pub const KNOBS: [Knob; [$(stringify!($field)),*].len()] = [$(record::$grid),*];

        /// Every sweep knob, in the order configs hold them, labels name them and
        /// tables show them.
        pub const KNOBS_IN_CONFIG_ORDER: [Knob; KNOBS.len()] = [$(record::$field),*];
    };
}

/// A config's type for a knob: the preset's, unless the table names another.
macro_rules! config_type {
    ($type:ty) => {
        $type
    };
    ($type:ty => $config:ty) => {
        $config
    };
}

crate::knob_table::knob_table!(config_and_knobs {
    /// Non-zero for a copy of another config measured under its own name (an A/A check).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub copy: usize,
    /// The saved run this config comes from, when several are shown together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
});

fn one_rank() -> usize {
    1
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

/// `True` or `False`.
fn python_bool(value: bool) -> String {
    if value { "True" } else { "False" }.to_owned()
}

fn json<T: Serialize + ?Sized>(value: &T) -> Value {
    // Knob values are plain enums, numbers and strings, which serde_json always takes.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A rank's intra-op threads: `auto` is one thread per rank when there are several, as
/// torchrun sets OMP_NUM_THREADS=1 for each of its processes; without it every rank
/// starts a thread per core and they spin against each other. The pytorch runtime's
/// ranks run with the same.
pub fn rank_threads(threads: IntraOpThreads, world: usize) -> IntraOpThreads {
    match threads {
        IntraOpThreads::Auto if world > 1 => IntraOpThreads::Count(1),
        other => other,
    }
}

/// The knob named `field`, if it is one.
pub fn knob(field: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|knob| knob.field == field)
}

/// Each knob's list in `preset`, as JSON values, in grid order.
pub(super) fn lists(preset: &Preset) -> Vec<(&'static str, Vec<Value>)> {
    let tree = to_fields(preset);
    KNOBS
        .iter()
        .map(|knob| {
            let values = match tree.get(knob.field) {
                Some(Value::Array(values)) => values.clone(),
                _ => Vec::new(),
            };
            (knob.field, values)
        })
        .collect()
}

/// The Cartesian product of every knob's list, in grid order. Each list must hold at
/// least one value.
pub(super) fn grid(preset: &Preset) -> Result<Vec<Config>, serde_json::Error> {
    let mut points = vec![Map::new()];
    for (field, values) in lists(preset) {
        points = points
            .into_iter()
            .flat_map(|point| {
                values.iter().map(move |value| {
                    let mut point = point.clone();
                    point.insert(field.to_owned(), value.clone());
                    point
                })
            })
            .collect();
    }
    points.into_iter().map(config).collect()
}

/// The config `point` describes: the knobs it sets, and each list's first value for the
/// rest.
pub(super) fn extra_config(
    preset: &Preset,
    point: &ConfigPoint,
) -> Result<Config, serde_json::Error> {
    let mut fields: Map<String, Value> = lists(preset)
        .into_iter()
        .filter_map(|(field, values)| Some((field.to_owned(), values.into_iter().next()?)))
        .collect();
    fields.extend(to_fields(point));
    config(fields)
}

/// For each knob, the value most of `configs` share (the last of equally common ones).
pub(super) fn most_common(configs: &[Config]) -> Result<Config, serde_json::Error> {
    let trees: Vec<Map<String, Value>> = configs.iter().map(to_fields).collect();
    let mut fields = Map::new();
    for knob in &KNOBS {
        let values: Vec<&Value> = trees.iter().filter_map(|t| t.get(knob.field)).collect();
        let count = |v: &Value| values.iter().filter(|w| **w == v).count();
        if let Some(value) = values.iter().copied().max_by_key(|v| count(v)) {
            fields.insert(knob.field.to_owned(), value.clone());
        }
    }
    config(fields)
}

fn config(fields: Map<String, Value>) -> Result<Config, serde_json::Error> {
    serde_json::from_value(Value::Object(fields))
}

/// The fields of a plain serde struct.
fn to_fields(value: &impl serde::Serialize) -> Map<String, Value> {
    // Presets, extra configs and configs are structs of plain data with string keys,
    // which serde_json turns into an object without fail.
    match serde_json::to_value(value) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_is_a_field_of_the_preset_the_extra_configs_and_the_config() {
        let preset = to_fields(&Preset::default());
        let config = to_fields(
            &super::super::Plan::from_preset(&Preset::default(), None)
                .unwrap()
                .configs[0],
        );
        let knobs: Vec<&str> = KNOBS.iter().map(|k| k.field).collect();
        for field in &knobs {
            assert!(preset[*field].is_array(), "{field} is not a list in Preset");
            assert!(config.contains_key(*field), "{field} is not in Config");
        }
        // A config holds exactly the knobs; an extra config can set each of them.
        let mut config_fields: Vec<&str> = config.keys().map(String::as_str).collect();
        config_fields.sort_unstable();
        let mut sorted = knobs.clone();
        sorted.sort_unstable();
        assert_eq!(config_fields, sorted);
        for field in knobs {
            let mut fields = Map::new();
            fields.insert(field.to_owned(), preset[field][0].clone());
            let point: ConfigPoint = serde_json::from_value(Value::Object(fields))
                .unwrap_or_else(|err| panic!("{field} is not in ConfigPoint: {err}"));
            assert!(to_fields(&point).contains_key(field), "{field}");
        }
    }

    #[test]
    fn the_grid_names_every_knob_of_the_table_once() {
        let mut grid: Vec<&str> = KNOBS.iter().map(|k| k.field).collect();
        let mut table: Vec<&str> = KNOBS_IN_CONFIG_ORDER.iter().map(|k| k.field).collect();
        grid.sort_unstable();
        grid.dedup();
        table.sort_unstable();
        assert_eq!(grid, table);
    }

    #[test]
    fn a_preset_that_leaves_the_knobs_out_gets_each_knob_s_default() {
        let text = "(version: 1, name: \"untitled\")";
        let preset = Preset::from_ron(text, std::path::Path::new("p.ron")).unwrap();
        assert_eq!(preset, Preset::default());
        assert_eq!(
            super::super::Plan::from_preset(&preset, None)
                .unwrap()
                .configs,
            [Config::default()]
        );
    }

    #[test]
    fn labels_name_the_classic_knobs_first_then_the_others_in_table_order() {
        let common = Config::default();
        let config = Config {
            num_workers: 2,
            batch_size: 128,
            pin_memory: true,
            worker_kind: WorkerKind::Spawn,
            persistent_workers: true,
            ranks: 2,
            copy: 1,
            ..Config::default()
        };
        assert_eq!(
            config.label(&common),
            "nw=2 persistent pin bs=128 spawn ranks=2 copy 1"
        );
    }

    #[test]
    fn the_reference_script_gets_the_knobs_pytorch_takes_under_their_names() {
        let config = Config {
            ranks: 4,
            ..Config::default()
        };
        let sent: Map<String, Value> = KNOBS
            .iter()
            .filter_map(|knob| Some((knob.field.to_owned(), (knob.reference?)(&config))))
            .collect();
        assert_eq!(sent["batch_size"], 64);
        assert_eq!(sent["device"], "cpu");
        assert_eq!(
            sent["intra_op_threads"], 1,
            "one thread per rank, as torchrun"
        );
        assert!(
            !sent.contains_key("worker_kind"),
            "PyTorch has no thread workers"
        );
    }
}
