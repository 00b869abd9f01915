//! Contention, measured: with a training step, loader workers and the step share the
//! machine's cores, so workers can slow the step they feed. For each config with
//! workers, the step's time per batch is compared with the same config's without
//! workers (nw=0: same runtime, pipeline, batch size, device and intra-op threads), so
//! the analysis can say "2 workers slow your step by 40%"; and, per question, the share
//! of the epoch the step waited for data at each config ("input-bound 38% at nw=0, 3% at
//! nw=2"), which says what the workers bought the step. Whether the workers changed the
//! step's time is judged by the recommendation's noise model ([`NoiseModel`]) over the
//! step's time per batch, round by round and epoch by epoch, against the run's tie margin:
//! a slowdown beyond the noise, a tie within the margin, or not resolved.

use serde::{Deserialize, Serialize};

use loaderbench_engine::plan::Config;
use loaderbench_engine::step::StepSpec;
use loaderbench_measure::stats;

use super::ConfigRuns;
use super::input::InputBound;
use crate::recommend::noise::{NoiseInput, NoiseModel, Relation};
use loaderbench_measure::results::{ConfigResult, EpochResult};

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
    let per_batch: Vec<f64> = runs.typical_epochs().filter_map(epoch_step_s).collect();
    stats::median(&per_batch)
}

/// One epoch's step seconds per batch; `None` without batches or step time.
fn epoch_step_s(epoch: &EpochResult) -> Option<f64> {
    let per_batch = epoch.stages.step_s / epoch.batches as f64;
    (epoch.batches > 0 && per_batch > 0.0).then_some(per_batch)
}

