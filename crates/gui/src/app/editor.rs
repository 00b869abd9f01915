//! The preset editor's part: the preset being edited and what is remembered between
//! sessions ([`Saved`]), the setup panel's form, the path fields, and the plan the
//! preset makes (or why it makes none, or which field its last run was refused on). It
//! opens, saves and replaces the preset, takes the paths file dialogs picked, and marks
//! the title when there are unsaved edits.

use std::path::{Path, PathBuf};

use egui::{Key, Ui};
use serde::{Deserialize, Serialize};

use crate::actions::{Action, Pick};
use crate::setup::{self, Form, Refusal};
use loaderbench_engine::builtin;
use loaderbench_engine::error::Error;
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::{FieldPath, Preset};

use super::messages::Messages;

/// The preset the app opens with when nothing else is asked for or remembered.
pub const DEFAULT_PRESET: &str = "seed-light";

/// What is remembered between sessions.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Saved {
    preset: Preset,
    /// The file the preset came from or was last saved to.
    preset_path: Option<PathBuf>,
    /// The preset as last loaded or saved: edits since then mark the title with `*`.
    clean: Option<Preset>,
    /// Where exports go (the extension is set per format).
    export_path: PathBuf,
}

impl Default for Saved {
    fn default() -> Self {
        Saved {
            preset: Preset::default(),
            preset_path: None,
            clean: None,
            export_path: PathBuf::from("loaderbench-results.md"),
        }
    }
}

/// The text fields for file paths (widget state, seeded from [`Saved`]).
struct PathFields {
    preset: String,
    export: String,
}

/// The preset being edited, its form and its plan.
pub(super) struct PresetEditor {
    saved: Saved,
    form: Form,
    paths: PathFields,
    /// The edited preset as a plan, or why it is not one.
    plan: Result<Plan, Error>,
    /// The last run's failure on one of the preset's fields.
    run_failure: Option<RunFailure>,
    cuda_devices: usize,
}

/// A run that failed on one field of the preset, with the preset it measured: the mark
/// beside the field stays while the preset is that one.
struct RunFailure {
    field: FieldPath,
    error: String,
    preset: Preset,
}

impl PresetEditor {
    /// The editor on the `requested` preset (a file or built-in name), else the
    /// remembered one, else seed-light.
    pub(super) fn open(
        remembered: Option<Saved>,
        requested: Option<&str>,
        messages: &mut Messages,
    ) -> PresetEditor {
        let mut saved = remembered.unwrap_or_default();
        let requested = requested.map(str::to_owned).or_else(|| {
            (saved.clean.is_none() && saved.preset == Preset::default())
                .then(|| DEFAULT_PRESET.to_owned())
        });
        if let Some(name) = requested {
            match builtin::load(&name) {
                Ok((preset, origin)) => {
                    // A built-in preset's origin names no file on disk to save over.
                    saved.preset_path = Path::new(&name).exists().then_some(origin);
                    saved.clean = Some(preset.clone());
                    saved.preset = preset;
                }
                Err(err) => messages.error(err.to_string()),
            }
        }
        PresetEditor {
            form: Form::from_preset(&saved.preset),
            paths: PathFields {
                preset: path_text(saved.preset_path.as_deref()),
                export: saved.export_path.display().to_string(),
            },
            plan: Plan::from_preset(&saved.preset, saved.preset_path.as_deref()),
            run_failure: None,
            saved,
            cuda_devices: loaderbench_engine::device::cuda_device_count(),
        }
    }

    /// What is remembered between sessions.
    pub(super) fn saved(&self) -> &Saved {
        &self.saved
    }

    pub(super) fn preset(&self) -> &Preset {
        &self.saved.preset
    }

    pub(super) fn preset_path(&self) -> Option<&Path> {
        self.saved.preset_path.as_deref()
    }

    /// The window title: the preset's name, `*` when it has unsaved changes.
    pub(super) fn title(&self) -> String {
        let dirty = self.saved.clean.as_ref() != Some(&self.saved.preset);
        format!(
            "loaderbench — {}{}",
            self.saved.preset.name,
            if dirty { " *" } else { "" }
        )
    }

