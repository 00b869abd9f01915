//! `--set KEY=VALUE`: any preset field edited by its dotted path before the preset is
//! checked, the value read as the RON a preset file would hold there, or as a bare
//! word, number or comma-separated list; a single value for a sweep list replaces the
//! list and fixes that knob in every extra config, several drop the extra configs that
//! give it another value.

use crate::error::{Error, Result};

use super::{PRESET_VERSION, Preset, ron_options};

impl Preset {
    /// Sets the field at `key` (a dotted path such as `dataset.path` or `num_workers`)
    /// from `value`: any RON the field takes in a preset file, or a bare word, number or
    /// comma-separated list. A single value given for a sweep list replaces the list, and
    /// also fixes that knob in every extra config; several replace the list and drop the
    /// extra configs that give the knob another value.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        // The file's format, not a setting: a preset of another version is read by the
        // build that writes it, never made one by a `--set`.
        if key == "version" {
            return Err(Error::value(format!(
                "--set version: the preset format's version ({}) is not a setting",
                super::PRESET_VERSION
            )));
        }
        // The JSON tree the value goes through has no infinity or NaN (it would read as
        // `null`, and the error said "invalid type: null"); no field takes one, whether
        // it is the value or a number inside it (`fixed(inf)`, `[1, NaN]`).
        let not_finite = |part: &str| part.parse::<f64>().is_ok_and(|v| !v.is_finite());
        let structure = |c: char| c.is_whitespace() || ",()[]{}:".contains(c);
        if value.split(structure).any(not_finite) {
            return Err(Error::value(format!(
                "--set {key}={value}: not a finite number"
            )));
        }
        let mut tree = serde_json::to_value(&*self).map_err(|err| Error::value(err.to_string()))?;
        let as_ron = ron_value(key, value);
        // A field the preset reads is there even when left out whole (`dataset.limits`,
        // saved only when a cap is raised).
        let slot = field_mut(&mut tree, key, as_ron.is_ok())
            .ok_or_else(|| Error::value(format!("--set {key}: no such field in a preset")))?;
        *slot = match &as_ron {
            Ok(parsed) => parsed.clone(),
            Err(_) => parse_value(value, slot),
        };
        // A sweep knob set to one value is fixed in every extra config too; set to
        // several, the extra configs that give it another value are dropped (they are
        // points off the sweep asked for). Any other key is no field of an extra config,
        // so this changes nothing for it.
        let list = slot.as_array().filter(|values| values.len() > 1).cloned();
        if let Some(points) = tree["extra_configs"].as_array_mut() {
            match list {
                None => points.iter_mut().for_each(|point| {
                    if let Some(fields) = point.as_object_mut() {
                        fields.remove(key);
                    }
                }),
                Some(values) => points.retain(|point| {
                    point
                        .get(key)
                        .is_none_or(|value| value.is_null() || values.contains(value))
                }),
            }
        }
        *self = serde_json::from_value(tree).map_err(|err| {
            // Text written as RON is best explained by RON's error, a bare word by
            // what the field expected instead.
            let problem = match as_ron {
                Err(ron) if value.contains(['(', '[', '{', '"']) => ron,
                _ => err.to_string(),
            };
            Error::value(format!("--set {key}={value}: {problem}"))
        })?;
        Ok(())
    }
}

/// What the RON `text` gives the field at `key`, in the preset's JSON tree: `text` is
/// written into an otherwise empty preset (`a.b` as `(a: (b: text))`), which is parsed
/// and read back, so the field's own type reads it, as from a preset file. Fails where
/// the text is no RON for the field, and on paths through lists and maps.
fn ron_value(key: &str, text: &str) -> std::result::Result<serde_json::Value, String> {
    let mut parts = key.split('.').rev();
    let leaf = parts.next().unwrap_or(key);
    let mut field = format!("{leaf}: {}", text.trim());
    for parent in parts {
        field = format!("{parent}: ({field})");
    }
    let top = key.split('.').next().unwrap_or(key);
    let required = [
        ("version", PRESET_VERSION.to_string()),
        ("name", "\"\"".to_owned()),
    ]
    .into_iter()
    .filter(|(name, _)| *name != top)
    .map(|(name, value)| format!("{name}: {value}, "));
    let document = format!("({}{field})", required.collect::<String>());
    let preset: Preset = ron_options()
        .from_str(&document)
        .map_err(|err| err.code.to_string())?;
    let mut tree = serde_json::to_value(&preset).map_err(|err| err.to_string())?;
    // The caps are left out of a saved preset at their defaults; a cap set to its
    // default is still a field.
    if let Some(dataset) = tree.get_mut("dataset").and_then(|d| d.as_object_mut()) {
        let limits = serde_json::to_value(preset.dataset.limits).map_err(|e| e.to_string())?;
        dataset.entry("limits").or_insert(limits);
    }
    tree.pointer(&format!("/{}", key.replace('.', "/")))
        .cloned()
        .ok_or_else(|| format!("{key} is no field"))
}

/// The JSON node at a dotted path; list items are addressed by their index.
/// A missing leaf of an existing object (an optional field left out) is created, and so
/// are missing objects on the way with `create_parents`.
fn field_mut<'a>(
    tree: &'a mut serde_json::Value,
    key: &str,
    create_parents: bool,
) -> Option<&'a mut serde_json::Value> {
    let (parents, leaf) = match key.rsplit_once('.') {
        Some((parents, leaf)) => (Some(parents), leaf),
        None => (None, key),
    };
    let mut node = tree;
    for part in parents.into_iter().flat_map(|p| p.split('.')) {
        node = match node {
            serde_json::Value::Object(map) => {
                if create_parents && !map.contains_key(part) {
                    let empty = serde_json::Value::Object(Default::default());
                    map.insert(part.to_owned(), empty);
                }
                map.get_mut(part)?
            }
            serde_json::Value::Array(items) => items.get_mut(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match node {
        serde_json::Value::Object(map) => Some(
            map.entry(leaf.to_owned())
                .or_insert(serde_json::Value::Null),
        ),
        serde_json::Value::Array(items) => items.get_mut(leaf.parse::<usize>().ok()?),
        _ => None,
    }
}

/// Reads a command-line value for the slot it will replace: JSON where it parses
/// (numbers, booleans, lists, objects), a comma-separated list or a single value wrapped
/// into a list where the slot is a list, and a plain string otherwise.
fn parse_value(text: &str, slot: &serde_json::Value) -> serde_json::Value {
    let scalar = |t: &str| {
        serde_json::from_str(t.trim())
            .unwrap_or_else(|_| serde_json::Value::String(t.trim().to_owned()))
    };
    let parsed = scalar(text);
    if slot.is_array() && !parsed.is_array() {
        return serde_json::Value::Array(text.split(',').map(scalar).collect());
    }
    parsed
}
