//! Temporary stand-in until the transform pipelines land: light only.

use rand::rngs::StdRng;
use tch::{Kind, Tensor};

use super::{Normalize, PipelineSpec};
use crate::error::{Error, Result};

pub struct Pipeline {
    name: String,
    mean: f64,
    std: f64,
}

impl Pipeline {
    pub fn new(spec: &PipelineSpec, normalize: &Normalize, _channels: usize) -> Result<Pipeline> {
        if *spec != PipelineSpec::Light {
            return Err(Error::value("only light for now"));
        }
        Ok(Pipeline {
            name: spec.name().to_owned(),
            mean: normalize.mean[0],
            std: normalize.std[0],
        })
    }

    pub fn apply(&self, batch: &Tensor, _rng: &mut StdRng) -> Result<Tensor> {
        let x = batch.f_to_kind(Kind::Float)?.f_div_scalar(255.0)?;
        Ok(x.f_sub_scalar(self.mean)?.f_div_scalar(self.std)?)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}
