//! The `model` step: the user's TorchScript model (saved with `torch.jit.script` or
//! `torch.jit.trace`), trained on every batch as a training loop does: forward,
//! cross-entropy against the labels, backward, SGD. tch's trainable-module loading puts
//! the module's parameters in a VarStore, so tch's SGD updates the module itself. The
//! PyTorch runtime's script loads the same file with `torch.jit.load` and runs the same
//! loop, so one file measures one model on both runtimes.

use std::path::{Path, PathBuf};

use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Reduction, Tensor, TrainableCModule};

use crate::error::{Error, Result};

/// A TorchScript model with its optimizer, ready to train.
pub(super) struct TorchScriptModel {
    path: PathBuf,
    module: TrainableCModule,
    optimizer: nn::Optimizer,
    /// Holds the parameters the optimizer updates.
    _store: nn::VarStore,
    /// Steps taken: a model failing on its first batch is bad input (the model does not
    /// fit the data), later a failed run.
    steps: usize,
}

impl TorchScriptModel {
    /// Loads the model at `path` onto `device`, in training mode, with SGD at `lr`.
    pub(super) fn load(path: &Path, lr: f64, device: Device) -> Result<TorchScriptModel> {
        if !path.is_file() {
            return Err(Error::file(path, "no such file"));
        }
        let store = nn::VarStore::new(device);
        let mut module = TrainableCModule::load(path, store.root()).map_err(|err| {
            let detail = one_line(&err.to_string());
            Error::file_caused(
                path,
                format!(
                    "not a TorchScript model ({detail}); save one with \
                     torch.jit.script(model).save(path)"
                ),
                err,
            )
        })?;
        module.f_set_train()?;
        let optimizer = nn::Sgd::default().build(&store, lr)?;
        Ok(TorchScriptModel {
            path: path.to_path_buf(),
            module,
            optimizer,
            _store: store,
            steps: 0,
        })
    }

    /// One training step on a batch.
    pub(super) fn train_step(&mut self, images: &Tensor, labels: &Tensor) -> Result<()> {
        let trained = self.try_step(images, labels).map_err(|err| {
            let detail = one_line(&err.to_string());
            if self.steps == 0 {
                Error::file_caused(&self.path, format!("the model failed: {detail}"), err)
            } else {
                Error::run_caused(
                    format!("{}: the model failed: {detail}", self.path.display()),
                    err,
                )
            }
        });
        self.steps += 1;
        trained
    }

    fn try_step(&mut self, images: &Tensor, labels: &Tensor) -> Result<(), tch::TchError> {
        let inputs = if images.is_floating_point() {
            images.shallow_clone()
        } else {
            images.f_to_kind(Kind::Float)?
        };
        let logits = self.module.forward_ts(&[inputs])?;
        let classes = logits.size().last().copied().unwrap_or(1).max(1);
        // Labels are folded into the model's classes, as for the mlp step: the step's
        // cost is measured, not what it learns.
        let targets = labels
            .f_to_device(logits.device())?
            .f_to_kind(Kind::Int64)?
            .f_remainder(classes)?;
        let loss =
            logits.f_cross_entropy_loss(&targets, None::<Tensor>, Reduction::Mean, -100, 0.0)?;
        self.optimizer.zero_grad();
        loss.f_backward()?;
        self.optimizer.step();
        // Reading the loss waits for the device, so the step's time is all spent here.
        loss.f_double_value(&[])?;
        Ok(())
    }
}

/// The line of a libtorch error that says what went wrong: TorchScript's own exception
/// line (`RuntimeError: ...`) where it has one, else its first line.
fn one_line(message: &str) -> String {
    let lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let exception = lines.clone().rev().find(|line| {
        line.split_once(": ").is_some_and(|(name, _)| {
            name.ends_with("Error") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
        })
    });
    exception
        .or_else(|| lines.clone().next())
        .unwrap_or("no message")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_takes_the_exception_line() {
        let message = "The following operation failed in the TorchScript interpreter.\n\
            Traceback of TorchScript (most recent call last):\n  File \"m.py\", line 3\n\
            RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)\n";
        assert_eq!(
            one_line(message),
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)"
        );
        assert_eq!(one_line("open file failed\nmore"), "open file failed");
    }

    #[test]
    fn a_missing_or_malformed_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.pt");
        let err = TorchScriptModel::load(&missing, 0.01, Device::Cpu)
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            format!("{}: no such file", missing.display())
        );
        let junk = dir.path().join("junk.pt");
        std::fs::write(&junk, b"not a model").unwrap();
        let err = TorchScriptModel::load(&junk, 0.01, Device::Cpu)
            .err()
            .unwrap();
        assert!(err.is_bad_input());
        assert!(
            err.to_string()
                .starts_with(&format!("{}: not a TorchScript model (", junk.display())),
            "{err}"
        );
    }
}
