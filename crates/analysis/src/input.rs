//! Is training input-bound? With a training step per batch (the preset's `step`), the
//! time the consumer waits for each batch after the first is the loader's stall: when
//! it is a sizeable share of the steady epoch, the loader does not keep up and the
//! accelerator (or CPU) doing the step sits idle.

use serde::{Deserialize, Serialize};

use loaderbench_engine::step::StepSpec;
use loaderbench_measure::stats;

use super::ConfigRuns;

/// A stall above this share of the steady epoch makes training input-bound.
pub const INPUT_BOUND_SHARE: f64 = 0.10;

/// One config's stall, medians over its typical epochs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputBound {
    pub config: usize,
    pub label: String,
    /// The consumer's wait per batch after the first.
    pub stall_per_batch_s: f64,
    /// The waits' share of the epoch after its first batch.
    pub stall_share: f64,
    pub input_bound: bool,
    /// `input-bound: yes (stall 42%, 3.1 ms per batch)`.
    pub verdict: String,
}

/// The stall of one config with a training step; `None` without a step, where every
/// loop is input-bound by construction, or without a second batch.
pub fn input_bound(runs: &ConfigRuns<'_>, step: &StepSpec) -> Option<InputBound> {
    if step.is_none() {
        return None;
    }
    let mut per_batch = Vec::new();
    let mut shares = Vec::new();
    for epoch in runs.typical_epochs() {
        // The wait after the first batch (the timeline may hold only the first).
        let first_wait = epoch.timeline.first().map_or(0.0, |b| b.stages.wait_s);
        let waits = (epoch.stages.wait_s - first_wait).max(0.0);
        let steady_s = epoch.seconds - epoch.first_batch_s;
        if epoch.batches > 1 && steady_s > 0.0 {
            per_batch.push(waits / (epoch.batches - 1) as f64);
            shares.push(waits / steady_s);
        }
    }
    let stall_per_batch_s = stats::median(&per_batch)?;
    let stall_share = stats::median(&shares)?;
    let input_bound = stall_share > INPUT_BOUND_SHARE;
    Some(InputBound {
        config: runs.index,
        label: runs.label.to_owned(),
        stall_per_batch_s,
        stall_share,
        input_bound,
        verdict: format!(
            "input-bound: {} (stall share {:.0}%, {:.1} ms per batch)",
            if input_bound { "yes" } else { "no" },
            stall_share * 100.0,
            stall_per_batch_s * 1e3
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Analysis;
    use loaderbench_engine::step::StepSpec;
    use loaderbench_measure::fixtures::{config, epoch_with_wait, result, run};

    #[test]
    fn a_loader_that_keeps_up_is_not_input_bound() {
        // Batches every 10 ms; the loader starves nw=0 for 6 ms of each, nw=4 for 0.5 ms.
        let slow = run(
            0,
            config(0, false),
            vec![epoch_with_wait(1, 0.1, 0.01, 11, 0.006)],
        );
        let fast = run(
            1,
            config(4, false),
            vec![epoch_with_wait(1, 0.1, 0.01, 11, 0.0005)],
        );
        let mut r = result(vec![config(0, false), config(4, false)], vec![slow, fast]);
        assert!(
            Analysis::of(&r).input_bound.is_empty(),
            "no step, no verdict"
        );
        r.step = StepSpec::Fixed(4.0);
        let verdicts = Analysis::of(&r).input_bound;
        assert!(verdicts[0].input_bound);
        assert!((verdicts[0].stall_share - 0.6).abs() < 1e-9);
        assert_eq!(
            verdicts[0].verdict,
            "input-bound: yes (stall share 60%, 6.0 ms per batch)"
        );
        assert!(!verdicts[1].input_bound);
        assert_eq!(
            verdicts[1].verdict,
            "input-bound: no (stall share 5%, 0.5 ms per batch)"
        );
    }
}
