//! Disturbance: whether a config was measured while something else kept the machine
//! busy. Decided once, here, from the interference meter's per-epoch readings: a config
//! is `disturbed` when the other load, averaged over its measured epochs, exceeds
//! [`DISTURBED_LOAD_CORES`] by more than the meter's resolution over that time. Front
//! ends only show the verdict.

use crate::meter::Interference;

/// Other load above this many cores, on average over a config's epochs, disturbs it: a
/// quarter of a core is enough to slow a loader that wants every core.
pub const DISTURBED_LOAD_CORES: f64 = 0.25;

/// A config's other load over its epochs, and whether it was disturbed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// Average cores busy with anything but the run, weighted by epoch time; `None`
    /// where the platform has no counters.
    pub other_load_cores: Option<f64>,
    pub disturbed: bool,
}

/// The verdict over `(epoch seconds, what the meter saw)` for each measured epoch.
pub fn judge(epochs: &[(f64, Interference)]) -> Verdict {
    let wall_s: f64 = epochs.iter().map(|(seconds, _)| seconds).sum();
    if epochs.is_empty() || wall_s <= 0.0 {
        return Verdict {
            other_load_cores: None,
            disturbed: false,
        };
    }
    let weighted = |value: fn(&Interference) -> f64| {
        epochs
            .iter()
            .map(|(seconds, seen)| seconds * value(seen))
            .sum::<f64>()
            / wall_s
    };
    let load = weighted(|seen| seen.other_load_cores);
    // Each epoch's rounding error is at most its resolution; over several epochs the
    // errors partly cancel, so the bound shrinks with their square root.
    let resolution = weighted(|seen| seen.resolution_cores) / (epochs.len() as f64).sqrt();
    Verdict {
        other_load_cores: Some(load),
        disturbed: load - resolution > DISTURBED_LOAD_CORES,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(other_load_cores: f64, resolution_cores: f64) -> Interference {
        Interference {
            other_load_cores,
            own_cpu_s: 0.1,
            resolution_cores,
        }
    }

    #[test]
    fn a_hog_on_one_core_disturbs() {
        let verdict = judge(&[(1.0, seen(0.98, 0.03)), (1.0, seen(1.02, 0.03))]);
        assert!(verdict.disturbed);
        assert!((verdict.other_load_cores.unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_quiet_machine_does_not() {
        assert!(!judge(&[(1.0, seen(0.02, 0.03)), (1.0, seen(0.0, 0.03))]).disturbed);
    }

    #[test]
    fn load_within_the_resolution_of_short_epochs_is_not_called_a_disturbance() {
        // 30 ms epochs: one tick of rounding is a third of a core.
        let verdict = judge(&[(0.03, seen(0.33, 1.0)), (0.03, seen(0.0, 1.0))]);
        assert!(!verdict.disturbed);
    }

    #[test]
    fn the_average_is_weighted_by_epoch_time() {
        let verdict = judge(&[(3.0, seen(1.0, 0.0)), (1.0, seen(0.0, 0.0))]);
        assert!((verdict.other_load_cores.unwrap() - 0.75).abs() < 1e-9);
    }

    #[test]
    fn no_readings_no_verdict() {
        assert_eq!(
            judge(&[]),
            Verdict {
                other_load_cores: None,
                disturbed: false
            }
        );
    }
}
