//! The pipeline's own checks, run when a preset becomes a plan: every op's parameters
//! ([`check_ops`]) and, for configs measured by PyTorch's DataLoader, that every op has
//! a torchvision equivalent ([`check_torchvision`]). Errors name the op.

use super::{Op, PipelineSpec};

/// Why a pipeline cannot run as given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OpError {
    /// A parameter is out of range.
    #[error("{op}: {problem}")]
    BadParameter {
        /// The op, with its parameters.
        op: Op,
        /// Which parameter is wrong and what it must be.
        problem: &'static str,
    },
    /// The op exists only in loaderbench, so the PyTorch runtime cannot run it.
    #[error("{op} has no torchvision equivalent, so the PyTorch runtime cannot run it")]
    NoTorchvision {
        /// The op.
        op: Op,
    },
}

/// Checks every op's parameters; the error names the op and the problem.
pub fn check_ops(ops: &[Op]) -> Result<(), OpError> {
    for op in ops {
        let problem = match op {
            Op::Rotate { degrees } if !degrees.is_finite() => Some("degrees must be finite"),
            Op::Elastic { alpha, sigma } if !(*alpha >= 0.0 && *sigma >= 0.0) => {
                Some("alpha and sigma must be non-negative")
            }
            Op::GaussianBlur { kernel, .. } if kernel % 2 == 0 => {
                Some("kernel must be an odd number of pixels")
            }
            Op::GaussianBlur { sigma, .. } if !(sigma[0] > 0.0 && sigma[0] <= sigma[1]) => {
                Some("sigma must be [min, max] with 0 < min <= max")
            }
            Op::Flip { p } if !(0.0..=1.0).contains(p) => Some("p must be between 0 and 1"),
            Op::Crop { size, .. } | Op::Resize { size } if size.contains(&0) => {
                Some("size must be at least 1×1")
            }
            _ => None,
        };
        if let Some(problem) = problem {
            return Err(OpError::BadParameter {
                op: op.clone(),
                problem,
            });
        }
    }
    Ok(())
}

/// Checks that every op of `pipeline` has a torchvision equivalent, as the `pytorch`
/// runtime needs.
pub fn check_torchvision(pipeline: &PipelineSpec) -> Result<(), OpError> {
    match pipeline
        .ops()
        .into_iter()
        .find(|op| matches!(op, Op::Cost { .. }))
    {
        Some(op) => Err(OpError::NoTorchvision { op }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_cost_op_lacks_a_torchvision_equivalent() {
        assert!(check_torchvision(&PipelineSpec::Heavy).is_ok());
        let busy = PipelineSpec::Custom {
            name: "busy".to_owned(),
            ops: vec![
                Op::Flip { p: 0.5 },
                Op::Cost {
                    micros_per_sample: 5,
                },
            ],
        };
        let err = check_torchvision(&busy).unwrap_err().to_string();
        assert_eq!(
            err,
            "cost(micros_per_sample:5) has no torchvision equivalent, so the PyTorch runtime \
             cannot run it"
        );
    }

    #[test]
    fn bad_parameters_name_the_op() {
        let err = check_ops(&[Op::Flip { p: 2.0 }]).unwrap_err().to_string();
        assert_eq!(err, "flip(p:2.0): p must be between 0 and 1");
        let err = check_ops(&[Op::Resize { size: [0, 4] }])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "resize(size:(0,4)): size must be at least 1×1");
    }
}
