//! The side panel's field widgets: one field per knob of the knob table (the text
//! fields that hold a list, the named-choice menus, the device checkboxes), the run
//! order, the Python path and the sample count; and the sweep lists' text, written from
//! a knob's values and parsed back.

use std::any::Any;
use std::collections::BTreeMap;
use std::path::PathBuf;

use egui::{ComboBox, DragValue, Ui};

use loaderbench_engine::plan::knob;
use loaderbench_engine::preset::{FieldPath, KnobLists, KnobValue, Preset, RunOrder, UnusedFields};

use super::{Errors, Form, Problem, choice_field, mark, missing, text_field};

pub(super) fn samples_field(
    ui: &mut Ui,
    form: &mut Form,
    edited: &mut Preset,
    problem: Option<String>,
) {
    let label = ui.label("samples");
    ui.vertical(|ui| {
        let field = text_field(ui, &label, &mut form.samples, "all", 120.0);
        if field.changed() {
            let text = form.samples.trim();
            if text.is_empty() {
                edited.samples = None;
                form.errors.remove(&FieldPath::SAMPLES);
            } else {
                match text.replace('_', "").parse::<usize>() {
                    Ok(n) => {
                        edited.samples = Some(n);
                        form.errors.remove(&FieldPath::SAMPLES);
                    }
                    Err(_) => {
                        form.errors.insert(
                            FieldPath::SAMPLES,
                            format!("`{text}` is not a whole number"),
                        );
                    }
                }
            }
        }
        mark(ui, problem);
    });
    ui.end_row();
}

/// The Loader grid's field of each knob of the table ([`Preset::each_knob`]), under the
/// knob's label: a menu for values chosen by name (yes/no, worker kinds, runtimes…), a
/// checkbox per device, and a text field for lists typed as text (numbers, thread
/// counts). The pipelines have their own section.
pub(super) struct KnobFields<'a, 'u> {
    pub ui: &'u mut Ui,
    /// The text of the knobs typed as text.
    pub texts: &'a mut BTreeMap<&'static str, String>,
    pub errors: &'a mut Errors,
    pub problem: Problem<'a>,
    pub cuda_devices: usize,
    /// The knobs the preset's plan leaves unused, whose fields are greyed out.
    pub unused: UnusedFields,
}

impl KnobLists for KnobFields<'_, '_> {
    fn list<T: KnobValue>(&mut self, field: &'static str, values: &mut Vec<T>) {
        // The pipelines have their own section, under the knob's label.
        let Some(knob) = knob(field).filter(|_| field != "pipeline") else {
            return;
        };
        let problem = (self.problem)(self.errors, &FieldPath::of(field));
        if field == "device"
            && let Some(devices) = (values as &mut dyn Any).downcast_mut::<Vec<String>>()
        {
            device_field(self.ui, knob.label, devices, self.cuda_devices, problem);
            return;
        }
        let Some(mut choices) = T::choices() else {
            let text = self.texts.entry(field).or_default();
            list_field(
                self.ui,
                knob.label,
                FieldPath::of(field),
                text,
                self.errors,
                values,
                problem,
            );
            return;
        };
        let disabled = if field == "pin_memory" && self.cuda_devices == 0 {
            Some("No CUDA device here: pinned memory only speeds up copies to a GPU".to_owned())
        } else {
            self.unused.why(field).map(does_nothing)
        };
        if field == "worker_kind" && !cfg!(unix) {
            // Our engine's worker processes need a Unix system.
            choices.retain(|(name, _)| name == "auto" || name == "thread");
        }
        kind_field(
            self.ui,
            knob.label,
            values,
            choices,
            disabled.as_deref(),
            problem,
        );
    }
}

/// What the app says of a field whose value the plan leaves unused ([`UnusedFields`]).
pub(super) fn does_nothing(why: &str) -> String {
    format!("Does nothing here: {why}")
}

