//! The `cost` op: busy work that stands in for any pipeline's CPU cost, so a preset can
//! model an expensive transform without describing it.

use std::time::{Duration, Instant};

/// Keeps this thread busy for `micros_per_sample` µs per sample of a `batch`.
pub(super) fn spend(micros_per_sample: u64, batch: usize) {
    let total = Duration::from_micros(micros_per_sample.saturating_mul(batch as u64));
    // Spinning, not sleeping: a sleeping worker frees its core, which real transform
    // work does not.
    let start = Instant::now();
    while start.elapsed() < total {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spends_at_least_the_requested_time() {
        let start = Instant::now();
        spend(500, 4);
        assert!(start.elapsed() >= Duration::from_millis(2));
    }
}
