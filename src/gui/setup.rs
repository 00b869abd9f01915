//! The "Set up a run" side panel. It edits a copy of the [`Preset`] (the engine's own
//! type) and returns `Action::Edit` with the copy when anything changed. Fields typed as
//! text (lists such as `0,2,4,8`, paths) keep their text in a [`Form`], the panel's own
//! widget state, so half-typed input is never reformatted; a text that does not parse is
//! marked beside its field, and so is the field named by the plan's validation error.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

use egui::{ComboBox, DragValue, RichText, Ui};

use crate::dataset::DatasetKind;
use crate::error::Error;
use crate::preset::{BatchTransfer, DatasetTransfer, Preset, Runtime, StartMethod, WorkerKind};
use crate::transform::{Op, PipelineSpec};

use super::actions::{Action, Pick};

/// The text of the fields typed as text, and their parse errors.
#[derive(Debug, Clone, Default)]
pub struct Form {
    dataset_path: String,
    samples: String,
    batch_size: String,
    num_workers: String,
    prefetch_factor: String,
    errors: BTreeMap<&'static str, String>,
}

impl Form {
    /// The form showing `preset`'s values.
    pub fn from_preset(preset: &Preset) -> Form {
        Form {
            dataset_path: preset
                .dataset
                .path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            samples: preset.samples.map(|n| n.to_string()).unwrap_or_default(),
            batch_size: list_text(&preset.batch_size),
            num_workers: list_text(&preset.num_workers),
            prefetch_factor: list_text(&preset.prefetch_factor),
            errors: BTreeMap::new(),
        }
    }

    /// Shows a path picked in a file dialog.
    pub fn set_dataset_path(&mut self, path: &std::path::Path) {
        self.dataset_path = path.display().to_string();
    }

    /// True while some text does not parse (the preset keeps its last good value).
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }
}

/// What the panel needs to know besides the preset.
pub struct Context<'a> {
    pub cuda_devices: usize,
    /// The plan's validation error, if the preset does not make a valid plan.
    pub plan_error: Option<&'a Error>,
    pub running: bool,
}

/// `0,2,4` from a list.
fn list_text(values: &[usize]) -> String {
    values
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses `0, 2,4` into a list of whole numbers.
pub fn parse_list(text: &str) -> Result<Vec<usize>, String> {
    let values = text
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| usize::from_str(part).map_err(|_| format!("`{part}` is not a whole number")))
        .collect::<Result<Vec<_>, _>>()?;
    if values.is_empty() {
        return Err("give at least one value, e.g. 0,2,4".to_owned());
    }
    Ok(values)
}

