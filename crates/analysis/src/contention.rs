//! Contention, measured: with a training step, loader workers and the step share the
//! machine's cores, so workers can slow the step they feed. For each config with
//! workers, the step's time per batch is compared with the same config's without
//! workers (nw=0: same runtime, pipeline, batch size, device and intra-op threads), so
//! the analysis can say "2 workers slow your step by 40%"; and, per question, the share
//! of the epoch the step waited for data at each config ("input-bound 38% at nw=0, 3% at
//! nw=2"), which says what the workers bought the step.

use serde::{Deserialize, Serialize};

use loaderbench_engine::plan::Config;
use loaderbench_engine::step::StepSpec;
use loaderbench_measure::stats;

use super::ConfigRuns;
use super::input::InputBound;

/// A change in the step's time per batch within this share of nw=0's is no change: the
/// step's own run-to-run spread on a quiet machine is of this order.
pub const SAME_STEP_SHARE: f64 = 0.05;

/// One config's step time per batch against its config without workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepContention {
    pub config: usize,
    pub label: String,
    /// The step's seconds per batch, the median over the config's typical epochs.
    pub step_per_batch_s: f64,
    /// The same at the config without workers it is compared with.
    pub alone_per_batch_s: f64,
    /// That config's label.
    pub alone_label: String,
    /// `step_per_batch_s / alone_per_batch_s − 1`: 0.4 when workers slow the step by 40%.
    pub slowdown: f64,
    /// Either config was measured while other load disturbed it, so the comparison
    /// may say more about that load than about the workers.
    #[serde(default)]
    pub disturbed: bool,
    /// `2 workers slow your step by 40% (5.6 ms per batch, 4.0 ms at nw=0)`, with
    /// `; disturbed by other load, re-run on a quiet machine` when it was.
    pub sentence: String,
}

/// The step's seconds per batch in one config, the median over its typical epochs;
/// `None` without batches or without step time.
pub fn step_per_batch_s(runs: &ConfigRuns<'_>) -> Option<f64> {
    let per_batch: Vec<f64> = runs
        .typical_epochs()
        .filter(|e| e.batches > 0)
        .map(|e| e.stages.step_s / e.batches as f64)
        .collect();
    stats::median(&per_batch).filter(|&s| s > 0.0)
}

