//! The `mlp` step: a two-layer perceptron made on the first batch (whose shape it takes)
//! and trained on every batch, forward, backward and plain SGD, with fallible libtorch
//! calls. The PyTorch runtime's script builds the same network the same way, so the two
//! runtimes pay the same for it.

use tch::{Device, Kind, Reduction, Tensor};

use crate::error::Result;

/// Classes the model step predicts; labels are folded into this range, since only the
/// step's cost matters here, not what it learns.
const MODEL_CLASSES: i64 = 10;

/// The model step's learning rate (plain SGD).
const LEARNING_RATE: f64 = 0.01;

/// Two linear layers with a ReLU between them, trained by hand with fallible libtorch
/// calls (tch's optimizer panics on libtorch errors).
pub(super) struct Mlp {
    pub(super) parameters: [Tensor; 4],
}

impl Mlp {
    pub(super) fn new(input_features: i64, hidden: usize, device: Device) -> Result<Mlp> {
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

    pub(super) fn train_step(&mut self, images: &Tensor, labels: &Tensor) -> Result<()> {
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
