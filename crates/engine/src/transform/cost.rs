//! The `cost` op: busy work that stands in for any pipeline's CPU cost, so a preset can
//! model an expensive transform without describing it.

use std::time::{Duration, Instant};

/// Keeps this thread busy for `micros_per_sample` µs per sample of a `batch`.
pub(super) fn spend(micros_per_sample: u64, batch: usize) {
    busy_wait(Duration::from_micros(
        micros_per_sample.saturating_mul(batch as u64),
    ));
}

/// Keeps this thread busy for `duration`: spinning, not sleeping, since a sleeping
/// thread frees its core, which the real work it stands for (a transform, a training
/// step) does not.
pub(crate) fn busy_wait(duration: Duration) {
    let start = Instant::now();
    while start.elapsed() < duration {
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
