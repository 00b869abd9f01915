//! The knob registry: every sweep knob once, in the order the grid expands them (the
//! first varies slowest, `num_workers` fastest, so its list reads top to bottom in
//! tables). A knob is a list in [`Preset`], an optional value in [`ConfigPoint`] and a
//! value in [`Config`], under the same field name; the plan's empty-list check, grid,
//! extra configs and common config, and the CSV's knob columns work from this list
//! through the serde form of those three types. Adding a knob is its three fields, one
//! entry in [`KNOBS`] and its behaviour.

use serde_json::{Map, Value};

use super::Config;
use crate::preset::{ConfigPoint, Preset};

/// One sweep knob.
pub struct Knob {
    /// The field's name in presets, extra configs, results and the CSV.
    pub field: &'static str,
    /// What tables and the app call it.
    pub label: &'static str,
    /// A config's value, as a preset would write it.
    pub value: fn(&Config) -> String,
}

/// Every sweep knob, in grid order.
pub const KNOBS: [Knob; 16] = [
    Knob {
        field: "runtime",
        label: "runtime",
        value: |c| c.runtime.name().to_owned(),
    },
    Knob {
        field: "start_method",
        label: "start method",
        value: |c| c.start_method.name().to_owned(),
    },
    Knob {
        field: "pipeline",
        label: "pipeline",
        value: |c| c.pipeline.name().to_owned(),
    },
    Knob {
        field: "transform_at",
        label: "transform at",
        value: |c| c.transform_at.name().to_owned(),
    },
    Knob {
        field: "batch_size",
        label: "batch size",
        value: |c| c.batch_size.to_string(),
    },
    Knob {
        field: "device",
        label: "device",
        value: |c| c.device.to_string(),
    },
    Knob {
        field: "worker_kind",
        label: "worker kind",
        value: |c| c.worker_kind.name().to_owned(),
    },
    Knob {
        field: "dataset_transfer",
        label: "dataset transfer",
        value: |c| c.dataset_transfer.name().to_owned(),
    },
    Knob {
        field: "batch_transfer",
        label: "batch transfer",
        value: |c| c.batch_transfer.name().to_owned(),
    },
    Knob {
        field: "persistent_workers",
        label: "persistent",
        value: |c| c.persistent_workers.to_string(),
    },
    Knob {
        field: "pin_memory",
        label: "pin memory",
        value: |c| c.pin_memory.to_string(),
    },
    Knob {
        field: "prefetch_factor",
        label: "prefetch",
        value: |c| c.prefetch_factor.to_string(),
    },
    Knob {
        field: "in_order",
        label: "in order",
        value: |c| c.in_order.to_string(),
    },
    Knob {
        field: "intra_op_threads",
        label: "intra-op threads",
        value: |c| c.intra_op_threads.name(),
    },
    Knob {
        field: "ranks",
        label: "ranks",
        value: |c| c.ranks.to_string(),
    },
    Knob {
        field: "num_workers",
        label: "num_workers",
        value: |c| c.num_workers.to_string(),
    },
];

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
}