/// Draws the panel.
pub fn draw(
    ui: &mut Ui,
    preset: &Preset,
    form: &mut Form,
    cx: &Context,
    actions: &mut Vec<Action>,
) {
    let mut edited = preset.clone();
    let plan_field = cx.plan_error.and_then(Error::field);
    let error = |form: &Form, field: &str| -> Option<String> {
        form.errors.get(field).cloned().or_else(|| {
            cx.plan_error
                .filter(|_| plan_field == Some(field))
                .map(ToString::to_string)
        })
    };

    section(ui, "Dataset");
    egui::Grid::new("dataset_grid")
        .num_columns(2)
        .spacing([10.0, 6.0])
        .show(ui, |ui| {
            let label = ui.label("kind");
            ComboBox::from_id_salt("dataset_kind")
                .selected_text(kind_name(edited.dataset.kind))
                .show_ui(ui, |ui| {
                    for kind in [
                        DatasetKind::Synthetic,
                        DatasetKind::Idx,
                        DatasetKind::ImageFolder,
                        DatasetKind::Npy,
                    ] {
                        ui.selectable_value(&mut edited.dataset.kind, kind, kind_name(kind));
                    }
                })
                .response
                .labelled_by(label.id);
            ui.end_row();

            let label = ui.label("path");
            ui.vertical(|ui| {
                let synthetic = edited.dataset.kind == DatasetKind::Synthetic;
                ui.horizontal(|ui| {
                    let field = ui
                        .add_enabled(
                            !synthetic,
                            egui::TextEdit::singleline(&mut form.dataset_path)
                                .hint_text("file or directory")
                                .desired_width(150.0),
                        )
                        .labelled_by(label.id)
                        .on_disabled_hover_text("The synthetic dataset needs no files");
                    if field.changed() {
                        let text = form.dataset_path.trim();
                        edited.dataset.path = (!text.is_empty()).then(|| PathBuf::from(text));
                    }
                    if ui
                        .add_enabled(!synthetic, egui::Button::new("Browse…"))
                        .clicked()
                    {
                        actions.push(Action::Browse(Pick::Dataset));
                    }
                });
                mark(
                    ui,
                    dataset_path_error(&edited).or_else(|| error(form, "dataset")),
                );
            });
            ui.end_row();
        });

    section(ui, "Pipeline");
    pipelines(ui, &mut edited);
    mark(ui, error(form, "pipeline"));

    section(ui, "Loader");
    egui::Grid::new("loader_grid")
        .num_columns(2)
        .spacing([10.0, 6.0])
        .show(ui, |ui| {
            samples_field(ui, form, &mut edited, error(form, "samples"));
            let problem = error(form, "batch_size");
            list_field(
                ui,
                "batch size",
                "batch_size",
                &mut form.batch_size,
                &mut form.errors,
                &mut edited.batch_size,
                problem,
            );
            count_field(ui, "epochs", &mut edited.epochs, error(form, "epochs"));
            let problem = error(form, "num_workers");
            list_field(
                ui,
                "num_workers",
                "num_workers",
                &mut form.num_workers,
                &mut form.errors,
                &mut edited.num_workers,
                problem,
            );
            choice_field(
                ui,
                "persistent workers",
                &mut edited.persistent_workers,
                true,
                "",
            );
            let pin_note = if cx.cuda_devices == 0 {
                "No CUDA device here: pinned memory only speeds up copies to a GPU"
            } else {
                ""
            };
            choice_field(
                ui,
                "pin memory",
                &mut edited.pin_memory,
                cx.cuda_devices > 0,
                pin_note,
            );
            let problem = error(form, "prefetch_factor");
            list_field(
                ui,
                "prefetch factor",
                "prefetch_factor",
                &mut form.prefetch_factor,
                &mut form.errors,
                &mut edited.prefetch_factor,
                problem,
            );
            choice_field(ui, "in order", &mut edited.in_order, true, "");
            kind_field(
                ui,
                "worker kind",
                &mut edited.worker_kind,
                worker_kinds(),
                None,
            );
            let transfers = [DatasetTransfer::Reopen, DatasetTransfer::Copy];
            kind_field(
                ui,
                "dataset transfer",
                &mut edited.dataset_transfer,
                transfers.map(|t| (t.name(), t)).to_vec(),
                None,
            );
            let transfers = [BatchTransfer::SharedMemory, BatchTransfer::Pipe];
            kind_field(
                ui,
                "batch transfer",
                &mut edited.batch_transfer,
                transfers.map(|t| (t.name(), t)).to_vec(),
                None,
            );
            let runtimes = [Runtime::Loaderbench, Runtime::Pytorch];
            kind_field(
                ui,
                "runtime",
                &mut edited.runtime,
                runtimes.map(|r| (r.name(), r)).to_vec(),
                None,
            );
            let methods = [
                StartMethod::Fork,
                StartMethod::Spawn,
                StartMethod::Forkserver,
            ];
            let no_pytorch = (!edited.runtime.contains(&Runtime::Pytorch))
                .then_some("Only the pytorch runtime starts worker processes this way");
            kind_field(
                ui,
                "start method",
                &mut edited.start_method,
                methods.map(|m| (m.name(), m)).to_vec(),
                no_pytorch,
            );
            devices(
                ui,
                &mut edited.device,
                cx.cuda_devices,
                error(form, "device"),
            );
            count_field(ui, "repeats", &mut edited.repeats, error(form, "repeats"));
            let label = ui.label("warm-up");
            ui.checkbox(&mut edited.warmup, "one unmeasured epoch first")
                .labelled_by(label.id);
            ui.end_row();
        });

    extra_configs(ui, &mut edited);

    if let Some(problem) = cx.plan_error.filter(|_| plan_field.is_none()) {
        mark(ui, Some(problem.to_string()));
    }
    if edited != *preset {
        actions.push(Action::Edit(Box::new(edited)));
    }
}

fn section(ui: &mut Ui, title: &str) {
    ui.add_space(8.0);
    ui.label(RichText::new(title).strong().size(15.0));
    ui.add_space(2.0);
}

/// Shows a problem in the error colour, wrapped to the panel.
fn mark(ui: &mut Ui, problem: Option<String>) {
    if let Some(problem) = problem {
        let color = ui.visuals().error_fg_color;
        ui.add(egui::Label::new(RichText::new(problem).color(color).small()).wrap());
    }
}

fn kind_name(kind: DatasetKind) -> &'static str {
    match kind {
        DatasetKind::Synthetic => "synthetic",
        DatasetKind::Idx => "idx",
        DatasetKind::ImageFolder => "image folder",
        DatasetKind::Npy => "npy",
    }
}

