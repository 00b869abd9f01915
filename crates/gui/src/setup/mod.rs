//! The "Set up a run" side panel. It edits a copy of the [`Preset`] (the engine's own
//! type) and returns `Action::Edit` with the copy when anything changed. Each knob of the
//! knob table gets its field from the table ([`Preset::each_knob`]). Fields typed as
//! text (lists such as `0,2,4,8`, paths) keep their text in a [`Form`], the panel's own
//! widget state, so half-typed input is never reformatted; a text that does not parse is
//! marked beside its field, and so is the field named by the plan's validation error or
//! by the last run's refusal of this same preset ([`Refusal`]). A shard pattern is
//! checked off the frame ([`shard_check`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use egui::{ComboBox, RichText, Ui};

use loaderbench_engine::dataset::DatasetKind;
use loaderbench_engine::error::Error;
use loaderbench_engine::preset::{FieldPath, Preset, UnusedFields};

use super::actions::{Action, Pick};

mod fields;
mod pipelines;
mod python_fields;
mod run_fields;
mod shard_check;
mod step_fields;

use fields::{KnobFields, count_field, knob_texts, order_field, python_path_field, samples_field};
use pipelines::{extra_configs, pipelines};
use python_fields::{args_text, python_fields};
use run_fields::{RunText, dataset_extras, identity, run_fields};
use shard_check::ShardCheck;
use step_fields::{StepText, step_fields};

/// The text of the fields typed as text, and their parse errors.
#[derive(Debug, Clone, Default)]
pub struct Form {
    dataset_path: String,
    samples: String,
    /// The text of each knob typed as text (a list of numbers), by field.
    knobs: BTreeMap<&'static str, String>,
    python: String,
    factory: String,
    args: String,
    collate: String,
    run: RunText,
    step: StepText,
    shards: ShardCheck,
    errors: Errors,
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
            knobs: knob_texts(preset),
            python: preset
                .python
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            factory: preset.dataset.factory.clone().unwrap_or_default(),
            args: args_text(&preset.dataset.args),
            collate: preset.dataset.collate.clone().unwrap_or_default(),
            run: RunText::from_preset(preset),
            step: StepText::from_step(&preset.step),
            shards: ShardCheck::default(),
            errors: BTreeMap::new(),
        }
    }

    /// Shows a path picked in a file dialog.
    pub fn set_dataset_path(&mut self, path: &std::path::Path) {
        self.dataset_path = path.display().to_string();
    }

    /// Shows a step file picked in a file dialog.
    pub fn set_step_path(&mut self, path: &std::path::Path) {
        self.step.set_path(path);
    }

    /// True while some text does not parse (the preset keeps its last good value).
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }
}

/// The parse errors of the form, by field.
type Errors = BTreeMap<FieldPath, String>;

/// The field named `key`'s problem: its text's, else the plan's.
type Problem<'a> = &'a dyn Fn(&Errors, &FieldPath) -> Option<String>;

/// What the panel needs to know besides the preset.
pub struct Context<'a> {
    pub cuda_devices: usize,
    /// Why the preset cannot run as it is, marked beside its field where it has one.
    pub refusal: Option<Refusal<'a>>,
    pub running: bool,
}

/// Why the preset cannot run: the plan's error, or the last run's failure on a field of
/// this same preset (a check that needs the dataset open, which only a run makes).
pub struct Refusal<'a> {
    pub field: Option<&'a FieldPath>,
    pub problem: String,
}

