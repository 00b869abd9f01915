//! The consumer's training step: what the training loop does with each batch once the
//! loader has delivered it, so a benchmark can show whether the loader keeps up with a
//! real step. [`StepCost`] is what a preset says (`none`, `fixed(ms)`, `mlp(hidden: N)`);
//! [`Step`] runs it on the runner's thread after every batch. The stall the loader
//! causes is the consumer's wait for each batch (`wait_s`).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Reduction, Tensor};

use crate::error::Result;

/// Classes the model step predicts; labels are folded into this range, since only the
/// step's cost matters here, not what it learns.
const MODEL_CLASSES: i64 = 10;

/// The model step's learning rate (plain SGD).
const LEARNING_RATE: f64 = 0.01;

/// The training step's cost per batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepCost {
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
}

impl StepCost {
    /// Why the cost cannot be used, or `None` when it can.
    pub fn problem(&self) -> Option<String> {
        match *self {
            StepCost::Fixed(ms) if !(ms.is_finite() && ms >= 0.0) => {
                Some(format!("fixed({ms}): milliseconds must be zero or more"))
            }
            StepCost::Mlp { hidden: 0 } => Some("mlp: hidden must be at least 1".to_owned()),
            _ => None,
        }
    }

    /// A short description for tables: `none`, `fixed 5 ms`, `mlp 128`.
    pub fn describe(&self) -> String {
        match self {
            StepCost::None => "none".to_owned(),
            StepCost::Fixed(ms) => format!("fixed {ms} ms"),
            StepCost::Mlp { hidden } => format!("mlp {hidden}"),
        }
    }
}

/// A step ready to run. The model's weights are made on the first batch, whose shape
/// they take, so that set-up falls in the first epoch (or the warm-up).
pub struct Step {
    cost: StepCost,
    model: Option<Mlp>,
}

impl Step {
    pub fn new(cost: StepCost) -> Step {
        Step { cost, model: None }
    }

    /// Runs the step on one batch.
    pub fn run(&mut self, images: &Tensor, labels: &Tensor) -> Result<()> {
        match self.cost {
            StepCost::None => Ok(()),
            StepCost::Fixed(ms) => {
                busy_wait(Duration::from_secs_f64(ms.max(0.0) / 1e3));
                Ok(())
            }
            StepCost::Mlp { hidden } => {
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
        }
    }
}

fn busy_wait(duration: Duration) {
    let started = Instant::now();
    while started.elapsed() < duration {
        std::hint::spin_loop();
    }
}

/// Two linear layers with a ReLU between them, trained by hand with fallible libtorch
/// calls (tch's optimizer panics on libtorch errors).
struct Mlp {
    parameters: [Tensor; 4],
}

impl Mlp {
    fn new(input_features: i64, hidden: usize, device: Device) -> Result<Mlp> {
        let layer = |inputs: i64, outputs: i64| -> Result<[Tensor; 2]> {
            let scale = 1.0 / (inputs as f64).sqrt();
            let weight = (Tensor::f_randn([inputs, outputs], (Kind::Float, device))? * scale)
                .set_requires_grad(true);
            let bias = Tensor::f_zeros([outputs], (Kind::Float, device))?.set_requires_grad(true);
            Ok([weight, bias])
        };
        let [w1, b1] = layer(input_features, hidden as i64)?;
        let [w2, b2] = layer(hidden as i64, MODEL_CLASSES)?;
        Ok(Mlp {
            parameters: [w1, b1, w2, b2],
        })
    }

    fn train_step(&mut self, images: &Tensor, labels: &Tensor) -> Result<()> {
        let [w1, b1, w2, b2] = &self.parameters;
        let inputs = images.f_to_kind(Kind::Float)?.f_flatten(1, -1)?;
        let hidden = inputs.f_matmul(w1)?.f_add(b1)?.f_relu()?;
        let logits = hidden.f_matmul(w2)?.f_add(b2)?;
        let targets = labels
            .f_to_device(logits.device())?
            .f_to_kind(Kind::Int64)?
            .f_remainder(MODEL_CLASSES)?;
        let loss = logits.f_log_softmax(-1, Kind::Float)?.f_nll_loss(
            &targets,
            None::<Tensor>,
            Reduction::Mean,
            -100,
        )?;
        let gradients = Tensor::f_run_backward(&[&loss], &self.parameters, false, false)?;
        tch::no_grad(|| -> Result<()> {
            for (parameter, gradient) in self.parameters.iter_mut().zip(&gradients) {
                let _updated = parameter.f_sub_(&(gradient * LEARNING_RATE))?;
            }
            Ok(())
        })?;
        // Reading the loss waits for the device, so the step's time is all spent here.
        loss.f_double_value(&[])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_step_takes_at_least_its_time() {
        let mut step = Step::new(StepCost::Fixed(5.0));
        let images = Tensor::zeros([2, 4], (Kind::Float, Device::Cpu));
        let started = Instant::now();
        step.run(&images, &Tensor::zeros([2], (Kind::Int64, Device::Cpu)))
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(5));
    }

    #[test]
    fn model_step_learns_a_fixed_batch() {
        let mut step = Step::new(StepCost::Mlp { hidden: 16 });
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
        assert_eq!(read("none"), StepCost::None);
        assert_eq!(read("fixed(2.5)"), StepCost::Fixed(2.5));
        assert_eq!(read("mlp(hidden: 64)"), StepCost::Mlp { hidden: 64 });
        let mut preset = crate::preset::Preset::default();
        assert_eq!(preset.step, StepCost::None);
        preset.set("step", r#"{"mlp": {"hidden": 32}}"#).unwrap();
        assert_eq!(preset.step, StepCost::Mlp { hidden: 32 });
        preset.set("step", "none").unwrap();
        assert_eq!(preset.step, StepCost::None);
    }

    #[test]
    fn bad_costs_are_named() {
        assert!(StepCost::Fixed(-1.0).problem().unwrap().contains("fixed"));
        assert!(
            StepCost::Mlp { hidden: 0 }
                .problem()
                .unwrap()
                .contains("hidden")
        );
        assert_eq!(StepCost::Fixed(2.5).problem(), None);
        assert_eq!(StepCost::Mlp { hidden: 8 }.describe(), "mlp 8");
    }
}
