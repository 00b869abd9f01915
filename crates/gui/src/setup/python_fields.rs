//! The side panel's fields for the user's own Python dataset (`kind: python`): the
//! factory, its keyword arguments as `key = value` lines (a value is JSON where it parses,
//! as with `--set`, and text otherwise) and the collate function. The module's path is
//! the dataset's path field, with its Browse button.

use std::collections::BTreeMap;

use egui::Ui;
use serde_json::Value;

use loaderbench_engine::preset::{FieldPath, Preset};

use super::{Form, Problem, mark};

/// The rows of the dataset grid for a python dataset. `error` gives the problem to mark
/// beside a field, from the form or the plan.
pub(super) fn python_fields(ui: &mut Ui, form: &mut Form, edited: &mut Preset, error: Problem<'_>) {
    let problem = error(&form.errors, &FieldPath::DATASET_FACTORY);
    if name_field(ui, "factory", "make_dataset", &mut form.factory, problem) {
        edited.dataset.factory = optional(&form.factory);
    }

    let label = ui.label("args");
    ui.vertical(|ui| {
        let field = ui
            .add(
                egui::TextEdit::multiline(&mut form.args)
                    .hint_text("root = /data/mnist")
                    .desired_rows(2)
                    .desired_width(150.0),
            )
            .labelled_by(label.id)
            .on_hover_text("The factory's keyword arguments, one `key = value` a line");
        if field.changed() {
            match parse_args(&form.args) {
                Ok(args) => {
                    edited.dataset.args = args;
                    form.errors.remove(&FieldPath::DATASET_ARGS);
                }
                Err(problem) => {
                    form.errors.insert(FieldPath::DATASET_ARGS, problem);
                }
            }
        }
        mark(ui, error(&form.errors, &FieldPath::DATASET_ARGS));
    });
    ui.end_row();

    let problem = error(&form.errors, &FieldPath::DATASET_COLLATE);
    if name_field(ui, "collate", "none", &mut form.collate, problem) {
        edited.dataset.collate = optional(&form.collate);
    }
}

/// A one-line field for a function's name; true when its text changed.
fn name_field(
    ui: &mut Ui,
    title: &str,
    hint: &str,
    text: &mut String,
    problem: Option<String>,
) -> bool {
    let label = ui.label(title);
    let changed = ui
        .vertical(|ui| {
            let changed = ui
                .add(
                    egui::TextEdit::singleline(text)
                        .hint_text(hint)
                        .desired_width(150.0),
                )
                .labelled_by(label.id)
                .changed();
            mark(ui, problem);
            changed
        })
        .inner;
    ui.end_row();
    changed
}

fn optional(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The arguments as `key = value` lines.
pub(super) fn args_text(args: &BTreeMap<String, Value>) -> String {
    args.iter()
        .map(|(key, value)| format!("{key} = {}", value_text(value)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A string as it is unless it would read back as something else; the rest as JSON.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) if serde_json::from_str::<Value>(text).is_err() => text.clone(),
        other => other.to_string(),
    }
}

/// Reads `key = value` lines (blank lines skipped).
pub(super) fn parse_args(text: &str) -> Result<BTreeMap<String, Value>, String> {
    let mut args = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .filter(|(key, _)| !key.trim().is_empty())
            .ok_or_else(|| format!("line {}: expected `key = value`", number + 1))?;
        let value = value.trim();
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        args.insert(key.trim().to_owned(), value);
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_read_as_json_or_text_and_round_trip() {
        let args = parse_args("root = /data/mnist\n\n n = 3\nname = \"7\"\nflag=true").unwrap();
        assert_eq!(args["root"], "/data/mnist");
        assert_eq!(args["n"], 3);
        assert_eq!(args["name"], "7");
        assert_eq!(args["flag"], true);
        assert_eq!(parse_args(&args_text(&args)).unwrap(), args);
        assert_eq!(
            parse_args("root /data").unwrap_err(),
            "line 1: expected `key = value`"
        );
        assert!(parse_args(" = 3").is_err());
    }
}