/// A text field holding a list (one value, or a comma-separated sweep).
fn list_field<T: KnobValue>(
    ui: &mut Ui,
    title: &str,
    key: FieldPath,
    text: &mut String,
    errors: &mut Errors,
    values: &mut Vec<T>,
    problem: Option<String>,
) {
    let label = ui.label(title);
    ui.vertical(|ui| {
        let field = text_field(ui, &label, text, "e.g. 0,2,4,8", 120.0)
            .on_hover_text("One value, or a comma-separated list to sweep");
        if field.changed() {
            match parse_list(text) {
                Ok(parsed) => {
                    *values = parsed;
                    errors.remove(&key);
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

/// In which order configs and repeats are measured: one of the orders.
pub(super) fn order_field(ui: &mut Ui, order: &mut RunOrder) {
    let orders = RunOrder::ALL.iter().copied();
    choice_field(ui, ("order", "order"), order, orders, RunOrder::name)
        .on_hover_text("In which order configs and repeats are measured");
    ui.end_row();
}

/// The Python that runs the pytorch runtime, typed as a path; empty for the default.
pub(super) fn python_path_field(ui: &mut Ui, text: &mut String, python: &mut Option<PathBuf>) {
    let label = ui.label("python executable");
    ui.vertical(|ui| {
        let field = text_field(ui, &label, text, "$LOADERBENCH_PYTHON or setup's", 180.0)
            .on_hover_text("The Python that runs the pytorch runtime, with its packages");
        if field.changed() {
            let path = text.trim();
            *python = (!path.is_empty()).then(|| PathBuf::from(path));
        }
        mark(ui, missing(python.as_deref()));
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

/// A sweepable choice among named values: one of them, all of them ("both" when there
/// are two), or all but one of more than two. Any other sweep (from a preset file) shows
/// their names; the plan's problem with the knob is marked beside it.
fn kind_field<T: Clone + PartialEq>(
    ui: &mut Ui,
    title: &str,
    values: &mut Vec<T>,
    choices: Vec<(String, T)>,
    disabled_note: Option<&str>,
    problem: Option<String>,
) {
    let label = ui.label(title);
    let all: Vec<T> = choices.iter().map(|(_, value)| value.clone()).collect();
    let sweep_all = if all.len() == 2 {
        "both (sweep)"
    } else {
        "all (sweep)"
    };
    let name_of = |one: &T| {
        choices
            .iter()
            .find(|(_, value)| value == one)
            .map_or("?", |(name, _)| name.as_str())
    };
    // Every value, and with more than two, every value but one (the two runtimes of
    // three, say), each named as the field shows it once chosen.
    let mut sweeps = vec![(sweep_all.to_owned(), all.clone())];
    if all.len() > 2 {
        for left_out in &all {
            let some: Vec<T> = all.iter().filter(|v| *v != left_out).cloned().collect();
            let names: Vec<&str> = some.iter().map(name_of).collect();
            sweeps.push((format!("{} (sweep)", names.join(", ")), some));
        }
    }
    let current = match values.as_slice() {
        [one] => name_of(one).to_owned(),
        some if some.len() < all.len() => {
            let names: Vec<&str> = some.iter().map(name_of).collect();
            format!("{} (sweep)", names.join(", "))
        }
        _ => sweep_all.to_owned(),
    };
    ui.vertical(|ui| {
        ui.add_enabled_ui(disabled_note.is_none(), |ui| {
            ComboBox::from_id_salt(title)
                .selected_text(&current)
                .show_ui(ui, |ui| {
                    for (name, value) in &choices {
                        if ui
                            .selectable_label(current == *name, name.as_str())
                            .clicked()
                        {
                            *values = vec![value.clone()];
                        }
                    }
                    for (name, sweep) in &sweeps {
                        if ui
                            .selectable_label(current == *name, name.as_str())
                            .clicked()
                        {
                            *values = sweep.clone();
                        }
                    }
                })
                .response
                .labelled_by(label.id)
                .on_disabled_hover_text(disabled_note.unwrap_or_default());
        });
        mark(ui, problem);
    });
    ui.end_row();
}

/// One checkbox per device present, plus any the preset names that are not.
fn device_field(
    ui: &mut Ui,
    title: &str,
    selected: &mut Vec<String>,
    cuda_devices: usize,
    problem: Option<String>,
) {
    let label = ui.label(title);
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

/// The text of each knob typed as text, by field.
pub(super) fn knob_texts(preset: &Preset) -> BTreeMap<&'static str, String> {
    struct Texts(BTreeMap<&'static str, String>);
    impl KnobLists for Texts {
        fn list<T: KnobValue>(&mut self, field: &'static str, values: &mut Vec<T>) {
            if T::choices().is_none() {
                self.0.insert(field, list_text(values));
            }
        }
    }
    let mut texts = Texts(BTreeMap::new());
    preset.clone().each_knob(&mut texts);
    texts.0
}

/// `0,2,4` from a list.
fn list_text<T: KnobValue>(values: &[T]) -> String {
    values.iter().map(T::text).collect::<Vec<_>>().join(",")
}

/// Parses `0, 2,4` into a list of values (whole numbers, for most knobs).
fn parse_list<T: KnobValue>(text: &str) -> Result<Vec<T>, String> {
    let values = text
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(T::parse)
        .collect::<Result<Vec<_>, _>>()?;
    if values.is_empty() {
        return Err("give at least one value, e.g. 0,2,4".to_owned());
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sweep_lists() {
        assert_eq!(parse_list("0, 2,4,8"), Ok(vec![0_usize, 2, 4, 8]));
        assert_eq!(parse_list("4"), Ok(vec![4_usize]));
        assert!(parse_list::<usize>("0,x").unwrap_err().contains("`x`"));
        assert!(parse_list::<usize>(" ").is_err());
        use loaderbench_engine::preset::IntraOpThreads::{Auto, Count};
        assert_eq!(parse_list("auto, 2"), Ok(vec![Auto, Count(2)]));
    }
}