    /// The plan, when the preset makes one.
    pub(super) fn plan(&self) -> Option<&Plan> {
        self.plan.as_ref().ok()
    }

    /// Whether the preset can run: it makes a plan and no field is marked.
    pub(super) fn ready(&self) -> bool {
        self.plan.is_ok() && !self.has_marked_fields()
    }

    /// A field's text does not parse, or a file the preset names does not exist.
    fn has_marked_fields(&self) -> bool {
        self.form.has_errors() || setup::missing_file(&self.saved.preset).is_some()
    }

    /// The plan to measure; `None` (with a message saying why) while a field is marked
    /// or the preset is no plan. A run's failure marked beside a field is forgotten: the
    /// new run says again whether it holds.
    pub(super) fn plan_to_measure(&mut self, messages: &mut Messages) -> Option<Plan> {
        if self.has_marked_fields() {
            messages.error("Fix the fields marked in the side panel first.");
            return None;
        }
        match &self.plan {
            Ok(plan) => {
                self.run_failure = None;
                Some(plan.clone())
            }
            Err(error) => {
                messages.error(format!("The preset cannot run: {error}"));
                None
            }
        }
    }

    /// Takes one of the editor's own actions: the setup panel's edit, a new, built-in,
    /// opened or saved preset. Any other action leaves the editor as it is.
    pub(super) fn apply(&mut self, action: Action, messages: &mut Messages) {
        match action {
            Action::Edit(preset) => self.edit(*preset),
            Action::NewPreset => self.new_preset(),
            Action::LoadBuiltin(name) => self.load_builtin(name, messages),
            Action::OpenPreset(path) => self.open_preset(path, messages),
            Action::SavePreset(path) => self.save_preset(path, messages),
            _ => {}
        }
    }

    /// Takes the setup panel's edit.
    fn edit(&mut self, preset: Preset) {
        self.saved.preset = preset;
        self.revalidate();
    }

    fn revalidate(&mut self) {
        self.plan = Plan::from_preset(&self.saved.preset, self.saved.preset_path.as_deref());
    }

    /// Edits the preset to `preset`, loaded from `path` (or from no file).
    pub(super) fn replace(&mut self, preset: Preset, path: Option<PathBuf>) {
        self.form = Form::from_preset(&preset);
        self.paths.preset = path_text(path.as_deref());
        self.saved.clean = Some(preset.clone());
        self.saved.preset = preset;
        self.saved.preset_path = path;
        self.revalidate();
    }

    fn new_preset(&mut self) {
        self.replace(Preset::default(), None);
        self.saved.clean = None;
    }

    fn load_builtin(&mut self, name: &str, messages: &mut Messages) {
        match builtin::load(name) {
            Ok((preset, _)) => self.replace(preset, None),
            Err(err) => messages.error(err.to_string()),
        }
    }

    fn open_preset(&mut self, path: PathBuf, messages: &mut Messages) {
        match Preset::load(&path) {
            Ok(preset) => {
                messages.note(format!("Opened {}", path.display()));
                self.replace(preset, Some(path));
            }
            Err(err) => messages.error(format!("Could not open the preset: {err}")),
        }
    }

    fn save_preset(&mut self, path: PathBuf, messages: &mut Messages) {
        match self.saved.preset.save(&path) {
            Ok(()) => {
                messages.note(format!("Saved {}", path.display()));
                self.paths.preset = path.display().to_string();
                self.saved.preset_path = Some(path);
                self.saved.clean = Some(self.saved.preset.clone());
            }
            Err(err) => messages.error(format!("Could not save the preset: {err}")),
        }
    }

    /// Saving to the preset's own file, or asking where when it has none.
    pub(super) fn save_action(&self) -> Action {
        match &self.saved.preset_path {
            Some(path) => Action::SavePreset(path.clone()),
            None => Action::Browse(Pick::SavePresetAs),
        }
    }

    /// Takes a dataset picked in a file dialog.
    pub(super) fn set_dataset_path(&mut self, path: PathBuf) {
        self.form.set_dataset_path(&path);
        let mut preset = self.saved.preset.clone();
        preset.dataset.path = Some(path);
        self.edit(preset);
    }

