//! The A/A check: a config measured against a copy of itself (`copy: 1` in an extra
//! config, as the built-in `aa-check` preset does), interleaved, says how far two
//! measurements of the same work differ on this machine: the median over rounds of the
//! copy's relative difference, with its 95% bootstrap interval. Differences between
//! configs smaller than this are the machine's noise.

use serde::{Deserialize, Serialize};

use loaderbench_measure::results::{ConfigResult, RunResult};
use loaderbench_measure::stats;

/// How a copy's epoch times differ from the original's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseFloor {
    pub label: String,
    pub copy_label: String,
    /// The copy's typical epoch over the original's, minus one, per round: the median.
    pub difference: f64,
    /// The 95% bootstrap interval of that median, with two rounds or more.
    pub interval: Option<(f64, f64)>,
    pub rounds: usize,
}

impl NoiseFloor {
    /// One sentence for the CLI and the app.
    pub fn describe(&self) -> String {
        let interval = self.interval.map_or_else(
            || " (one round: add repeats for an interval)".to_owned(),
            |(low, high)| format!(" [{:+.1}%, {:+.1}%]", low * 100.0, high * 100.0),
        );
        format!(
            "A/A check: `{}` against `{}` differs by {:+.1}%{interval} over {} round(s); \
             differences between configs within this are this machine's noise",
            self.copy_label,
            self.label,
            self.difference * 100.0,
            self.rounds
        )
    }
}

/// Every copy in `result` against its original.
pub fn noise_floors(result: &RunResult) -> Vec<NoiseFloor> {
    result
        .configs
        .iter()
        .enumerate()
        .filter(|(_, config)| config.copy > 0)
        .filter_map(|(copy_index, copy)| {
            let original = result.configs.iter().position(|config| {
                config.copy == 0 && {
                    let mut same = copy.clone();
                    same.copy = 0;
                    *config == same
                }
            })?;
            noise_floor(result, original, copy_index)
        })
        .collect()
}

fn noise_floor(result: &RunResult, original: usize, copy: usize) -> Option<NoiseFloor> {
    let typical = |index: usize, repeat: usize| {
        let run: &ConfigResult = result
            .results
            .iter()
            .find(|r| r.config_index == index && r.repeat == repeat)?;
        let seconds: Vec<f64> = run.epochs.iter().map(|e| e.seconds).collect();
        stats::median(&seconds)
    };
    let differences: Vec<f64> = (0..result.repeats)
        .filter_map(|repeat| Some(typical(copy, repeat)? / typical(original, repeat)? - 1.0))
        .filter(|d| d.is_finite())
        .collect();
    Some(NoiseFloor {
        label: result.labels.get(original)?.clone(),
        copy_label: result.labels.get(copy)?.clone(),
        difference: stats::median(&differences)?,
        interval: (differences.len() > 1)
            .then(|| stats::bootstrap_median_interval(&differences, 0.95))
            .flatten(),
        rounds: differences.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, epoch, result, run};

    #[test]
    fn a_copy_is_compared_with_its_original_round_by_round() {
        let original = config(0, false);
        let mut copy = config(0, false);
        copy.copy = 1;
        let rounds = [(0.10, 0.11), (0.10, 0.09), (0.20, 0.21)];
        let results = rounds
            .iter()
            .enumerate()
            .flat_map(|(round, (a, b))| {
                let mut first = run(0, original.clone(), vec![epoch(1, *a, 0.0, 1)]);
                let mut second = run(1, copy.clone(), vec![epoch(1, *b, 0.0, 1)]);
                first.repeat = round;
                second.repeat = round;
                [first, second]
            })
            .collect();
        let mut r = result(vec![original, copy], results);
        r.repeats = 3;
        r.labels = vec!["nw=0".to_owned(), "nw=0 copy 1".to_owned()];
        let floors = noise_floors(&r);
        assert_eq!(floors.len(), 1);
        let floor = &floors[0];
        assert!((floor.difference - 0.05).abs() < 1e-9, "{floor:?}");
        let (low, high) = floor.interval.unwrap();
        assert!(low <= floor.difference && floor.difference <= high);
        assert!(
            floor
                .describe()
                .starts_with("A/A check: `nw=0 copy 1` against `nw=0` differs by +5.0% [")
        );
    }

    #[test]
    fn a_run_without_copies_has_no_noise_floor() {
        let r = result(
            vec![config(0, false)],
            vec![run(0, config(0, false), vec![epoch(1, 0.1, 0.0, 1)])],
        );
        assert!(noise_floors(&r).is_empty());
    }
}