/// A dataset that needs a path and has none, or points nowhere.
fn dataset_path_error(preset: &Preset) -> Option<String> {
    if preset.dataset.kind == DatasetKind::Synthetic {
        return None;
    }
    match &preset.dataset.path {
        None => Some("this dataset needs a path".to_owned()),
        Some(path) if !path.exists() => Some(format!("{} does not exist", path.display())),
        Some(_) => None,
    }
}

fn samples_field(ui: &mut Ui, form: &mut Form, edited: &mut Preset, problem: Option<String>) {
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
fn list_field(
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

fn count_field(ui: &mut Ui, title: &str, value: &mut usize, problem: Option<String>) {
    let label = ui.label(title);
    ui.vertical(|ui| {
        ui.add(DragValue::new(value).range(1..=1000))
            .labelled_by(label.id);
        mark(ui, problem);
    });
    ui.end_row();
}

/// A sweepable yes/no knob: no, yes, or both.
fn choice_field(
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
fn worker_kinds() -> Vec<(&'static str, WorkerKind)> {
    let mut kinds = vec![WorkerKind::Thread];
    if cfg!(unix) {
        kinds.extend([WorkerKind::Spawn, WorkerKind::Fork]);
    }
    kinds.into_iter().map(|k| (k.name(), k)).collect()
}

/// A sweepable choice among named values: one of them, or all of them ("both" when there
/// are two). A sweep of some but not all (from a preset file) shows their names.
fn kind_field<T: Copy + PartialEq>(
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
fn devices(ui: &mut Ui, selected: &mut Vec<String>, cuda_devices: usize, problem: Option<String>) {
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
    match name.parse::<crate::device::DeviceSpec>() {
        Ok(crate::device::DeviceSpec::Cuda(index)) => index >= cuda_devices,
        Ok(crate::device::DeviceSpec::Cpu) => false,
        Err(_) => true,
    }
}

fn pipelines(ui: &mut Ui, preset: &mut Preset) {
    let mut remove = None;
    let many = preset.pipeline.len() > 1;
    for (index, spec) in preset.pipeline.iter_mut().enumerate() {
        ui.push_id(("pipeline", index), |ui| {
            ui.horizontal(|ui| {
                let label = ui.label(if many { "sweep" } else { "pipeline" });
                let name = match spec {
                    PipelineSpec::Light => "light",
                    PipelineSpec::Heavy => "heavy",
                    PipelineSpec::Custom { .. } => "custom",
                };
                ComboBox::from_id_salt("pipeline_kind")
                    .selected_text(name)
                    .show_ui(ui, |ui| {
                        if ui.selectable_label(name == "light", "light").clicked() {
                            *spec = PipelineSpec::Light;
                        }
                        if ui.selectable_label(name == "heavy", "heavy").clicked() {
                            *spec = PipelineSpec::Heavy;
                        }
                        if ui.selectable_label(name == "custom", "custom").clicked()
                            && name != "custom"
                        {
                            *spec = PipelineSpec::Custom {
                                name: "custom".to_owned(),
                                ops: spec.ops(),
                            };
                        }
                    })
                    .response
                    .labelled_by(label.id);
                if many
                    && ui
                        .small_button("×")
                        .on_hover_text("Remove this pipeline")
                        .clicked()
                {
                    remove = Some(index);
                }
            });
            if let PipelineSpec::Custom { name, ops } = spec {
                custom_ops(ui, name, ops);
            }
        });
    }
    if let Some(index) = remove {
        preset.pipeline.remove(index);
    }
    if ui
        .small_button("+ sweep another pipeline")
        .on_hover_text("Each pipeline is measured with every loader setting")
        .clicked()
    {
        let next = if preset.pipeline.contains(&PipelineSpec::Heavy) {
            PipelineSpec::Light
        } else {
            PipelineSpec::Heavy
        };
        preset.pipeline.push(next);
    }
}

fn custom_ops(ui: &mut Ui, name: &mut String, ops: &mut Vec<Op>) {
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.horizontal(|ui| {
            let label = ui.label("name");
            ui.add(egui::TextEdit::singleline(name).desired_width(120.0))
                .labelled_by(label.id);
        });
        let mut remove = None;
        for (index, op) in ops.iter_mut().enumerate() {
            ui.push_id(("op", index), |ui| {
                ui.horizontal_wrapped(|ui| {
                    ui.label(RichText::new(format!("{}.", index + 1)).weak());
                    op_editor(ui, op);
                    if ui
                        .small_button("×")
                        .on_hover_text("Remove this op")
                        .clicked()
                    {
                        remove = Some(index);
                    }
                });
            });
        }
        if let Some(index) = remove {
            ops.remove(index);
        }
        ui.menu_button("+ add op", |ui| {
            for op in op_templates() {
                if ui.button(op_name(&op)).clicked() {
                    ops.push(op);
                }
            }
        });
    });
}

fn op_templates() -> Vec<Op> {
    vec![
        Op::Rotate { degrees: 30.0 },
        Op::Elastic {
            alpha: 50.0,
            sigma: 5.0,
        },
        Op::GaussianBlur {
            kernel: 5,
            sigma: [0.1, 2.0],
        },
        Op::Flip { p: 0.5 },
        Op::Crop {
            size: [28, 28],
            padding: 4,
        },
        Op::Resize { size: [32, 32] },
        Op::Cost {
            micros_per_sample: 100,
        },
        Op::Normalize,
    ]
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Rotate { .. } => "rotate",
        Op::Elastic { .. } => "elastic",
        Op::GaussianBlur { .. } => "gaussian blur",
        Op::Flip { .. } => "flip",
        Op::Crop { .. } => "crop",
        Op::Resize { .. } => "resize",
        Op::Cost { .. } => "cost",
        Op::Normalize => "normalize",
    }
}

/// The op's name and a drag value per parameter.
fn op_editor(ui: &mut Ui, op: &mut Op) {
    ui.label(op_name(op));
    match op {
        Op::Rotate { degrees } => {
            ui.add(DragValue::new(degrees).range(0.0..=180.0).suffix("°"));
        }
        Op::Elastic { alpha, sigma } => {
            ui.add(DragValue::new(alpha).prefix("alpha ").speed(0.5));
            ui.add(DragValue::new(sigma).prefix("sigma ").speed(0.1));
        }
        Op::GaussianBlur { kernel, sigma } => {
            ui.add(DragValue::new(kernel).prefix("kernel ").range(1..=31));
            ui.add(DragValue::new(&mut sigma[0]).prefix("σ ").speed(0.05));
            ui.add(DragValue::new(&mut sigma[1]).prefix("to ").speed(0.05));
        }
        Op::Flip { p } => {
            ui.add(DragValue::new(p).prefix("p ").range(0.0..=1.0).speed(0.01));
        }
        Op::Crop { size, padding } => {
            ui.add(DragValue::new(&mut size[0]).prefix("h ").range(1..=4096));
            ui.add(DragValue::new(&mut size[1]).prefix("w ").range(1..=4096));
            ui.add(DragValue::new(padding).prefix("pad ").range(0..=256));
        }
        Op::Resize { size } => {
            ui.add(DragValue::new(&mut size[0]).prefix("h ").range(1..=4096));
            ui.add(DragValue::new(&mut size[1]).prefix("w ").range(1..=4096));
        }
        Op::Cost { micros_per_sample } => {
            ui.add(
                DragValue::new(micros_per_sample)
                    .suffix(" µs/sample")
                    .speed(5),
            );
        }
        Op::Normalize => {}
    }
}

/// The configs beyond the grid, each with a button that removes it.
fn extra_configs(ui: &mut Ui, preset: &mut Preset) {
    if preset.extra_configs.is_empty() {
        return;
    }
    section(ui, "Extra configs");
    let mut remove = None;
    for (index, point) in preset.extra_configs.iter().enumerate() {
        ui.horizontal(|ui| {
            let mut parts = Vec::new();
            if let Some(n) = point.num_workers {
                parts.push(format!("nw={n}"));
            }
            if point.persistent_workers == Some(true) {
                parts.push("persistent".to_owned());
            }
            if point.pin_memory == Some(true) {
                parts.push("pin".to_owned());
            }
            if let Some(b) = point.batch_size {
                parts.push(format!("bs={b}"));
            }
            if let Some(p) = &point.pipeline {
                parts.push(p.name().to_owned());
            }
            ui.label(RichText::new(parts.join(" ")).monospace());
            if ui
                .small_button("×")
                .on_hover_text("Remove this extra config")
                .clicked()
            {
                remove = Some(index);
            }
        });
    }
    if let Some(index) = remove {
        preset.extra_configs.remove(index);
    }
    ui.label(
        RichText::new("Measured after the grid; unset knobs take each list's first value.")
            .weak()
            .small(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sweep_lists() {
        assert_eq!(parse_list("0, 2,4,8"), Ok(vec![0, 2, 4, 8]));
        assert_eq!(parse_list("4"), Ok(vec![4]));
        assert!(parse_list("0,x").unwrap_err().contains("`x`"));
        assert!(parse_list(" ").is_err());
    }
}