/// Every config with workers compared with its config without workers, where the run
/// measured both; empty without a step.
pub fn contention(configs: &[ConfigRuns<'_>], step: &StepSpec) -> Vec<StepContention> {
    if step.is_none() {
        return Vec::new();
    }
    configs
        .iter()
        .filter(|runs| runs.config.num_workers > 0)
        .filter_map(|runs| {
            let alone = configs
                .iter()
                .find(|other| other.config.num_workers == 0 && alike(other.config, runs.config))?;
            compare(runs, alone)
        })
        .collect()
}

/// True when `a` and `b` run the same step on the same data in the same way, workers
/// aside.
fn alike(a: &Config, b: &Config) -> bool {
    a.runtime == b.runtime
        && a.pipeline == b.pipeline
        && a.ranks == b.ranks
        && a.run == b.run
        && a.batch_size == b.batch_size
        && a.device == b.device
        && a.intra_op_threads == b.intra_op_threads
}

fn compare(runs: &ConfigRuns<'_>, alone: &ConfigRuns<'_>) -> Option<StepContention> {
    let step = step_per_batch_s(runs)?;
    let alone_step = step_per_batch_s(alone)?;
    let slowdown = step / alone_step - 1.0;
    let (workers, s) = match runs.config.num_workers {
        1 => ("1 worker".to_owned(), "s"),
        n => (format!("{n} workers"), ""),
    };
    let change = if slowdown >= SAME_STEP_SHARE {
        format!("{workers} slow{s} your step by {:.0}%", slowdown * 100.0)
    } else if slowdown <= -SAME_STEP_SHARE {
        format!(
            "your step is {:.0}% faster with {workers}",
            -slowdown * 100.0
        )
    } else {
        format!("{workers} leave{s} your step's time as it is")
    };
    let disturbed = [runs, alone]
        .iter()
        .any(|config| config.runs.iter().any(|r| r.disturbed));
    let caveat = if disturbed {
        "; disturbed by other load, re-run on a quiet machine"
    } else {
        ""
    };
    Some(StepContention {
        config: runs.index,
        label: runs.label.to_owned(),
        step_per_batch_s: step,
        alone_per_batch_s: alone_step,
        alone_label: alone.label.to_owned(),
        slowdown,
        disturbed,
        sentence: format!(
            "{change} ({:.1} ms per batch, {:.1} ms at {}{caveat})",
            step * 1e3,
            alone_step * 1e3,
            alone.label
        ),
    })
}

/// What the step waited for data at each config, in one line: `input-bound 38% at nw=0,
/// 3% at nw=2`; `None` without verdicts.
pub fn input_bound_line(verdicts: &[InputBound]) -> Option<String> {
    let parts: Vec<String> = verdicts
        .iter()
        .map(|v| format!("{:.0}% at {}", v.stall_share * 100.0, v.label))
        .collect();
    (!parts.is_empty()).then(|| format!("input-bound {}", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::super::Analysis;
    use loaderbench_engine::step::StepSpec;
    use loaderbench_measure::fixtures::{config, epoch_with_wait, result, run};
    use loaderbench_measure::results::EpochResult;

    /// An epoch of 11 batches every 10 ms whose step took `step_ms` per batch.
    fn epoch(step_ms: f64, wait_s: f64) -> EpochResult {
        let mut epoch = epoch_with_wait(1, 0.1, 0.01, 11, wait_s);
        epoch.stages.step_s = step_ms / 1e3 * epoch.batches as f64;
        epoch
    }

    #[test]
    fn workers_that_slow_the_step_are_named_with_the_slowdown() {
        let configs = vec![config(0, false), config(2, false), config(1, false)];
        let runs = vec![
            run(0, configs[0].clone(), vec![epoch(4.0, 0.006)]),
            run(1, configs[1].clone(), vec![epoch(5.6, 0.0005)]),
            run(2, configs[2].clone(), vec![epoch(4.1, 0.0005)]),
        ];
        let mut r = result(configs, runs);
        assert!(
            Analysis::of(&r).contention.is_empty(),
            "no step, no contention"
        );
        r.step = StepSpec::Fixed(4.0);
        let analysis = Analysis::of(&r);
        let sentences: Vec<&str> = analysis
            .contention
            .iter()
            .map(|c| c.sentence.as_str())
            .collect();
        assert_eq!(
            sentences,
            [
                "2 workers slow your step by 40% (5.6 ms per batch, 4.0 ms at nw=0)",
                "1 worker leaves your step's time as it is (4.1 ms per batch, 4.0 ms at nw=0)",
            ]
        );
        assert!((analysis.contention[0].slowdown - 0.4).abs() < 1e-9);
        assert_eq!(
            super::input_bound_line(&analysis.input_bound).unwrap(),
            "input-bound 60% at nw=0, 5% at nw=2, 5% at nw=1"
        );
    }

    #[test]
    fn a_comparison_with_a_disturbed_config_says_so() {
        let configs = vec![config(0, false), config(2, false)];
        let mut alone = run(0, configs[0].clone(), vec![epoch(4.0, 0.0)]);
        alone.disturbed = true;
        let runs = vec![alone, run(1, configs[1].clone(), vec![epoch(5.6, 0.0)])];
        let mut r = result(configs, runs);
        r.step = StepSpec::Fixed(4.0);
        let contention = &Analysis::of(&r).contention[0];
        assert!(contention.disturbed);
        assert!(
            contention
                .sentence
                .ends_with("4.0 ms at nw=0; disturbed by other load, re-run on a quiet machine)"),
            "{}",
            contention.sentence
        );
    }

    #[test]
    fn configs_are_compared_only_with_nw0_at_the_same_batch_size() {
        let mut big = config(2, false);
        big.batch_size = 256;
        let configs = vec![config(0, false), big];
        let runs = vec![
            run(0, configs[0].clone(), vec![epoch(4.0, 0.0)]),
            run(1, configs[1].clone(), vec![epoch(16.0, 0.0)]),
        ];
        let mut r = result(configs, runs);
        r.step = StepSpec::Mlp { hidden: 8 };
        assert!(Analysis::of(&r).contention.is_empty());
    }
}