impl<'a> Refusal<'a> {
    /// The plan's error, with the field it names.
    pub fn of(error: &'a Error) -> Refusal<'a> {
        Refusal {
            field: error.field(),
            problem: error.to_string(),
        }
    }
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
    // Whether the refusal was marked beside its field; if not, it goes at the end.
    let marked = std::cell::Cell::new(false);
    let error = |errors: &Errors, field: &FieldPath| -> Option<String> {
        errors.get(field).cloned().or_else(|| {
            let problem = cx
                .refusal
                .as_ref()
                .filter(|refusal| refusal.field == Some(field))
                .map(|refusal| refusal.problem.clone());
            marked.set(marked.get() || problem.is_some());
            problem
        })
    };

    section(ui, "Preset");
    grid(ui, "preset_grid", |ui| {
        identity(ui, &mut edited, &mut form.errors, &error);
    });
    section(ui, "Dataset");
    grid(ui, "dataset_grid", |ui| {
        dataset_fields(ui, form, &mut edited, &error, actions);
    });
    section(ui, "Pipeline");
    pipelines(ui, &mut edited);
    mark(ui, error(&form.errors, &FieldPath::PIPELINE));
    section(ui, "Loader");
    grid(ui, "loader_grid", |ui| {
        loader_fields(ui, form, &mut edited, cx, &error);
    });
    section(ui, "Samples and training");
    grid(ui, "run_grid", |ui| {
        run_fields(ui, &mut form.run, &mut edited, &mut form.errors, &error);
    });
    section(ui, "Training step");
    grid(ui, "step_grid", |ui| {
        let (text, errors) = (&mut form.step, &mut form.errors);
        step_fields(ui, text, &mut edited, errors, &error, actions);
    });
    extra_configs(ui, &mut edited);

    if let Some(refusal) = cx.refusal.as_ref().filter(|_| !marked.get()) {
        mark(ui, Some(refusal.problem.clone()));
    }
    if edited != *preset {
        actions.push(Action::Edit(Box::new(edited)));
    }
}

/// A section's grid: labels on the left, fields on the right.
fn grid(ui: &mut Ui, id: &str, fields: impl FnOnce(&mut Ui)) {
    egui::Grid::new(id)
        .num_columns(2)
        .spacing([10.0, 6.0])
        .show(ui, fields);
}

/// The dataset's kind, its path (with Browse), a python dataset's call, and what the
/// kind needs besides.
fn dataset_fields(
    ui: &mut Ui,
    form: &mut Form,
    edited: &mut Preset,
    error: Problem<'_>,
    actions: &mut Vec<Action>,
) {
    let kinds = DatasetKind::ALL;
    choice_field(
        ui,
        ("kind", "dataset_kind"),
        &mut edited.dataset.kind,
        kinds,
        DatasetKind::label,
    );
    ui.end_row();

    let label = ui.label("path");
    ui.vertical(|ui| {
        ui.horizontal(|ui| dataset_path_field(ui, label.id, form, edited, actions));
        mark(
            ui,
            dataset_path_error(ui.ctx(), edited, &mut form.shards)
                .or_else(|| error(&form.errors, &FieldPath::DATASET))
                .or_else(|| error(&form.errors, &FieldPath::DATASET_PATH)),
        );
    });
    ui.end_row();
    if edited.dataset.kind == DatasetKind::Python {
        python_fields(ui, form, edited, error);
    }
    dataset_extras(ui, &mut form.run, edited, &mut form.errors, error);
}

/// The dataset's path field, labelled by `label`, and its Browse button (neither for
/// the synthetic dataset, which needs no files).
fn dataset_path_field(
    ui: &mut Ui,
    label: egui::Id,
    form: &mut Form,
    edited: &mut Preset,
    actions: &mut Vec<Action>,
) {
    let synthetic = edited.dataset.kind == DatasetKind::Synthetic;
    let field = ui
        .add_enabled(
            !synthetic,
            egui::TextEdit::singleline(&mut form.dataset_path)
                .hint_text(match edited.dataset.kind {
                    DatasetKind::Python => "module (.py)",
                    DatasetKind::Shards => "shard-{000000..000009}.tar or URL",
                    _ => "file or directory",
                })
                .desired_width(150.0),
        )
        .labelled_by(label)
        .on_disabled_hover_text("The synthetic dataset needs no files");
    if field.changed() {
        let text = form.dataset_path.trim();
        edited.dataset.path = (!text.is_empty()).then(|| PathBuf::from(text));
    }
    if ui
        .add_enabled(!synthetic, egui::Button::new("Browse…"))
        .clicked()
    {
        let pick = if edited.dataset.kind == DatasetKind::Python {
            Pick::PythonModule
        } else {
            Pick::Dataset(edited.dataset.kind)
        };
        actions.push(Action::Browse(pick));
    }
}

/// The Loader grid: samples, epochs, each knob of the table, repeats, warm-up, order and
/// the Python that runs the pytorch runtime.
fn loader_fields(
    ui: &mut Ui,
    form: &mut Form,
    edited: &mut Preset,
    cx: &Context,
    error: Problem<'_>,
) {
    samples_field(ui, form, edited, error(&form.errors, &FieldPath::SAMPLES));
    let problem = error(&form.errors, &FieldPath::EPOCHS);
    count_field(ui, "epochs", &mut edited.epochs, problem);
    let unused = UnusedFields::of(edited);
    edited.each_knob(&mut KnobFields {
        ui,
        texts: &mut form.knobs,
        errors: &mut form.errors,
        problem: error,
        cuda_devices: cx.cuda_devices,
        unused,
    });
    let problem = error(&form.errors, &FieldPath::REPEATS);
    count_field(ui, "repeats", &mut edited.repeats, problem);
    let label = ui.label("warm-up");
    ui.checkbox(&mut edited.warmup, "one unmeasured epoch first")
        .labelled_by(label.id);
    ui.end_row();
    order_field(ui, &mut edited.order);
    python_path_field(ui, &mut form.python, &mut edited.python);
}

fn section(ui: &mut Ui, title: &str) {
    ui.add_space(8.0);
    ui.label(RichText::new(title).strong().size(15.0));
    ui.add_space(2.0);
}

/// A drop-down that `title` labels, choosing `value` among `choices` by their names.
fn choice_field<T: PartialEq + Copy>(
    ui: &mut Ui,
    (title, id): (&str, &str),
    value: &mut T,
    choices: impl IntoIterator<Item = T>,
    name: impl Fn(T) -> &'static str,
) -> egui::Response {
    let label = ui.label(title);
    ComboBox::from_id_salt(id)
        .selected_text(name(*value))
        .show_ui(ui, |ui| {
            for choice in choices {
                ui.selectable_value(value, choice, name(choice));
            }
        })
        .response
        .labelled_by(label.id)
}

/// The small "×" button that removes a row, its tooltip naming `what`; true when clicked.
fn remove_button(ui: &mut Ui, what: &str) -> bool {
    ui.small_button("×")
        .on_hover_text(format!("Remove this {what}"))
        .clicked()
}

/// A one-line text field for `text` that `label` names, `hint` shown while it is empty.
fn text_field(
    ui: &mut Ui,
    label: &egui::Response,
    text: &mut String,
    hint: &str,
    width: f32,
) -> egui::Response {
    let edit = egui::TextEdit::singleline(text)
        .hint_text(hint)
        .desired_width(width);
    ui.add(edit).labelled_by(label.id)
}

/// Shows a problem in the error colour, wrapped to the panel.
fn mark(ui: &mut Ui, problem: Option<String>) {
    if let Some(problem) = problem {
        let color = ui.visuals().error_fg_color;
        ui.add(egui::Label::new(RichText::new(problem).color(color).small()).wrap());
    }
}

/// A dataset that needs a path and has none, or points nowhere (a shard pattern as far
/// as its check off the frame has got).
fn dataset_path_error(
    ctx: &egui::Context,
    preset: &Preset,
    shards: &mut ShardCheck,
) -> Option<String> {
    match &preset.dataset.path {
        Some(pattern) if preset.dataset.kind == DatasetKind::Shards => shards.problem(
            ctx,
            &pattern.to_string_lossy(),
            preset.dataset.limits.shards,
        ),
        _ => missing_dataset_path(preset),
    }
}

/// A dataset that needs a path and has none, or (but for a shard pattern, which is
/// checked off the frame) names one that does not exist.
fn missing_dataset_path(preset: &Preset) -> Option<String> {
    match &preset.dataset.path {
        _ if preset.dataset.kind == DatasetKind::Synthetic => None,
        None => Some("this dataset needs a path".to_owned()),
        Some(_) if preset.dataset.kind == DatasetKind::Shards => None,
        path => missing(path.as_deref()),
    }
}

/// `PATH does not exist`, when `path` names nothing.
pub(crate) fn missing(path: Option<&std::path::Path>) -> Option<String> {
    path.filter(|p| !p.exists())
        .map(|p| format!("{} does not exist", p.display()))
}

/// The first file the preset names, in a field the setup panel shows, that does not
/// exist (or the dataset's path, missing): each is marked beside its field, and the
/// app starts no run while one is.
pub fn missing_file(preset: &Preset) -> Option<String> {
    let labels = matches!(preset.dataset.kind, DatasetKind::Idx | DatasetKind::Npy)
        .then_some(preset.dataset.labels.as_deref())
        .flatten();
    let step = preset.step.path().filter(|p| !p.as_os_str().is_empty());
    missing_dataset_path(preset)
        .or_else(|| missing(labels))
        .or_else(|| missing(preset.python.as_deref()))
        .or_else(|| missing(step))
}
