//! The side panel's field widgets: the text fields that hold a number or a list, the
//! yes/no/both and named-choice menus of the sweep knobs, and the device checkboxes.

use std::collections::BTreeMap;

use egui::{ComboBox, DragValue, Ui};

use loaderbench_engine::preset::{Preset, WorkerKind};

use super::{Form, mark, parse_list};

pub(super) fn samples_field(
    ui: &mut Ui,
    form: &mut Form,
    edited: &mut Preset,
    problem: Option<String>,
) {
    let label = ui.label("samples");
    ui.vertical(|ui| {
        let field = ui
            .add(
                egui::TextEdit::singleline(&mut form.samples)
                    .hint_text("all")
                    .desired_width(120.0),
            )
            .labelled_by(label.id);
        if field.changed() {
            let text = form.samples.trim();
            if text.is_empty() {
                edited.samples = None;
                form.errors.remove("samples");
            } else {
                match text.replace('_', "").parse::<usize>() {
                    Ok(n) => {
                        edited.samples = Some(n);
                        form.errors.remove("samples");
                    }
                    Err(_) => {
                        form.errors
                            .insert("samples", format!("`{text}` is not a whole number"));
                    }
                }
            }
        }
        mark(ui, problem);
    });
    ui.end_row();
}

/// A text field holding a list of whole numbers (one value, or a sweep).
pub(super) fn list_field(
    ui: &mut Ui,
    title: &str,
    key: &'static str,
    text: &mut String,
    errors: &mut BTreeMap<&'static str, String>,
    values: &mut Vec<usize>,
    problem: Option<String>,
) {
    let label = ui.label(title);
    ui.vertical(|ui| {
        let field = ui
            .add(
                egui::TextEdit::singleline(text)
                    .hint_text("e.g. 0,2,4,8")
                    .desired_width(120.0),
            )
            .labelled_by(label.id)
            .on_hover_text("One value, or a comma-separated list to sweep");
        if field.changed() {
            match parse_list(text) {
                Ok(parsed) => {
                    *values = parsed;
                    errors.remove(key);
                }
                Err(problem) => {
                    errors.insert(key, problem);
                }
            }
        }
        mark(ui, problem);
    });
    ui.end_row();
}

pub(super) fn count_field(ui: &mut Ui, title: &str, value: &mut usize, problem: Option<String>) {
    let label = ui.label(title);
    ui.vertical(|ui| {
        ui.add(DragValue::new(value).range(1..=1000))
            .labelled_by(label.id);
        mark(ui, problem);
    });
    ui.end_row();
}

/// A sweepable yes/no knob: no, yes, or both.
pub(super) fn choice_field(
    ui: &mut Ui,
    title: &str,
    values: &mut Vec<bool>,
    enabled: bool,
    disabled_note: &str,
) {
    let label = ui.label(title);
    let current = match values.as_slice() {
        [true] => "yes",
        [false] => "no",
        _ => "both (sweep)",
    };
    ui.add_enabled_ui(enabled, |ui| {
        ComboBox::from_id_salt(title)
            .selected_text(current)
            .show_ui(ui, |ui| {
                for (name, choice) in [
                    ("no", vec![false]),
                    ("yes", vec![true]),
                    ("both (sweep)", vec![false, true]),
                ] {
                    if ui.selectable_label(current == name, name).clicked() {
                        *values = choice;
                    }
                }
            })
            .response
            .labelled_by(label.id)
            .on_disabled_hover_text(disabled_note);
    });
    ui.end_row();
}

/// The worker kinds this platform has.
pub(super) fn worker_kinds() -> Vec<(&'static str, WorkerKind)> {
    let kinds = if cfg!(unix) {
        WorkerKind::ALL
    } else {
        &[WorkerKind::Thread]
    };
    named(kinds, WorkerKind::name)
}

/// Each of `values` with its name, for a menu.
pub(super) fn named<T: Copy>(values: &[T], name: fn(T) -> &'static str) -> Vec<(&'static str, T)> {
    values.iter().map(|&value| (name(value), value)).collect()
}

/// A sweepable choice among named values: one of them, or all of them ("both" when there
/// are two). A sweep of some but not all (from a preset file) shows their names.
pub(super) fn kind_field<T: Copy + PartialEq>(
    ui: &mut Ui,
    title: &str,
    values: &mut Vec<T>,
    choices: Vec<(&'static str, T)>,
    disabled_note: Option<&str>,
) {
    let label = ui.label(title);
    let all: Vec<T> = choices.iter().map(|(_, value)| *value).collect();
    let sweep_all = if all.len() == 2 {
        "both (sweep)"
    } else {
        "all (sweep)"
    };
    let name_of = |one: &T| {
        choices
            .iter()
            .find(|(_, value)| value == one)
            .map_or("?", |(name, _)| *name)
    };
    let current = match values.as_slice() {
        [one] => name_of(one).to_owned(),
        some if some.len() < all.len() => {
            let names: Vec<&str> = some.iter().map(name_of).collect();
            format!("{} (sweep)", names.join(", "))
        }
        _ => sweep_all.to_owned(),
    };
    ui.add_enabled_ui(disabled_note.is_none(), |ui| {
        ComboBox::from_id_salt(title)
            .selected_text(&current)
            .show_ui(ui, |ui| {
                for (name, value) in &choices {
                    if ui.selectable_label(current == *name, *name).clicked() {
                        *values = vec![*value];
                    }
                }
                if ui
                    .selectable_label(current == sweep_all, sweep_all)
                    .clicked()
                {
                    *values = all.clone();
                }
            })
            .response
            .labelled_by(label.id)
            .on_disabled_hover_text(disabled_note.unwrap_or_default());
    });
    ui.end_row();
}

/// One checkbox per device present, plus any the preset names that are not.
pub(super) fn devices(
    ui: &mut Ui,
    selected: &mut Vec<String>,
    cuda_devices: usize,
    problem: Option<String>,
) {
    let label = ui.label("device");
    ui.vertical(|ui| {
        let mut names: Vec<String> = std::iter::once("cpu".to_owned())
            .chain((0..cuda_devices).map(|i| format!("cuda:{i}")))
            .collect();
        for name in selected.iter() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        ui.horizontal_wrapped(|ui| {
            for name in &names {
                let mut on = selected.contains(name);
                if ui
                    .checkbox(&mut on, name.as_str())
                    .labelled_by(label.id)
                    .changed()
                {
                    if on {
                        selected.push(name.clone());
                    } else {
                        selected.retain(|d| d != name);
                    }
                }
            }
        });
        let missing: Vec<&String> = selected
            .iter()
            .filter(|name| {
                name.as_str() != "cpu" && !name.starts_with("cuda")
                    || cuda_missing(name, cuda_devices)
            })
            .collect();
        if !missing.is_empty() {
            let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
            mark(
                ui,
                Some(format!("not on this machine: {}", names.join(", "))),
            );
        }
        mark(ui, problem);
    });
    ui.end_row();
}

fn cuda_missing(name: &str, cuda_devices: usize) -> bool {
    match name.parse::<loaderbench_engine::device::DeviceSpec>() {
        Ok(loaderbench_engine::device::DeviceSpec::Cuda(index)) => index >= cuda_devices,
        Ok(loaderbench_engine::device::DeviceSpec::Cpu) => false,
        Err(_) => true,
    }
}
