//! The consumer's training step: what the training loop does with each batch once the
//! loader has delivered it, so a benchmark can show how the loader and a real step share
//! the machine. [`StepSpec`] is what a preset says (`none`, `fixed(ms)`, `mlp(hidden: N)`,
//! `model(path, lr)`, `python(path, factory, args)`); [`Step`] runs it on the runner's
//! thread after every batch (a python step only runs in the PyTorch runtime's script).
//! The stall the loader causes is the consumer's wait for each batch (`wait_s`); the
//! step's own time is `step_s`.

mod mlp;
mod model;
pub mod user_step;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};

use crate::error::{Error, Result};

use mlp::Mlp;
use model::TorchScriptModel;

/// The training step's cost per batch. A field no step has is refused, not ignored:
/// `mlp(hidden: 64, lr: 0.1)` would train at no rate the preset gave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StepSpec {
    /// No step: the loop only loads, so it measures the loader alone.
    #[default]
    None,
    /// A fixed time per batch, in milliseconds, spent busy (not sleeping): a training
    /// step keeps a core busy, and a sleeping consumer would leave it to the workers and
    /// flatter them.
    Fixed(f64),
    /// A real step in libtorch: a two-layer perceptron (flattened image → `hidden` →
    /// 10 classes) runs forward and backward on the batch and takes an SGD step.
    Mlp { hidden: usize },
    /// The user's TorchScript model (a `.pt` file from `torch.jit.script` or
    /// `torch.jit.trace`), trained on every batch: cross-entropy, backward, SGD at `lr`.
    Model {
        path: PathBuf,
        #[serde(default = "default_lr")]
        lr: f64,
    },
    /// The user's own step in Python (the PyTorch runtime only): `factory(**args)` from
    /// the module at `path`, called once, returns a callable called with every batch.
    Python {
        path: PathBuf,
        factory: String,
        #[serde(default)]
        args: BTreeMap<String, serde_json::Value>,
    },
}

fn default_lr() -> f64 {
    0.01
}

/// The kinds of training step, as presets and the app name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    None,
    Fixed,
    Mlp,
    Model,
    Python,
}

impl StepKind {
    /// Every kind, in the order the app lists them.
    pub const ALL: [StepKind; 5] = [
        StepKind::None,
        StepKind::Fixed,
        StepKind::Mlp,
        StepKind::Model,
        StepKind::Python,
    ];

    /// Its name in presets.
    pub fn name(self) -> &'static str {
        match self {
            StepKind::None => "none",
            StepKind::Fixed => "fixed",
            StepKind::Mlp => "mlp",
            StepKind::Model => "model",
            StepKind::Python => "python",
        }
    }

    /// The step of this kind a user starts from: its defaults, and no file yet.
    pub fn fresh(self) -> StepSpec {
        match self {
            StepKind::None => StepSpec::None,
            StepKind::Fixed => StepSpec::Fixed(5.0),
            StepKind::Mlp => StepSpec::Mlp { hidden: 128 },
            StepKind::Model => StepSpec::Model {
                path: PathBuf::new(),
                lr: default_lr(),
            },
            StepKind::Python => StepSpec::Python {
                path: PathBuf::new(),
                factory: "make_step".to_owned(),
                args: BTreeMap::new(),
            },
        }
    }
}

impl StepSpec {
    /// Its kind.
    pub fn kind(&self) -> StepKind {
        match self {
            StepSpec::None => StepKind::None,
            StepSpec::Fixed(_) => StepKind::Fixed,
            StepSpec::Mlp { .. } => StepKind::Mlp,
            StepSpec::Model { .. } => StepKind::Model,
            StepSpec::Python { .. } => StepKind::Python,
        }
    }

    /// Sets the file of a model or python step; other steps have none.
    pub fn set_file(&mut self, file: std::path::PathBuf) {
        if let Some(path) = self.path_mut() {
            *path = file;
        }
    }

    /// Why the step cannot be used, or `None` when it can: what it needs beside its
    /// numbers, which the plan checks against their ranges (`plan::step_problem`, which
    /// asks this too).
    pub fn problem(&self) -> Option<String> {
        match self {
            StepSpec::Model { path, .. } if path.as_os_str().is_empty() => {
                Some("model: give the path of a TorchScript file (.pt)".to_owned())
            }
            StepSpec::Python { .. } => user_step::problem(self),
            _ => None,
        }
    }

