//! The training step's fields in the side panel: its kind (none, fixed, mlp, model,
//! python), then the kind's own fields: a fixed step's milliseconds, an mlp's hidden
//! units, a model's TorchScript file (typed, or picked with Browse and a `.pt` filter)
//! and learning rate, a python step's module (typed or picked), factory and keyword
//! arguments. Fields typed as text keep their text in [`StepText`]; a text that does not
//! parse, a file that does not exist and the plan's problem with the step are marked
//! beside the field, as the other fields do.

use std::path::{Path, PathBuf};

use egui::{ComboBox, Ui};

use loaderbench_engine::plan::step_problem;
use loaderbench_engine::preset::{FieldPath, Preset};
use loaderbench_engine::step::{StepKind, StepSpec};

use super::python_fields::{STEP_CALL, args_text, call_fields};
use super::run_fields::{Field, parsed};
use super::{Errors, Problem, mark, missing, text_field};
use crate::actions::{Action, Pick};

/// The text of the step's fields.
#[derive(Debug, Clone, Default)]
pub struct StepText {
    /// A fixed step's milliseconds, or an mlp's hidden units.
    value: String,
    /// A model's file or a python step's module.
    path: String,
    lr: String,
    factory: String,
    args: String,
}

impl StepText {
    pub fn from_step(step: &StepSpec) -> StepText {
        let path = step
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        match step {
            StepSpec::None => StepText::default(),
            StepSpec::Fixed(ms) => StepText {
                value: ms.to_string(),
                ..StepText::default()
            },
            StepSpec::Mlp { hidden } => StepText {
                value: hidden.to_string(),
                ..StepText::default()
            },
            StepSpec::Model { lr, .. } => StepText {
                path,
                lr: lr.to_string(),
                ..StepText::default()
            },
            StepSpec::Python { factory, args, .. } => StepText {
                path,
                factory: factory.clone(),
                args: args_text(args),
                ..StepText::default()
            },
        }
    }

    /// Shows a file picked in a file dialog.
    pub fn set_path(&mut self, path: &Path) {
        self.path = path.display().to_string();
    }
}

/// The rows of the training step's grid; Browse asks for a file through `actions`.
pub fn step_fields(
    ui: &mut Ui,
    text: &mut StepText,
    edited: &mut Preset,
    errors: &mut Errors,
    problem: Problem<'_>,
    actions: &mut Vec<Action>,
) {
    let label = ui.label("training step");
    let kind = edited.step.kind();
    ComboBox::from_id_salt("training step")
        .selected_text(kind.name())
        .show_ui(ui, |ui| {
            for other in StepKind::ALL {
                if ui.selectable_label(kind == other, other.name()).clicked() && kind != other {
                    edited.step = other.fresh();
                    *text = StepText::from_step(&edited.step);
                    errors.retain(|key, _| !key.is_within(&FieldPath::STEP));
                }
            }
        })
        .response
        .labelled_by(label.id);
    ui.end_row();
    match edited.step.kind() {
        StepKind::Fixed | StepKind::Mlp => value_field(ui, text, edited, errors, problem),
        StepKind::Model => {
            file_field(ui, text, edited, problem(errors, &FieldPath::STEP), actions);
            lr_field(ui, text, edited, errors, problem);
        }
        StepKind::Python => {
            file_field(ui, text, edited, problem(errors, &FieldPath::STEP), actions);
            python_fields(ui, text, edited, errors, problem);
        }
        StepKind::None => {}
    }
}

