//! Presets and files: what is remembered between sessions, opening, saving and
//! replacing the preset, the file dialogs' answers, and the window title that marks
//! unsaved edits.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::actions::{Action, Pick};
use crate::setup::Form;
use loaderbench_engine::builtin;
use loaderbench_engine::preset::Preset;

use super::App;

/// What is remembered between sessions.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Saved {
    pub(super) preset: Preset,
    /// The file the preset came from or was last saved to.
    pub(super) preset_path: Option<PathBuf>,
    /// The preset as last loaded or saved: edits since then mark the title with `*`.
    pub(super) clean: Option<Preset>,
    /// Where exports go (the extension is set per format).
    pub(super) export_path: PathBuf,
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
pub(super) struct PathFields {
    pub(super) preset: String,
    pub(super) export: String,
}

impl App {
    pub(super) fn picked(&mut self, ctx: &egui::Context, pick: Pick, path: PathBuf) {
        match pick {
            Pick::OpenPreset => self.apply(ctx, Action::OpenPreset(path)),
            Pick::OpenResults => self.apply(ctx, Action::OpenResults(path)),
            Pick::AddResults => self.apply(ctx, Action::AddResults(path)),
            Pick::SavePresetAs => self.apply(ctx, Action::SavePreset(path)),
            Pick::Dataset(_) | Pick::PythonModule => {
                self.form.set_dataset_path(&path);
                let mut preset = self.saved.preset.clone();
                preset.dataset.path = Some(path);
                self.apply(ctx, Action::Edit(Box::new(preset)));
            }
            Pick::StepModel | Pick::StepModule => {
                self.form.set_step_path(&path);
                let mut preset = self.saved.preset.clone();
                preset.step.set_file(path);
                self.apply(ctx, Action::Edit(Box::new(preset)));
            }
            Pick::ExportPath => self.set_export_path(path),
        }
    }

    pub(super) fn save_action(&self) -> Action {
        match &self.saved.preset_path {
            Some(path) => Action::SavePreset(path.clone()),
            None => Action::Browse(Pick::SavePresetAs),
        }
    }

    pub(super) fn replace_preset(&mut self, preset: Preset, path: Option<PathBuf>) {
        self.form = Form::from_preset(&preset);
        self.paths.preset = path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        self.saved.clean = Some(preset.clone());
        self.saved.preset = preset;
        self.saved.preset_path = path;
        self.revalidate();
    }

    pub(super) fn new_preset(&mut self) {
        self.replace_preset(Preset::default(), None);
        self.saved.clean = None;
    }

    pub(super) fn load_builtin(&mut self, name: &str) {
        match builtin::load(name) {
            Ok((preset, _)) => self.replace_preset(preset, None),
            Err(err) => self.error(err.to_string()),
        }
    }

    pub(super) fn open_preset(&mut self, path: PathBuf) {
        match Preset::load(&path) {
            Ok(preset) => {
                self.note(format!("Opened {}", path.display()));
                self.replace_preset(preset, Some(path));
            }
            Err(err) => self.error(format!("Could not open the preset: {err}")),
        }
    }

    pub(super) fn save_preset(&mut self, path: PathBuf) {
        match self.saved.preset.save(&path) {
            Ok(()) => {
                self.note(format!("Saved {}", path.display()));
                self.paths.preset = path.display().to_string();
                self.saved.preset_path = Some(path);
                self.saved.clean = Some(self.saved.preset.clone());
            }
            Err(err) => self.error(format!("Could not save the preset: {err}")),
        }
    }

    /// Opens a file dialog (on a background thread) where the pick is likely to be.
    pub(super) fn browse(&mut self, pick: Pick) {
        let start = match pick {
            Pick::OpenPreset | Pick::SavePresetAs => self.saved.preset_path.clone(),
            Pick::Dataset(_) | Pick::PythonModule => self.saved.preset.dataset.path.clone(),
            Pick::OpenResults | Pick::AddResults => Some(self.runs_dir()),
            Pick::StepModel | Pick::StepModule => self
                .saved
                .preset
                .step
                .path()
                .map(std::path::Path::to_path_buf),
            Pick::ExportPath => Some(self.saved.export_path.clone()),
        };
        self.background.pick(pick, start);
    }
}
