//! The "Set up a run" side panel. It edits a copy of the [`Preset`] (the engine's own
//! type) and returns `Action::Edit` with the copy when anything changed. Fields typed as
//! text (lists such as `0,2,4,8`, paths) keep their text in a [`Form`], the panel's own
//! widget state, so half-typed input is never reformatted; a text that does not parse is
//! marked beside its field, and so is the field named by the plan's validation error.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

use egui::{ComboBox, RichText, Ui};

use loaderbench_engine::dataset::DatasetKind;
use loaderbench_engine::error::Error;
use loaderbench_engine::preset::{
    BatchTransfer, DatasetTransfer, Preset, Runtime, StartMethod, TransformAt,
};

use super::actions::{Action, Pick};

mod fields;
mod pipelines;
mod python_fields;
mod run_fields;

use fields::{
    choice_field, count_field, devices, kind_field, list_field, named, samples_field, worker_kinds,
};
use pipelines::{extra_configs, pipelines};
use python_fields::{args_text, python_fields};
use run_fields::{RunText, dataset_extras, identity, run_fields};

/// The text of the fields typed as text, and their parse errors.
#[derive(Debug, Clone, Default)]
pub struct Form {
    dataset_path: String,
    samples: String,
    batch_size: String,
    num_workers: String,
    prefetch_factor: String,
    factory: String,
    args: String,
    collate: String,
    run: RunText,
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
            factory: preset.dataset.factory.clone().unwrap_or_default(),
            args: args_text(&preset.dataset.args),
            collate: preset.dataset.collate.clone().unwrap_or_default(),
            run: RunText::from_preset(preset),
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

/// The parse errors of the form, by field.
type Errors = BTreeMap<&'static str, String>;

/// The field named `key`'s problem: its text's, else the plan's.
type Problem<'a> = &'a dyn Fn(&Errors, &str) -> Option<String>;

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
    // Whether the plan's error was marked beside its field; if not, it goes at the end.
    let marked = std::cell::Cell::new(false);
    let error = |errors: &Errors, field: &str| -> Option<String> {
        errors.get(field).cloned().or_else(|| {
            let problem = cx
                .plan_error
                .filter(|_| plan_field == Some(field))
                .map(ToString::to_string);
            marked.set(marked.get() || problem.is_some());
            problem
        })
    };

    section(ui, "Preset");
    egui::Grid::new("preset_grid")
        .num_columns(2)
        .spacing([10.0, 6.0])
        .show(ui, |ui| identity(ui, &mut edited, &mut form.errors, &error));

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
                        DatasetKind::Python,
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
                let python = edited.dataset.kind == DatasetKind::Python;
                ui.horizontal(|ui| {
                    let field = ui
                        .add_enabled(
                            !synthetic,
                            egui::TextEdit::singleline(&mut form.dataset_path)
                                .hint_text(if python {
                                    "module (.py)"
                                } else {
                                    "file or directory"
                                })
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
                        let pick = if python {
                            Pick::PythonModule
                        } else {
                            Pick::Dataset(edited.dataset.kind)
                        };
                        actions.push(Action::Browse(pick));
                    }
                });
                mark(
                    ui,
                    dataset_path_error(&edited)
                        .or_else(|| error(&form.errors, "dataset"))
                        .or_else(|| error(&form.errors, "dataset.path")),
                );
            });
            ui.end_row();
            if edited.dataset.kind == DatasetKind::Python {
                python_fields(ui, form, &mut edited, &error);
            }
            dataset_extras(ui, &mut form.run, &mut edited, &mut form.errors, &error);
        });

    section(ui, "Pipeline");
    pipelines(ui, &mut edited);
    mark(ui, error(&form.errors, "pipeline"));

    section(ui, "Loader");
    egui::Grid::new("loader_grid")
        .num_columns(2)
        .spacing([10.0, 6.0])
        .show(ui, |ui| {
            samples_field(ui, form, &mut edited, error(&form.errors, "samples"));
            let problem = error(&form.errors, "batch_size");
            list_field(
                ui,
                "batch size",
                "batch_size",
                &mut form.batch_size,
                &mut form.errors,
                &mut edited.batch_size,
                problem,
            );
            count_field(
                ui,
                "epochs",
                &mut edited.epochs,
                error(&form.errors, "epochs"),
            );
            let problem = error(&form.errors, "num_workers");
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
            let problem = error(&form.errors, "prefetch_factor");
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
                "transform at",
                &mut edited.transform_at,
                named(TransformAt::ALL, TransformAt::name),
                None,
            );
            kind_field(
                ui,
                "worker kind",
                &mut edited.worker_kind,
                worker_kinds(),
                None,
            );
            kind_field(
                ui,
                "dataset transfer",
                &mut edited.dataset_transfer,
                named(DatasetTransfer::ALL, DatasetTransfer::name),
                None,
            );
            kind_field(
                ui,
                "batch transfer",
                &mut edited.batch_transfer,
                named(BatchTransfer::ALL, BatchTransfer::name),
                None,
            );
            kind_field(
                ui,
                "runtime",
                &mut edited.runtime,
                named(Runtime::ALL, Runtime::name),
                None,
            );
            let no_pytorch = (!edited.runtime.contains(&Runtime::Pytorch))
                .then_some("Only the pytorch runtime starts worker processes this way");
            kind_field(
                ui,
                "start method",
                &mut edited.start_method,
                named(StartMethod::ALL, StartMethod::name),
                no_pytorch,
            );
            devices(
                ui,
                &mut edited.device,
                cx.cuda_devices,
                error(&form.errors, "device"),
            );
            count_field(
                ui,
                "repeats",
                &mut edited.repeats,
                error(&form.errors, "repeats"),
            );
            let label = ui.label("warm-up");
            ui.checkbox(&mut edited.warmup, "one unmeasured epoch first")
                .labelled_by(label.id);
            ui.end_row();
        });

    section(ui, "Samples and training");
    egui::Grid::new("run_grid")
        .num_columns(2)
        .spacing([10.0, 6.0])
        .show(ui, |ui| {
            run_fields(ui, &mut form.run, &mut edited, &mut form.errors, &error)
        });

    extra_configs(ui, &mut edited);

    if let Some(problem) = cx.plan_error.filter(|_| !marked.get()) {
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
        DatasetKind::Python => "python",
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
