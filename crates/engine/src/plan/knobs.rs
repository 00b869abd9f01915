//! The sweep, worked from the knob table ([`crate::plan::knob_table`]): a knob is a list in
//! [`Preset`], an optional value in [`ConfigPoint`] and a value in [`Config`], under the
//! same field name, so the plan's empty-list check, grid, extra configs and common
//! config work from the table through the serde form of those three types. The tests
//! here hold the table and the three types to each other.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::Config;
use super::knob_table::KNOBS;
use crate::preset::{ConfigPoint, Preset};

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

/// The config of each list's first value.
pub(super) fn first_values(preset: &Preset) -> Result<Config, serde_json::Error> {
    extra_config(preset, &ConfigPoint::default())
}

/// For each knob, the value most of `configs` share; of equally common ones, the
/// default config's where it is one of them (a label leaves out what a reader takes for
/// granted), else the first in plan order. Counted in one pass per knob, keyed by each
/// value's JSON text: labels are made for every config of plans of thousands.
pub(super) fn most_common(configs: &[Config]) -> Result<Config, serde_json::Error> {
    let trees: Vec<Map<String, Value>> = configs.iter().map(to_fields).collect();
    let default = to_fields(&Config::default());
    let mut fields = Map::new();
    for knob in &KNOBS {
        let values: Vec<&Value> = trees.iter().filter_map(|t| t.get(knob.field)).collect();
        let mut counts: HashMap<String, usize> = HashMap::new();
        let keys: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        for key in &keys {
            *counts.entry(key.clone()).or_default() += 1;
        }
        let Some(&most) = counts.values().max() else {
            continue;
        };
        let default_value = default
            .get(knob.field)
            .filter(|v| counts.get(&v.to_string()) == Some(&most));
        let first_of_most = values
            .iter()
            .zip(&keys)
            .find(|(_, key)| counts[*key] == most)
            .map(|(value, _)| *value);
        if let Some(value) = default_value.or(first_of_most) {
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
    use crate::plan::KNOBS_IN_CONFIG_ORDER;
    use crate::preset::{KnobLists, KnobValue, WorkerKind};

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

    /// The other way round: every list of a preset (but the extra configs), every field
    /// of an extra config (but `copy`) and every list the preset hands its visitors is a
    /// knob of the table, so a field added to one type without its record fails here.
    #[test]
    fn every_knob_field_of_the_three_types_has_its_record() {
        let mut knobs: Vec<&str> = KNOBS.iter().map(|k| k.field).collect();
        knobs.sort_unstable();
        let preset = to_fields(&Preset::default());
        let mut lists: Vec<&str> = preset
            .iter()
            .filter(|(field, value)| value.is_array() && *field != "extra_configs")
            .map(|(field, _)| field.as_str())
            .collect();
        lists.sort_unstable();
        assert_eq!(lists, knobs, "Preset's lists");
        let point = to_fields(&ConfigPoint::first_of(&Preset::default()));
        let mut points: Vec<&str> = point.keys().map(String::as_str).collect();
        points.sort_unstable();
        assert_eq!(points, knobs, "ConfigPoint's fields");

        struct Visited(Vec<&'static str>);
        impl KnobLists for Visited {
            fn list<T: KnobValue>(&mut self, field: &'static str, _: &mut Vec<T>) {
                self.0.push(field);
            }
        }
        let mut visited = Visited(Vec::new());
        Preset::default().each_knob(&mut visited);
        let in_order: Vec<&str> = KNOBS_IN_CONFIG_ORDER.iter().map(|k| k.field).collect();
        assert_eq!(visited.0, in_order, "Preset::each_knob");
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

    /// A sweep of two values, each in half the configs: the default's is left out of the
    /// labels (`intra_op_threads: [auto, 1]` names threads=1), else the first's.
    #[test]
    fn of_equally_common_values_labels_leave_out_the_default_else_the_first() {
        let labels = |sets: &[(&str, &str)]| {
            let mut preset = Preset {
                num_workers: vec![0, 2],
                ..Preset::default()
            };
            for (key, value) in sets {
                preset.set(key, value).unwrap();
            }
            super::super::Plan::from_preset(&preset, None)
                .unwrap()
                .labels()
        };
        assert_eq!(
            labels(&[("intra_op_threads", "1,auto")]),
            ["nw=0 threads=1", "nw=2 threads=1", "nw=0", "nw=2"]
        );
        assert_eq!(
            labels(&[("batch_size", "128,32")]),
            ["nw=0", "nw=2", "nw=0 bs=32", "nw=2 bs=32"]
        );
    }

    #[test]
    fn the_pytorch_script_gets_the_knobs_pytorch_takes_under_their_names() {
        let config = Config {
            ranks: 4,
            ..Config::default()
        };
        let sent: Map<String, Value> = KNOBS
            .iter()
            .filter_map(|knob| Some((knob.field.to_owned(), (knob.script_value?)(&config))))
            .collect();
        assert_eq!(sent["batch_size"], 64);
        assert_eq!(sent["device"], "cpu");
        assert_eq!(
            sent["intra_op_threads"], 1,
            "one thread per rank, as torchrun"
        );
        assert_eq!(
            sent["worker_kind"], "thread",
            "thread workers are torchdata.nodes' there"
        );
    }
}
