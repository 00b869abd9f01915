//! Transform pipelines: what a preset says (`light`, `heavy` or a custom chain of
//! [`Op`]s) and the [`Pipeline`] that applies it to a whole batch with libtorch, drawing
//! each sample's random parameters from a seeded generator so that a batch comes out the
//! same whichever worker builds it.

mod blur;
mod check;
pub(crate) mod cost;
mod fused;
mod geometry;
mod helpers;
mod normalize;
mod pipeline;
mod random;
mod warp;

use serde::{Deserialize, Serialize};

pub use check::{OpError, check_ops, check_torchvision};

use crate::named_values::named_values;
pub use pipeline::Pipeline;

named_values! {
    /// Where our engine runs the pipeline's ops: on each whole batch with libtorch, or
    /// on each sample in the worker before the samples are stacked, as PyTorch's
    /// per-sample transforms do (the pytorch runtime always works per sample).
    #[derive(Default)]
    pub enum TransformAt {
        #[default]
        Batch = "batch",
        Sample = "sample",
    }
}

/// A pipeline as a preset names it (a field no pipeline has is refused, not ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PipelineSpec {
    /// To float, scale to [0, 1], normalize.
    Light,
    /// Random rotation (±30°), elastic deformation (alpha 50, sigma 5), Gaussian blur
    /// (kernel 5, sigma in [0.1, 2.0]), normalize.
    Heavy,
    /// An ordered list of ops, after the conversion to float in [0, 1].
    Custom { name: String, ops: Vec<Op> },
}

/// One step of a pipeline. Random parameters are drawn per sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Rotate by an angle uniform in ±`degrees` (nearest neighbour, zero fill).
    Rotate { degrees: f64 },
    /// torchvision's ElasticTransform: a smoothed random displacement field.
    Elastic { alpha: f64, sigma: f64 },
    /// Gaussian blur with a `kernel`-wide kernel and sigma uniform in `sigma`.
    GaussianBlur {
        kernel: usize,
        #[serde(deserialize_with = "crate::pair::min_max")]
        sigma: [f64; 2],
    },
    /// Horizontal flip with probability `p`.
    Flip { p: f64 },
    /// Random crop of `size` `[height, width]` after zero-padding by `padding`.
    Crop {
        #[serde(deserialize_with = "crate::pair::height_width")]
        size: [usize; 2],
        padding: usize,
    },
    /// Bilinear resize to `size` `[height, width]`.
    Resize {
        #[serde(deserialize_with = "crate::pair::height_width")]
        size: [usize; 2],
    },
    /// Busy work of `micros_per_sample` µs per sample: models any pipeline's cost.
    Cost { micros_per_sample: u64 },
    /// Subtract the preset's mean and divide by its std, per channel.
    Normalize,
}

impl Op {
    /// One op of each kind, with the parameters a newly added op starts from: the heavy
    /// pipeline's own for the ops it has (what the app's "add op" buttons add).
    pub fn templates() -> Vec<Op> {
        let mut ops = PipelineSpec::Heavy.ops();
        ops.retain(|op| *op != Op::Normalize);
        ops.extend([
            Op::Flip { p: 0.5 },
            Op::Crop {
                size: [28, 28],
                padding: 4,
            },
            Op::Resize { size: [32, 32] },
            Op::Cost {
                micros_per_sample: 100,
            },
            Op::Normalize,
        ]);
        ops
    }

    /// The op's name in words, as the app lists it.
    pub fn label(&self) -> &'static str {
        match self {
            Op::Rotate { .. } => "rotate",
            Op::Elastic { .. } => "elastic",
            Op::GaussianBlur { .. } => "gaussian blur",
            Op::Flip { .. } => "flip",
            Op::Crop { .. } => "crop",
            Op::Resize { .. } => "resize",
            Op::Cost { .. } => "cost",
            Op::Normalize => "normalize",
        }
    }
}

/// An op as a preset writes it, in RON (`resize(size:(0,0))`), for the errors that name it.
impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match ron::to_string(self) {
            Ok(text) => f.write_str(&text),
            Err(_) => f.write_str(self.label()),
        }
    }
}

/// Per-channel mean and standard deviation (one value applies to every channel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Normalize {
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
}

impl Default for Normalize {
    /// FashionMNIST's statistics.
    fn default() -> Self {
        Normalize {
            mean: vec![0.2860],
            std: vec![0.3530],
        }
    }
}

impl PipelineSpec {
    /// The name tables and plots use.
    pub fn name(&self) -> &str {
        match self {
            PipelineSpec::Light => "light",
            PipelineSpec::Heavy => "heavy",
            PipelineSpec::Custom { name, .. } => name,
        }
    }

    /// The ops this pipeline runs after the conversion to float.
    pub fn ops(&self) -> Vec<Op> {
        match self {
            PipelineSpec::Light => vec![Op::Normalize],
            PipelineSpec::Heavy => vec![
                Op::Rotate { degrees: 30.0 },
                Op::Elastic {
                    alpha: 50.0,
                    sigma: 5.0,
                },
                Op::GaussianBlur {
                    kernel: 5,
                    sigma: [0.1, 2.0],
                },
                Op::Normalize,
            ],
            PipelineSpec::Custom { ops, .. } => ops.clone(),
        }
    }
}
