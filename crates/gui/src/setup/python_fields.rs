//! The side panel's fields for the user's own Python dataset (`kind: python`): the
//! factory, its keyword arguments as `key = value` lines (a value is JSON where it parses,
//! as with `--set`, and text otherwise) and the collate function. The module's path is
//! the dataset's path field, with its Browse button.

use std::collections::BTreeMap;

use egui::Ui;
use serde_json::Value;

use loaderbench_engine::preset::{FieldPath, Preset};

use super::{Errors, Form, Problem, mark, text_field};

/// The labels, hints and field paths of one call's rows: the dataset's or the step's.
pub(super) struct CallRows {
    factory: &'static str,
    factory_hint: &'static str,
    /// Where the plan marks a bad factory (the step's are marked on the whole step).
    factory_field: Option<FieldPath>,
    args: &'static str,
    args_hint: &'static str,
    args_field: FieldPath,
}

/// The user's Dataset's call.
const DATASET_CALL: CallRows = CallRows {
    factory: "factory",
    factory_hint: "make_dataset",
    factory_field: Some(FieldPath::DATASET_FACTORY),
    args: "args",
    args_hint: "root = /data/mnist",
    args_field: FieldPath::DATASET_ARGS,
};

/// The user's step's call.
pub(super) const STEP_CALL: CallRows = CallRows {
    factory: "step factory",
    factory_hint: "make_step",
    factory_field: None,
    args: "step args",
    args_hint: "lr = 0.05",
    args_field: FieldPath::STEP_ARGS,
};

/// What the user changed in a call's rows this frame: the factory's name (trimmed),
/// the arguments when they parse.
#[derive(Default)]
pub(super) struct CallEdit {
    pub factory: Option<String>,
    pub args: Option<BTreeMap<String, Value>>,
}

/// The rows of a call of the user's Python function (`PythonCall`: the dataset's and
/// the step's), its factory and its keyword arguments as `key = value` lines; the
/// module's path is the caller's file field. Arguments that do not parse are marked and
/// kept out of the preset.
pub(super) fn call_fields(
    ui: &mut Ui,
    rows: &CallRows,
    factory: &mut String,
    args: &mut String,
    errors: &mut Errors,
    problem: Problem<'_>,
) -> CallEdit {
    let mut edit = CallEdit::default();
    let factory_problem = rows.factory_field.as_ref().and_then(|f| problem(errors, f));
    if name_field(
        ui,
        rows.factory,
        rows.factory_hint,
        factory,
        factory_problem,
    ) {
        edit.factory = Some(factory.trim().to_owned());
    }
    let label = ui.label(rows.args);
    ui.vertical(|ui| {
        let field = ui
            .add(
                egui::TextEdit::multiline(args)
                    .hint_text(rows.args_hint)
                    .desired_rows(2)
                    .desired_width(150.0),
            )
            .labelled_by(label.id)
            .on_hover_text("The factory's keyword arguments, one `key = value` a line");
        if field.changed() {
            match parse_args(args) {
                Ok(parsed) => {
                    edit.args = Some(parsed);
                    errors.remove(&rows.args_field);
                }
                Err(why) => {
                    errors.insert(rows.args_field.clone(), why);
                }
            }
        }
        mark(ui, problem(errors, &rows.args_field));
    });
    ui.end_row();
    edit
}

/// The rows of the dataset grid for a python dataset: its call and the collate
/// function. `error` gives the problem to mark beside a field, from the form or the plan.
pub(super) fn python_fields(ui: &mut Ui, form: &mut Form, edited: &mut Preset, error: Problem<'_>) {
    let edit = call_fields(
        ui,
        &DATASET_CALL,
        &mut form.factory,
        &mut form.args,
        &mut form.errors,
        error,
    );
    if let Some(factory) = edit.factory {
        edited.dataset.factory = (!factory.is_empty()).then_some(factory);
    }
    if let Some(args) = edit.args {
        edited.dataset.args = args;
    }
    let problem = error(&form.errors, &FieldPath::DATASET_COLLATE);
    if name_field(ui, "collate", "none", &mut form.collate, problem) {
        let collate = form.collate.trim();
        edited.dataset.collate = (!collate.is_empty()).then(|| collate.to_owned());
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
            let changed = text_field(ui, &label, text, hint, 150.0).changed();
            mark(ui, problem);
            changed
        })
        .inner;
    ui.end_row();
    changed
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
