//! Placeholder until the synthetic generator lands.

use super::{Dataset, PixelKind, SampleShape};
use crate::error::Result;

/// FashionMNIST's training-set size.
pub const SYNTHETIC_LEN: usize = 60_000;

pub struct Synthetic {
    pixels: Vec<u8>,
    labels: Vec<i64>,
}

impl Synthetic {
    pub fn generate(len: usize, seed: u64) -> Self {
        Synthetic {
            pixels: (0..len * 784)
                .map(|i| ((i as u64 * 31 + seed) % 251) as u8)
                .collect(),
            labels: (0..len).map(|i| (i % 10) as i64).collect(),
        }
    }
}

impl Dataset for Synthetic {
    fn len(&self) -> usize {
        self.labels.len()
    }
    fn shape(&self) -> SampleShape {
        SampleShape {
            channels: 1,
            height: 28,
            width: 28,
            pixel: PixelKind::U8,
        }
    }
    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        pixels.copy_from_slice(&self.pixels[index * 784..(index + 1) * 784]);
        Ok(self.labels[index])
    }
    fn describe(&self) -> String {
        format!("synthetic ({} samples)", self.len())
    }
}
