//! What the user asked for during a frame. Drawing code returns these instead of
//! changing the app, and the app applies them once the frame is drawn, so a frame always
//! shows one consistent state.

use std::path::PathBuf;

use loaderbench_engine::dataset::DatasetKind;
use loaderbench_engine::preset::Preset;
use loaderbench_present::documents;
use loaderbench_present::export::Format;
use loaderbench_present::views::PngArea;

/// What a file dialog is picking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    OpenPreset,
    OpenResults,
    AddResults,
    SavePresetAs,
    /// The dataset of this kind: a folder of images, or a file with its extension's
    /// filter.
    Dataset(DatasetKind),
    /// The module of the user's own Python dataset.
    PythonModule,
    /// The TorchScript file of a model step.
    StepModel,
    /// The module of a python step.
    StepModule,
    ExportPath,
}

/// One request from the user.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Replace the preset being edited.
    Edit(Box<Preset>),
    NewPreset,
    LoadBuiltin(&'static str),
    OpenPreset(PathBuf),
    /// Show a saved run (a results JSON or a journal) in place of the shown run.
    OpenResults(PathBuf),
    /// Plot a saved run together with the shown ones.
    AddResults(PathBuf),
    /// Put the shown run's preset into the setup panel, to run it again here.
    LoadRunPreset,
    SavePreset(PathBuf),
    /// Save the preset to its file, or ask where when it has none.
    Save,
    /// Open a file dialog (on a background thread).
    Browse(Pick),
    StartRun,
    /// Tune the preset within the budget field's seconds.
    StartTune,
    /// Measure the shown run further, within the budget field's seconds.
    MeasureFurther,
    /// The tune budget field changed (seconds).
    TuneBudget(u32),
    /// Stop the run or the tune.
    CancelRun,
    SelectConfig(usize),
    CopyMarkdown,
    ExportPng(PngArea),
    /// Show where the time goes per epoch (or per config).
    StagesPerEpoch(bool),
    ExportData(Format),
    DismissMessage(usize),
    /// Save the shown run's results as the named baseline.
    SaveBaseline(String),
    /// Compare the shown run with the named baseline.
    CompareBaseline(String),
    /// Compare the first open run with the open run at this index.
    CompareOpenRun(usize),
}

impl Action {
    /// What opening `path` means: a saved run by its extension, else a preset.
    pub fn open(path: PathBuf) -> Action {
        if documents::is_results_file(&path) {
            Action::OpenResults(path)
        } else {
            Action::OpenPreset(path)
        }
    }
}