    /// Takes a step file picked in a file dialog.
    pub(super) fn set_step_path(&mut self, path: PathBuf) {
        self.form.set_step_path(&path);
        let mut preset = self.saved.preset.clone();
        preset.step.set_file(path);
        self.edit(preset);
    }

    /// Where a file dialog for `pick` opens: beside what the preset names now.
    pub(super) fn dialog_start(&self, pick: Pick) -> Option<PathBuf> {
        match pick {
            Pick::OpenPreset | Pick::SavePresetAs => self.saved.preset_path.clone(),
            Pick::Dataset(_) | Pick::PythonModule => self.saved.preset.dataset.path.clone(),
            Pick::StepModel | Pick::StepModule => {
                self.saved.preset.step.path().map(Path::to_path_buf)
            }
            Pick::ExportPath => Some(self.saved.export_path.clone()),
            Pick::OpenResults | Pick::AddResults => None,
        }
    }

    /// Where exports go (the extension is set per format).
    pub(super) fn export_path(&self) -> &Path {
        &self.saved.export_path
    }

    pub(super) fn set_export_path(&mut self, path: PathBuf) {
        self.paths.export = path.display().to_string();
        self.saved.export_path = path;
    }

    /// Marks `field` with the error a run of the preset as it is failed on (a check that
    /// needed the dataset open), until the preset is edited or run again.
    pub(super) fn run_failed_on(&mut self, field: FieldPath, error: String) {
        self.run_failure = Some(RunFailure {
            field,
            error,
            preset: self.saved.preset.clone(),
        });
    }

    /// The setup panel, not editable while something runs.
    pub(super) fn setup_ui(&mut self, ui: &mut Ui, running: bool, actions: &mut Vec<Action>) {
        let run_failure = self
            .run_failure
            .as_ref()
            .filter(|failure| failure.preset == self.saved.preset)
            .map(|failure| Refusal {
                field: Some(&failure.field),
                problem: failure.error.clone(),
            });
        let cx = setup::Context {
            cuda_devices: self.cuda_devices,
            refusal: self.plan.as_ref().err().map(Refusal::of).or(run_failure),
            running,
        };
        ui.add_enabled_ui(!cx.running, |ui| {
            setup::draw(ui, &self.saved.preset, &mut self.form, &cx, actions);
        });
    }

    /// The menu bar's preset file field, with Open, Save and Browse.
    pub(super) fn path_field_ui(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        let label = ui.label("preset file");
        let field = ui
            .add(
                egui::TextEdit::singleline(&mut self.paths.preset)
                    .hint_text("preset.ron or results.json")
                    .desired_width(280.0),
            )
            .labelled_by(label.id);
        let entered = field.lost_focus() && ui.input(|i| i.key_pressed(Key::Enter));
        let typed = PathBuf::from(self.paths.preset.trim());
        let has_path = !self.paths.preset.trim().is_empty();
        if ui
            .add_enabled(has_path, egui::Button::new("Open"))
            .clicked()
            || entered && has_path
        {
            actions.push(Action::open(typed.clone()));
        }
        if ui
            .add_enabled(has_path, egui::Button::new("Save"))
            .clicked()
        {
            actions.push(Action::SavePreset(typed));
        }
        if ui.button("Browse…").clicked() {
            actions.push(Action::Browse(Pick::OpenPreset));
        }
    }

    /// The export row's field for where exports go, with its Browse button.
    pub(super) fn export_field_ui(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        let label = ui.label("export to");
        let field = ui
            .add(egui::TextEdit::singleline(&mut self.paths.export).desired_width(240.0))
            .labelled_by(label.id);
        if field.changed() {
            self.saved.export_path = PathBuf::from(self.paths.export.trim());
        }
        if ui.button("Browse…").clicked() {
            actions.push(Action::Browse(Pick::ExportPath));
        }
    }
}

/// A path as its text field shows it (empty for none).
fn path_text(path: Option<&Path>) -> String {
    path.map(|p| p.display().to_string()).unwrap_or_default()
}