/// Every config with workers compared with its config without workers, where the run
/// measured both; empty without a step. A change within `tie_margin` (a share) is none.
pub fn contention(
    configs: &[ConfigRuns<'_>],
    step: &StepSpec,
    tie_margin: f64,
) -> Vec<StepContention> {
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
            compare(runs, alone, tie_margin)
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

/// The noise model's input for the step's time per batch of `alone` (config 0) and the
/// config with workers (1): each repeat's median as a round, each repeat's epochs after
/// the first for the scatter within a round.
fn step_noise_input(alone: &ConfigRuns<'_>, runs: &ConfigRuns<'_>) -> NoiseInput {
    // A repeat's step time per batch: the median over its typical epochs.
    let by_round = |config: &ConfigRuns<'_>| {
        NoiseInput::by_round(config.runs.iter().copied(), |run| {
            stats::median(
                &run.typical_epochs()
                    .filter_map(epoch_step_s)
                    .collect::<Vec<_>>(),
            )
        })
    };
    let later = |run: &&ConfigResult| run.epochs.iter().skip(1).filter_map(epoch_step_s).collect();
    NoiseInput {
        rounds: vec![by_round(alone), by_round(runs)],
        later_epochs: alone.runs.iter().chain(&runs.runs).map(later).collect(),
        aa_ratios: Vec::new(),
        others: Vec::new(),
    }
}

fn compare(
    runs: &ConfigRuns<'_>,
    alone: &ConfigRuns<'_>,
    tie_margin: f64,
) -> Option<StepContention> {
    let step = step_per_batch_s(runs)?;
    let alone_step = step_per_batch_s(alone)?;
    let slowdown = step / alone_step - 1.0;
    let model = NoiseModel::fit(&step_noise_input(alone, runs), tie_margin);
    // How much faster the step is alone: a `Faster` relation is workers slowing it.
    let difference = model.compare(0, 1)?;
    let workers = crate::workers(runs.config.num_workers);
    let s = if runs.config.num_workers == 1 {
        "s"
    } else {
        ""
    };
    let percent = slowdown.abs() * 100.0;
    let change = match difference.relation {
        Relation::Faster => format!("{workers} slow{s} your step by {percent:.0}%"),
        Relation::Slower => format!("your step is {percent:.0}% faster with {workers}"),
        Relation::Tie => format!(
            "{workers} leave{s} your step's time as it is, within {:.0}%",
            model.tie_margin() * 100.0
        ),
        Relation::Open if slowdown >= 0.0 => {
            format!("{workers} may slow your step by {percent:.0}%, not resolved")
        }
        Relation::Open => {
            format!("your step may be {percent:.0}% faster with {workers}, not resolved")
        }
    };
    let noise = if difference.plus_minus.is_finite() {
        format!("±{:.0}%", difference.plus_minus * 100.0)
    } else {
        "no noise measured to judge it by".to_owned()
    };
    // What answers an open question, as a baseline comparison says it: later epochs
    // show the scatter within a round, more repeats narrow the noise between rounds.
    let hint = if difference.relation == Relation::Open {
        ": measure more epochs or repeats"
    } else {
        ""
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
            "{change} ({:.1} ms per batch, {:.1} ms at {}, {noise}{caveat}){hint}",
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

    /// Epochs whose step took each of `step_ms` per batch.
    fn epochs(step_ms: &[f64], wait_s: f64) -> Vec<EpochResult> {
        step_ms.iter().map(|&ms| epoch(ms, wait_s)).collect()
    }

    /// The contention sentences of nw=0 with `alone` and nw=2 with `workers`, each a
    /// list of epochs' step milliseconds per batch.
    fn sentences(alone: &[f64], workers: &[f64]) -> Vec<String> {
        let configs = vec![config(0, false), config(2, false)];
        let runs = vec![
            run(0, configs[0].clone(), epochs(alone, 0.0)),
            run(1, configs[1].clone(), epochs(workers, 0.0)),
        ];
        let mut r = result(configs, runs);
        r.step = StepSpec::Fixed(4.0);
        let analysis = Analysis::of(&r);
        analysis
            .contention
            .into_iter()
            .map(|c| c.sentence)
            .collect()
    }

    #[test]
    fn workers_that_slow_the_step_beyond_the_noise_are_named_with_the_slowdown() {
        let configs = vec![config(0, false), config(2, false), config(1, false)];
        let runs = vec![
            run(
                0,
                configs[0].clone(),
                epochs(&[4.0, 4.0, 4.04, 3.96, 4.0], 0.006),
            ),
            run(
                1,
                configs[1].clone(),
                epochs(&[5.6, 5.6, 5.65, 5.55, 5.6], 0.0005),
            ),
            run(
                2,
                configs[2].clone(),
                epochs(&[4.0, 4.0, 4.02, 3.98, 4.01], 0.0005),
            ),
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
        assert!(
            sentences[0].starts_with(
                "2 workers slow your step by 40% (5.6 ms per batch, 4.0 ms at nw=0, ±"
            ),
            "{sentences:?}"
        );
        assert!(
            sentences[1].starts_with(
                "1 worker leaves your step's time as it is, within 5% (4.0 ms per batch, \
                 4.0 ms at nw=0, ±"
            ),
            "{sentences:?}"
        );
        assert!((analysis.contention[0].slowdown - 0.4).abs() < 1e-9);
        assert_eq!(
            super::input_bound_line(&analysis.input_bound).unwrap(),
            "input-bound 60% at nw=0, 5% at nw=2, 5% at nw=1"
        );
    }

    /// A 7% slowdown in epochs that scatter by ±15% is no finding; nor is any slowdown
    /// with a single epoch each, which shows no noise.
    #[test]
    fn a_slowdown_the_noise_cannot_resolve_is_said_to_be_open() {
        let open = sentences(
            &[4.0, 4.0, 3.4, 4.6, 3.8, 4.2],
            &[4.28, 4.28, 3.64, 4.92, 4.07, 4.49],
        );
        assert!(
            open[0].starts_with("2 workers may slow your step by 7%, not resolved (4.3 ms"),
            "{open:?}"
        );
        assert!(
            open[0].ends_with("): measure more epochs or repeats"),
            "{open:?}"
        );
        let unmeasured = sentences(&[4.0], &[5.6]);
        assert_eq!(
            unmeasured,
            [
                "2 workers may slow your step by 40%, not resolved (5.6 ms per batch, 4.0 ms at \
              nw=0, no noise measured to judge it by): measure more epochs or repeats"
            ]
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
            contention.sentence.ends_with(
                "4.0 ms at nw=0, no noise measured to judge it by; disturbed by other load, \
                 re-run on a quiet machine): measure more epochs or repeats"
            ),
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
