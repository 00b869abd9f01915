//! The `normalize` op and the per-channel statistics it uses, checked once against the
//! dataset's channel count when a pipeline is built.

use tch::Tensor;

use super::Normalize;
use crate::error::{Error, Result};

/// A preset's mean and std, checked: each holds one value for every channel or one for
/// all of them, and every std is a finite positive number.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ChannelStats {
    mean: Vec<f32>,
    std: Vec<f32>,
}

impl ChannelStats {
    /// Checks `normalize` against images with `channels` channels.
    pub(super) fn new(normalize: &Normalize, channels: usize) -> Result<ChannelStats> {
        if channels == 0 {
            return Err(Error::value("images must have at least one channel"));
        }
        normalize
            .fits_channels(channels)
            .map_err(|(list, problem)| Error::value(format!("normalize.{list}: {problem}")))?;
        if let Some(bad) = normalize.mean.iter().find(|m| !m.is_finite()) {
            return Err(Error::value(format!("normalize: mean {bad} is not finite")));
        }
        if let Some(bad) = normalize.std.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(Error::value(format!(
                "normalize: std {bad} must be a finite positive number"
            )));
        }
        Ok(ChannelStats {
            mean: normalize.mean.iter().map(|&m| m as f32).collect(),
            std: normalize.std.iter().map(|&s| s as f32).collect(),
        })
    }

    /// Channel `c`'s mean and std (a single value serves every channel).
    pub(super) fn channel(&self, c: usize) -> (f32, f32) {
        // `new` checked both lists hold one value, or one per channel: never none.
        let pick = |values: &[f32]| *values.get(c).unwrap_or(&values[0]);
        (pick(&self.mean), pick(&self.std))
    }

    /// `(x - mean[c]) / std[c]` for a float `[B, C, H, W]` batch.
    pub(super) fn apply(&self, x: &Tensor) -> Result<Tensor> {
        let mean = per_channel(&self.mean)?;
        let std = per_channel(&self.std)?;
        // The subtraction allocates the output; dividing in place reuses it.
        Ok(x.f_sub(&mean)?.f_div_(&std)?)
    }
}

impl Normalize {
    /// Whether the mean and the std each hold one value, or one per channel of images
    /// with `channels` channels; where not, the list (`"mean"`, `"std"`) and the problem.
    pub fn fits_channels(
        &self,
        channels: usize,
    ) -> std::result::Result<(), (&'static str, String)> {
        for (list, len) in [("mean", self.mean.len()), ("std", self.std.len())] {
            if len != 1 && len != channels {
                let values = if len == 1 { "value" } else { "values" };
                let has = if channels == 1 {
                    "1 channel".to_owned()
                } else {
                    format!("{channels} channels")
                };
                let problem = format!(
                    "{len} {values}, but the dataset's images have {has}: give one value, or \
                     one per channel"
                );
                return Err((list, problem));
            }
        }
        Ok(())
    }
}

/// `values` shaped `[1, C, 1, 1]` to broadcast over a batch.
fn per_channel(values: &[f32]) -> Result<Tensor> {
    Ok(Tensor::f_from_slice(values)?.f_view([1, values.len() as i64, 1, 1])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(mean: &[f64], std: &[f64]) -> Normalize {
        Normalize {
            mean: mean.to_vec(),
            std: std.to_vec(),
        }
    }

    #[test]
    fn one_value_or_one_per_channel_is_accepted() {
        assert!(ChannelStats::new(&stats(&[0.5], &[0.2]), 3).is_ok());
        assert!(ChannelStats::new(&stats(&[0.1, 0.2, 0.3], &[0.2]), 3).is_ok());
    }

    #[test]
    fn a_wrong_channel_count_is_named() {
        let err = ChannelStats::new(&stats(&[0.1, 0.2], &[0.2]), 3).unwrap_err();
        assert!(err.is_bad_input());
        assert!(
            err.to_string().contains("normalize.mean: 2 values"),
            "{err}"
        );
        assert!(err.to_string().contains("3 channels"), "{err}");
    }

    #[test]
    fn a_zero_std_is_rejected() {
        let err = ChannelStats::new(&stats(&[0.1], &[0.0]), 1).unwrap_err();
        assert!(err.to_string().contains("std 0"), "{err}");
    }

    #[test]
    fn normalizes_each_channel_with_its_own_stats() {
        let x = Tensor::from_slice(&[1.0f32, 1.0, 0.5, 0.5]).view([1, 2, 1, 2]);
        let s = ChannelStats::new(&stats(&[0.5, 0.0], &[0.25, 2.0]), 2).unwrap();
        let out = Vec::<f32>::try_from(s.apply(&x).unwrap().flatten(0, -1)).unwrap();
        assert_eq!(out, vec![2.0, 2.0, 0.25, 0.25]);
    }
}