/// A fixed step's milliseconds or an mlp's hidden units.
fn value_field(
    ui: &mut Ui,
    text: &mut StepText,
    edited: &mut Preset,
    errors: &mut Errors,
    problem: Problem<'_>,
) {
    let fixed = matches!(edited.step, StepSpec::Fixed(_));
    let title = if fixed {
        "step ms per batch"
    } else {
        "step hidden units"
    };
    let parse = |t: &str| {
        let step = if fixed {
            StepSpec::Fixed(t.parse().map_err(|_| format!("`{t}` is not a number"))?)
        } else {
            StepSpec::Mlp {
                hidden: t
                    .parse()
                    .map_err(|_| format!("`{t}` is not a whole number"))?,
            }
        };
        step_problem(&step).map_or(Ok(step), Err)
    };
    let field = Field {
        title,
        key: FieldPath::STEP,
        hint: "",
    };
    if let Some(step) = parsed(ui, field, &mut text.value, errors, problem, parse) {
        edited.step = step;
    }
}

/// A model's learning rate.
fn lr_field(
    ui: &mut Ui,
    text: &mut StepText,
    edited: &mut Preset,
    errors: &mut Errors,
    problem: Problem<'_>,
) {
    let StepSpec::Model { path, .. } = &edited.step else {
        return;
    };
    let path = path.clone();
    let parse = |t: &str| {
        let lr = t.parse().map_err(|_| format!("`{t}` is not a number"))?;
        let step = StepSpec::Model {
            path: path.clone(),
            lr,
        };
        step_problem(&step).map_or(Ok(step), Err)
    };
    let field = Field {
        title: "learning rate",
        key: FieldPath::STEP_LR,
        hint: "",
    };
    if let Some(step) = parsed(ui, field, &mut text.lr, errors, problem, parse) {
        edited.step = step;
    }
}

/// A python step's factory and its keyword arguments, in the rows every call has.
fn python_fields(
    ui: &mut Ui,
    text: &mut StepText,
    edited: &mut Preset,
    errors: &mut Errors,
    problem: Problem<'_>,
) {
    let edit = call_fields(
        ui,
        &STEP_CALL,
        &mut text.factory,
        &mut text.args,
        errors,
        problem,
    );
    if let StepSpec::Python { factory, args, .. } = &mut edited.step {
        if let Some(edited_factory) = edit.factory {
            *factory = edited_factory;
        }
        if let Some(edited_args) = edit.args {
            *args = edited_args;
        }
    }
}

/// The model's file or the python step's module: typed, or picked with Browse (a
/// `.pt` or `.py` filter); marked when it does not exist, or with the plan's problem.
fn file_field(
    ui: &mut Ui,
    text: &mut StepText,
    edited: &mut Preset,
    plan_problem: Option<String>,
    actions: &mut Vec<Action>,
) {
    let model = matches!(edited.step, StepSpec::Model { .. });
    let (title, hint, pick) = if model {
        ("model file", "TorchScript (.pt)", Pick::StepModel)
    } else {
        ("step module", "module (.py)", Pick::StepModule)
    };
    let label = ui.label(title);
    ui.vertical(|ui| {
        ui.horizontal(|ui| {
            let field = text_field(ui, &label, &mut text.path, hint, 150.0);
            if field.changed() {
                edited.step.set_file(PathBuf::from(text.path.trim()));
            }
            if ui.button("Browse…").clicked() {
                actions.push(Action::Browse(pick));
            }
        });
        let path = edited.step.path().filter(|p| !p.as_os_str().is_empty());
        mark(ui, missing(path).or(plan_problem));
    });
    ui.end_row();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_s_text_comes_from_its_step() {
        let python = StepSpec::Python {
            path: "s.py".into(),
            factory: "make_step".into(),
            args: [("lr".to_owned(), serde_json::json!("0.05"))].into(),
        };
        let text = StepText::from_step(&python);
        assert_eq!(
            (
                text.path.as_str(),
                text.factory.as_str(),
                text.args.as_str()
            ),
            ("s.py", "make_step", "lr = \"0.05\"")
        );
        let mut model = StepKind::Model.fresh();
        model.set_file("m.pt".into());
        assert_eq!(StepText::from_step(&model).lr, "0.01");
        assert_eq!(model.path(), Some(Path::new("m.pt")));
        assert_eq!(StepKind::ALL.map(|k| k.fresh().kind()), StepKind::ALL);
    }
}