    /// A short description for tables: `none`, `fixed 5 ms`, `mlp 128`, `model m.pt
    /// (lr 0.01)`, `python my_step.py: make_step(lr="0.05")`.
    pub fn describe(&self) -> String {
        match self {
            StepSpec::None => "none".to_owned(),
            StepSpec::Fixed(ms) => format!("fixed {ms} ms"),
            StepSpec::Mlp { hidden } => format!("mlp {hidden}"),
            StepSpec::Model { path, lr } => format!("model {} (lr {lr})", path.display()),
            StepSpec::Python { .. } => user_step::describe(self),
        }
    }

    /// True without a step: the loop measures the loader alone.
    pub fn is_none(&self) -> bool {
        *self == StepSpec::None
    }

    /// The step's file, for a model or python step.
    pub fn path(&self) -> Option<&Path> {
        match self {
            StepSpec::Model { path, .. } | StepSpec::Python { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The step's file, mutably, where it has one.
    pub fn path_mut(&mut self) -> Option<&mut PathBuf> {
        match self {
            StepSpec::Model { path, .. } | StepSpec::Python { path, .. } => Some(path),
            _ => None,
        }
    }

    /// Checks the step's file before a run measures anything, so a bad one is bad input
    /// (exit code 2) on every runtime: a model is loaded once on the CPU, a python
    /// step's module must exist (the PyTorch runtime imports it).
    pub fn check_files(&self) -> Result<()> {
        match self {
            StepSpec::Model { path, lr } => {
                TorchScriptModel::load(path, *lr, Device::Cpu).map(drop)
            }
            StepSpec::Python { path, .. } if !path.is_file() => {
                Err(Error::file(path, "no such file"))
            }
            _ => Ok(()),
        }
    }
}

/// A step ready to run. The mlp's weights are made on the first batch, whose shape they
/// take, so that set-up falls in the first epoch (or the warm-up); a TorchScript model is
/// loaded before the epochs, as a training script loads it before its loop.
pub struct Step {
    cost: StepSpec,
    model: Option<Mlp>,
    torchscript: Option<TorchScriptModel>,
}

impl Step {
    /// The step for `cost`, its model (if any) on `device`. A python step cannot run
    /// here: the plan gives it to the PyTorch runtime only.
    pub fn new(cost: &StepSpec, device: Device) -> Result<Step> {
        let torchscript = match cost {
            StepSpec::Model { path, lr } => Some(TorchScriptModel::load(path, *lr, device)?),
            StepSpec::Python { .. } => return Err(Error::value(user_step::ENGINE_REFUSAL)),
            _ => None,
        };
        Ok(Step {
            cost: cost.clone(),
            model: None,
            torchscript,
        })
    }

    /// Runs the step on one batch.
    pub fn run(&mut self, images: &Tensor, labels: &Tensor) -> Result<()> {
        match &self.cost {
            StepSpec::None | StepSpec::Python { .. } => Ok(()),
            StepSpec::Fixed(ms) => {
                crate::transform::cost::busy_wait(Duration::from_secs_f64(ms.max(0.0) / 1e3));
                Ok(())
            }
            StepSpec::Mlp { hidden } => {
                let hidden = *hidden;
                let model = match &mut self.model {
                    Some(model) => model,
                    None => {
                        let features = images.size().iter().skip(1).product::<i64>();
                        self.model
                            .insert(Mlp::new(features, hidden, images.device())?)
                    }
                };
                model.train_step(images, labels)
            }
            StepSpec::Model { .. } => match &mut self.torchscript {
                Some(model) => model.train_step(images, labels),
                None => Err(Error::run("the model step's model was not loaded")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use tch::Kind;

    #[test]
    fn fixed_step_takes_at_least_its_time() {
        let mut step = Step::new(&StepSpec::Fixed(5.0), Device::Cpu).unwrap();
        let images = Tensor::zeros([2, 4], (Kind::Float, Device::Cpu));
        let started = Instant::now();
        step.run(&images, &Tensor::zeros([2], (Kind::Int64, Device::Cpu)))
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(5));
    }

    #[test]
    fn model_step_learns_a_fixed_batch() {
        let mut step = Step::new(&StepSpec::Mlp { hidden: 16 }, Device::Cpu).unwrap();
        let images = Tensor::randn([8, 3, 2, 2], (Kind::Float, Device::Cpu));
        let labels = Tensor::from_slice(&[0i64, 1, 2, 3, 14, 15, 16, 17]);
        step.run(&images, &labels).unwrap();
        let model = step.model.as_ref().expect("made on the first batch");
        assert_eq!(model.parameters[0].size(), vec![12, 16]);
        let before = model.parameters[2].copy();
        for _ in 0..3 {
            step.run(&images, &labels).unwrap();
        }
        let model = step.model.as_ref().expect("kept");
        let moved = (&model.parameters[2] - &before).abs().sum(Kind::Float);
        assert!(moved.double_value(&[]) > 0.0, "SGD changed the weights");
    }

    #[test]
    fn presets_write_steps_in_ron_and_set_them_in_json() {
        let origin = std::path::Path::new("p.ron");
        let read = |step: &str| {
            let text = format!("(version: 1, name: \"x\", step: {step})");
            crate::preset::Preset::from_ron(&text, origin).unwrap().step
        };
        assert_eq!(read("none"), StepSpec::None);
        assert_eq!(read("fixed(2.5)"), StepSpec::Fixed(2.5));
        assert_eq!(read("mlp(hidden: 64)"), StepSpec::Mlp { hidden: 64 });
        let mut preset = crate::preset::Preset::default();
        assert_eq!(preset.step, StepSpec::None);
        preset.set("step", r#"{"mlp": {"hidden": 32}}"#).unwrap();
        assert_eq!(preset.step, StepSpec::Mlp { hidden: 32 });
        preset.set("step", "none").unwrap();
        assert_eq!(preset.step, StepSpec::None);
        preset
            .set("step", r#"model(path: "m.pt", lr: 0.05)"#)
            .unwrap();
        assert_eq!(
            preset.step,
            StepSpec::Model {
                path: "m.pt".into(),
                lr: 0.05
            }
        );
        assert_eq!(
            read(r#"model(path: "m.pt")"#),
            StepSpec::Model {
                path: "m.pt".into(),
                lr: 0.01
            }
        );
        let python = read(r#"python(path: "s.py", factory: "make_step", args: {"lr": "0.05"})"#);
        assert_eq!(python.path(), Some(Path::new("s.py")));
        assert_eq!(python.describe(), "python s.py: make_step(lr=\"0.05\")");
    }

    /// A field no step has is refused, naming it: an `lr` given to an mlp, or a model's
    /// rate misspelled, was dropped and the step ran at its own.
    #[test]
    fn a_field_no_step_has_is_refused_naming_it() {
        let refusal = |step: &str| {
            let text = format!("(version: 1, name: \"x\", step: {step})");
            let origin = std::path::Path::new("p.ron");
            crate::preset::Preset::from_ron(&text, origin)
                .unwrap_err()
                .to_string()
        };
        let unknown = refusal("mlp(hidden: 64, lr: 0.1)");
        assert!(unknown.contains("Unexpected field named `lr`"), "{unknown}");
        let unknown = refusal(r#"model(path: "m.pt", learning_rate: 0.1)"#);
        assert!(
            unknown.contains("Unexpected field named `learning_rate`"),
            "{unknown}"
        );
        let mut preset = crate::preset::Preset::default();
        let unknown = preset
            .set("step", "mlp(hidden: 64, lr: -1)")
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("`lr`"), "{unknown}");
    }

    /// A step's numbers are checked against their ranges (`plan::ranges`); here, what
    /// it needs beside them.
    #[test]
    fn a_step_without_its_file_is_named() {
        assert_eq!(
            StepSpec::Fixed(-1.0).problem(),
            None,
            "a number: the plan's"
        );
        assert_eq!(StepSpec::Mlp { hidden: 8 }.describe(), "mlp 8");
        let model = |path: &str| StepSpec::Model {
            path: path.into(),
            lr: 0.1,
        };
        assert!(model("").problem().unwrap().contains("give the path"));
        assert_eq!(model("m.pt").problem(), None);
        assert_eq!(model("m.pt").describe(), "model m.pt (lr 0.1)");
        let missing = StepSpec::Python {
            path: "/no/such/step.py".into(),
            factory: "f".into(),
            args: BTreeMap::new(),
        };
        assert_eq!(
            missing.check_files().unwrap_err().to_string(),
            "/no/such/step.py: no such file"
        );
        assert!(Step::new(&missing, Device::Cpu).is_err());
    }
}
