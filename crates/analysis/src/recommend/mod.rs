//! The recommendations: for each question the run answers (the configs with the same
//! dataset, pipeline, runtime and ranks), which config to train with on this machine,
//! why, whether the measurements resolve it, and the code to paste. Each config's time is
//! its per-round projected time (the planned epochs: the first epoch, then every later
//! one at the round's typical time), and configs are compared by the one noise model
//! fitted to this run's own scatter, against the tie margin ([`noise`]). The best set
//! holds every config that no other beats beyond the margin and the noise, and the tie
//! rule picks one of them the same way every time, fewest workers first, since workers
//! cost memory and cores that buy nothing measurable (both in [`tie`]); the verdict says
//! whether that pick is fastest, equally fast as others, or not resolved yet, and which
//! configs the decision hinges on ([`verdict`]). A knob measured as a no-op (pin_memory
//! without CUDA) makes no config of its own, nor does a copy of a config (an A/A check,
//! whose rounds set the noise's floor). A measurement disturbed by other load is set
//! aside where its config has undisturbed ones; no winner is named over a config whose
//! every measurement was disturbed (the verdict hinges on it, so that it is measured
//! again). Warm and cold page caches are separate
//! questions, and a cold question names no config when one of its configs stayed warm
//! (its files could not be evicted), nor a warm one when one of its configs was partly
//! cold (its files could not all be held), so a figure of the one never answers the
//! other. The paragraph is
//! written in [`text`], the code to paste in [`snippet`].

use serde::{Deserialize, Serialize};

use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::{Cache, DEFAULT_TIE_MARGIN, IntraOpThreads};
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::stats::Estimate;

use super::ConfigRuns;
use super::input::InputBound;
use super::memory::MemoryReport;

mod candidates;
pub(crate) mod measuring_cost;
mod nodes_snippet;
pub mod noise;
mod python_code;
mod snippet;
mod text;
mod tie;
pub mod verdict;

use candidates::Effort;
pub(crate) use candidates::{Candidate, as_compared, candidates, noise_input, projected_s};
use noise::{NoiseInput, NoiseModel, Residuals};
pub use snippet::snippet;
use text::paragraph;
pub use tie::MEMORY_TIE_SHARE;
use tie::Question;
pub use verdict::{Verdict, VerdictKind};

/// What to do when the measurements cannot carry a decision.
pub const RERUN: &str = "re-run with `repeats: 5` on a quiet machine";

/// What the measurements of one question allow to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The recommended config beats the baseline beyond the noise.
    Faster,
    /// No config beats the one with the fewest workers beyond the noise.
    NoneFaster,
    /// Some config was disturbed by other load, or a cold one stayed warm: none is named.
    Undecided,
}

/// The advice for one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The question: `synthetic · light · pytorch`.
    pub group: String,
    pub outcome: Outcome,
    /// The config to use; `None` when the outcome is undecided.
    pub config: Option<usize>,
    pub label: Option<String>,
    /// The recommended config's projected time for the planned epochs, over repeats.
    pub projected_s: Option<Estimate>,
    /// What it is compared with: no workers where measured, else the slowest config.
    pub baseline_label: Option<String>,
    /// Baseline projected time over the recommended config's.
    pub speedup: Option<f64>,
    /// The rest of the best set: configs that no config beats beyond the noise, passed
    /// over by the tie rule (see [`tie`]).
    pub equally_fast: Vec<String>,
    /// Repeats behind the figures (the fewest any config of the group had).
    pub samples: usize,
    /// One short paragraph with the numbers.
    pub text: String,
    /// Whether the measurements resolve the question, and what it hinges on if not.
    pub verdict: Verdict,
    /// Code that sets the recommended config up: a `DataLoader(...)` call for PyTorch,
    /// preset lines for loaderbench's engine.
    pub snippet: Option<String>,
}

/// One recommendation per question, in plan order; questions without a finished epoch
/// get none.
pub fn recommend(
    result: &RunResult,
    configs: &[ConfigRuns<'_>],
    input_bound: &[InputBound],
    memory: &MemoryReport,
) -> Vec<Recommendation> {
    let mut groups: Vec<Vec<&ConfigRuns<'_>>> = Vec::new();
    for runs in configs {
        match groups
            .iter_mut()
            .find(|g| same_question(g[0].config, runs.config))
        {
            Some(group) => group.push(runs),
            None => groups.push(vec![runs]),
        }
    }
    let all: Vec<Vec<Candidate<'_>>> = groups
        .iter()
        .map(|members| candidates(members, result.planned_epochs))
        .collect();
    // Each question's residuals between rounds, for the alike questions to borrow.
    let residuals: Vec<Option<Residuals>> = groups
        .iter()
        .zip(&all)
        .map(|(members, all)| Residuals::of(&noise_input(members, all, result.planned_epochs)))
        .collect();
    (groups.iter().zip(all).enumerate())
        .filter_map(|(question, (members, all))| {
            let others = (groups.iter().zip(&residuals).enumerate())
                .filter(|(other, (group, _))| {
                    *other != question && group[0].config.runtime == members[0].config.runtime
                })
                .filter_map(|(_, (_, residuals))| *residuals)
                .collect();
            recommend_one(result, members, all, input_bound, memory, others)
        })
        .collect()
}

/// True when `a` and `b` answer the same question: they differ only in loader knobs.
pub(crate) fn same_question(a: &Config, b: &Config) -> bool {
    a.pipeline == b.pipeline
        && a.runtime == b.runtime
        && a.ranks == b.ranks
        && a.cache == b.cache
        && a.run == b.run
}

/// The configs of `question`'s question that a run which ended early (cancelled,
/// failed, or cut off: a journal with no end) never measured; of a tune, those its search
/// stopped before (it leaves the configs its model predicted slow unmeasured by design).
fn unmeasured(result: &RunResult, question: &Config) -> Vec<usize> {
    let never_measured = |i: &usize| !result.results.iter().any(|r| r.config_index == *i);
    let of_question = (0..result.configs.len())
        .filter(|&i| same_question(&result.configs[i], question))
        .filter(never_measured);
    match &result.tune {
        Some(trail) => of_question
            .filter(|&i| (trail.configs.iter()).any(|c| c.config == i && c.fate.is_stopped_first()))
            .collect(),
        None if result.status == RunStatus::Finished => Vec::new(),
        None => of_question.collect(),
    }
}

fn recommend_one(
    result: &RunResult,
    members: &[&ConfigRuns<'_>],
    all: Vec<Candidate<'_>>,
    input_bound: &[InputBound],
    memory: &MemoryReport,
    others: Vec<Residuals>,
) -> Option<Recommendation> {
    let first = all.first()?;
    let mut group = format!(
        "{} · {} · {}",
        result.dataset,
        first.config.pipeline.name(),
        first.config.runtime.name()
    );
    if result.configs.iter().any(|c| c.ranks != first.config.ranks) {
        let ranks = first.config.ranks;
        group.push_str(&format!(
            " · {ranks} rank{}",
            if ranks == 1 { "" } else { "s" }
        ));
    }
    if result.configs.iter().any(|c| c.cache != first.config.cache)
        || first.config.cache == Cache::Cold
    {
        group.push_str(&format!(" · {}", first.config.cache.name()));
    }
    if let Some(run) = &first.config.run {
        group = format!("{run}: {group}");
    }
    let samples = all.iter().map(|c| c.projected_s.n).min().unwrap_or(0);
    let in_group = |index: usize| all.iter().any(|c| c.index == index);
    let too_big = memory.too_big_sentence(in_group);
    let candidates: Vec<Candidate<'_>> = all
        .iter()
        .filter(|c| memory.fits(c.index))
        .cloned()
        .collect();
    if candidates.is_empty() {
        let text = format!("No config is named: {}.", too_big.unwrap_or_default());
        let verdict = Verdict::none_named(
            "no config fits the memory limit; raise memory_limit, or measure configs that \
             take less",
            Vec::new(),
        );
        return Some(no_winner(group, samples, text, verdict));
    }
    // A config whose page cache was not the one it asked for answers nothing: (the cache
    // asked for, what the config did instead, at length and in short).
    let cache_misses = [
        (Cache::Cold, "stayed warm", "stayed warm"),
        (
            Cache::Warm,
            "read part of its files from storage",
            "read from storage",
        ),
    ];
    for (cache, did, did_short) in cache_misses {
        let missed = candidates
            .iter()
            .find_map(|c| Some((c, c.cache_missed(cache)?)));
        if let Some((missed, why)) = missed {
            let cache = cache.name();
            let text = format!(
                "No config is named for a {cache} page cache: {} {did} ({why}), so its \
                 times are not {cache} ones.",
                missed.label
            );
            let verdict = Verdict::none_named(
                &format!("a {cache} config {did_short}, so no {cache} figure answers it"),
                Vec::new(),
            );
            return Some(no_winner(group, samples, text, verdict));
        }
    }
    let unmeasured = unmeasured(result, &first.config);
    let disturbed: Vec<&Candidate<'_>> = candidates.iter().filter(|c| c.disturbed()).collect();
    if !disturbed.is_empty() {
        return Some(undecided(group, &disturbed, samples, &unmeasured, result));
    }
    let question = Question {
        candidates: &candidates,
        noise: NoiseModel::fit(
            &NoiseInput {
                others,
                ..noise_input(members, &candidates, result.planned_epochs)
            },
            tie_margin(result),
        ),
        too_big: all.len() - candidates.len(),
    };
    let best = question.best_set();
    let chosen = tie::tie_break(&best)?;
    let baseline = candidates
        .iter()
        .find(|c| c.config.num_workers == 0 && !c.config.pin_memory)
        .or_else(|| {
            candidates
                .iter()
                .max_by(|a, b| a.projected_s.median.total_cmp(&b.projected_s.median))
        })?;
    let outcome = if chosen.index == baseline.index {
        Outcome::NoneFaster
    } else {
        Outcome::Faster
    };
    let cost_s = |index| measuring_cost::of(result, index);
    let verdict = verdict::verdict(&question, &best, chosen, Effort::of(&candidates), &cost_s)
        .unless_unmeasured(&unmeasured, &result.labels, Some(chosen), &cost_s);
    let equally_fast: Vec<String> = best
        .iter()
        .filter(|c| c.index != chosen.index)
        .map(|c| c.label.to_owned())
        .collect();
    let mut recommendation = Recommendation {
        group,
        outcome,
        config: Some(chosen.index),
        label: Some(chosen.label.to_owned()),
        projected_s: Some(chosen.projected_s),
        baseline_label: Some(baseline.label.to_owned()),
        speedup: Some(baseline.projected_s.median / chosen.projected_s.median),
        equally_fast,
        samples,
        text: String::new(),
        verdict,
        snippet: Some(snippet(
            result,
            &chosen.config,
            threads_swept(&candidates, chosen),
        )),
    };
    let stall = input_bound.iter().find(|i| i.config == chosen.index);
    recommendation.text = paragraph(
        &recommendation,
        result.planned_epochs,
        chosen,
        baseline,
        &question,
        stall,
    );
    if let Some(too_big) = too_big {
        // Before the verdict, which closes every recommendation's text.
        let text = &mut recommendation.text;
        let at = text.rfind(" Verdict: ").unwrap_or(text.len());
        text.insert_str(at, &format!(" {too_big}."));
    }
    Some(recommendation)
}

/// The run's tie margin, as a share: its preset's, or the default for results saved
/// without one.
pub(crate) fn tie_margin(result: &RunResult) -> f64 {
    result
        .setup
        .as_ref()
        .map_or(DEFAULT_TIE_MARGIN, |preset| preset.tie_margin)
}

/// The chosen config's intra-op threads where they were set or the group measured more
/// than one value; `None` where every config ran on libtorch's default.
fn threads_swept(candidates: &[Candidate<'_>], chosen: &Candidate<'_>) -> Option<i32> {
    let mut values: Vec<i32> = candidates
        .iter()
        .flat_map(|c| c.runs.iter().map(|r| r.intra_op_threads))
        .collect();
    values.sort_unstable();
    values.dedup();
    let set = chosen.config.intra_op_threads != IntraOpThreads::Auto;
    (set || values.len() > 1)
        .then(|| chosen.runs.first().map(|r| r.intra_op_threads))
        .flatten()
}

/// No config named while every measurement of `disturbed` was; the verdict hinges on
/// them, and on the configs of `result` it left `unmeasured` where there are any.
fn undecided(
    group: String,
    disturbed: &[&Candidate<'_>],
    samples: usize,
    unmeasured: &[usize],
    result: &RunResult,
) -> Recommendation {
    let names: Vec<String> = disturbed
        .iter()
        .map(|c| match c.other_load_cores() {
            Some(cores) => format!("{} ({cores:.2} cores of other load)", c.label),
            None => format!("{} (disturbed)", c.label),
        })
        .collect();
    let text = format!(
        "No config is named: {} ran while other work kept the machine busy, so a winner \
         would rest on noise. To decide, {RERUN}.",
        names.join(", ")
    );
    let verdict = Verdict::none_named(
        &format!(
            "every measurement of {} was disturbed by other load; measure them again on a \
             quiet machine",
            disturbed
                .iter()
                .map(|c| c.label)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        disturbed.iter().map(|c| c.index).collect(),
    )
    .unless_unmeasured(unmeasured, &result.labels, None, &|index| {
        measuring_cost::of(result, index)
    });
    no_winner(group, samples, text, verdict)
}

/// The recommendation of a question that names no config, saying why in `text`, which
/// the verdict closes as every recommendation's does.
fn no_winner(group: String, samples: usize, text: String, verdict: Verdict) -> Recommendation {
    let text = format!("{text} Verdict: {}.", verdict.text);
    Recommendation {
        group,
        outcome: Outcome::Undecided,
        config: None,
        label: None,
        projected_s: None,
        baseline_label: None,
        speedup: None,
        equally_fast: Vec::new(),
        samples,
        verdict,
        text,
        snippet: None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Analysis;
    use super::*;
    use loaderbench_engine::plan::KNOBS;
    use loaderbench_engine::plan::Plan;
    use loaderbench_engine::preset::{Preset, Runtime, StartMethod, WorkerKind};
    use loaderbench_measure::fixtures::{config, epoch, result, run, two_epochs};
    use loaderbench_measure::results::ConfigResult;

    fn measured(
        index: usize,
        workers: usize,
        persistent: bool,
        first: f64,
        batch: f64,
    ) -> ConfigResult {
        let mut r = run(
            index,
            config(workers, persistent),
            vec![
                epoch(1, first, batch, 11),
                epoch(2, if persistent { batch } else { first }, batch, 11),
            ],
        );
        r.peak_rss_bytes = Some((200 + 50 * workers as u64) << 20);
        r
    }

    /// Each result measured in three identical rounds: measurements without noise.
    fn three_rounds(results: Vec<ConfigResult>) -> Vec<ConfigResult> {
        (0..3)
            .flat_map(|round| {
                results.iter().cloned().map(move |mut r| {
                    r.repeat = round;
                    r
                })
            })
            .collect()
    }

    /// The one recommendation for configs measured as `(workers, persistent, first_s,
    /// batch_s)` each (see [`measured`]), in three rounds alike.
    fn recommend(measures: &[(usize, bool, f64, f64)]) -> Recommendation {
        let configs = measures.iter().map(|&(w, p, ..)| config(w, p)).collect();
        let results = measures
            .iter()
            .enumerate()
            .map(|(i, &(w, p, first, batch))| measured(i, w, p, first, batch))
            .collect();
        only(&result(configs, three_rounds(results)))
    }

    fn only(result: &RunResult) -> Recommendation {
        let mut all = Analysis::of(result).recommendations;
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    /// Repeats of one config whose epochs take `seconds` each (first and second alike).
    fn repeats(index: usize, config: &Config, seconds: &[f64]) -> Vec<ConfigResult> {
        seconds
            .iter()
            .map(|&s| run(index, config.clone(), two_epochs(s, s, 1)))
            .collect()
    }

    #[test]
    fn heavy_pipeline_takes_the_fastest_workers() {
        // Workers cut a 0.4 s batch to 0.1 s; persistent ones also skip the 1 s restart.
        let r = recommend(&[
            (0, false, 0.4, 0.4),
            (2, false, 0.5, 0.2),
            (4, false, 1.1, 0.1),
            (4, true, 1.1, 0.1),
        ]);
        assert_eq!(r.outcome, Outcome::Faster);
        assert_eq!(r.label.as_deref(), Some("nw=4 persistent"));
        assert_eq!(r.baseline_label.as_deref(), Some("nw=0"));
        assert_eq!(r.group, "synthetic · light · loaderbench");
        // nw=0: 4.4 s an epoch; nw=4 persistent: 1.1 s after a 2.1 s first epoch.
        let projected = r.projected_s.unwrap();
        assert!((projected.median - (2.1 + 49.0 * 1.1)).abs() < 1e-9);
        assert!(
            r.text.starts_with(
                "Use nw=4 persistent. Over 50 epochs it projects to 56.0 s: 1.10 s per epoch \
                 after a first epoch of 2.10 s"
            ),
            "{}",
            r.text
        );
        assert!(
            r.text
                .contains("3.9× as fast as nw=0 (4.40 s per epoch) beyond the noise."),
            "{}",
            r.text
        );
        assert!(
            r.text
                .contains("peaks at 400.0 MiB of memory (+200.0 MiB against nw=0)"),
            "{}",
            r.text
        );
        assert!(
            r.text.ends_with(
                "Verdict: nw=4 persistent is fastest: 87% faster than nw=4, the next, beyond \
                 this machine's noise (±0.0%)."
            ),
            "{}",
            r.text
        );
        assert_eq!(r.verdict.kind, VerdictKind::Fastest);
        assert!(r.verdict.hinges_on.is_empty());
    }

    #[test]
    fn the_text_names_the_config_that_put_the_baseline_out_when_the_tie_rule_picks_another() {
        // Five rounds: nw=4 beats nw=0 by 17% in every round; nw=2 scatters around 14%
        // faster than nw=0 (±14%), so it neither beats nw=0 nor is beaten by nw=4 (3%
        // slower, within the margin); the tie rule takes nw=2, which must not be said to
        // beat nw=0 itself.
        let configs = vec![config(0, false), config(2, false), config(4, false)];
        let mut results = rounds(0, &configs[0], &[1.0; 5]);
        results.extend(rounds(1, &configs[1], &[0.80, 1.0, 0.78, 0.95, 0.88]));
        results.extend(rounds(2, &configs[2], &[0.85, 0.86, 0.84, 0.85, 0.86]));
        let r = only(&result(configs, results));
        assert_eq!(r.outcome, Outcome::Faster);
        assert_eq!(r.label.as_deref(), Some("nw=2"), "{}", r.text);
        assert!(
            r.text.contains(
                "1.1× as fast as nw=0 (1.00 s per epoch), which nw=4 beats beyond the noise."
            ),
            "{}",
            r.text
        );
        assert_eq!(r.verdict.kind, VerdictKind::NotResolved, "{}", r.text);
        assert_eq!(r.verdict.hinges_on, [1, 2]);
    }

    #[test]
    fn light_pipeline_where_workers_do_not_pay_keeps_no_workers() {
        // Every config runs at about 0.1 s a batch; workers only add start-up.
        let r = recommend(&[
            (0, false, 0.1, 0.1),
            (2, false, 0.3, 0.1),
            (4, true, 0.3, 0.098),
        ]);
        assert_eq!(r.outcome, Outcome::NoneFaster);
        assert_eq!(r.label.as_deref(), Some("nw=0"));
        assert!(
            r.text
                .contains("no config with workers was faster beyond the noise."),
            "{}",
            r.text
        );
        // nw=2 restarts its workers every epoch: 18% slower. nw=4 persistent is 2% faster
        // than nw=0 over 50 epochs, within the tie margin.
        assert_eq!(r.equally_fast, ["nw=4 persistent"]);
        assert!(
            r.text.contains(
                "nw=4 persistent is not shown slower beyond the noise by more than the tie \
                 margin; nw=0 is picked by the tie"
            ),
            "{}",
            r.text
        );
        assert_eq!(r.verdict.kind, VerdictKind::EquallyFast);
        assert!(
            r.verdict.text.starts_with(
                "nw=0 and nw=4 persistent are equally fast: within ±5.0%, measured to ±0.0%"
            ),
            "{}",
            r.verdict.text
        );
    }

    #[test]
    fn equally_fast_configs_resolve_to_fewer_workers() {
        let r = recommend(&[
            (0, false, 0.4, 0.4),
            (4, true, 0.5, 0.101),
            (8, true, 0.5, 0.1),
        ]);
        assert_eq!(r.label.as_deref(), Some("nw=4 persistent"));
        assert_eq!(r.equally_fast, vec!["nw=8 persistent".to_owned()]);
    }

    #[test]
    fn overlapping_intervals_are_noise_and_disjoint_ones_are_not() {
        let configs = vec![config(0, false), config(2, false)];
        // nw=2 is 10% faster by the median, but its repeats scatter over nw=0's.
        let mut noisy = repeats(0, &configs[0], &[1.0, 1.02, 0.98, 1.01, 0.99]);
        noisy.extend(repeats(1, &configs[1], &[0.9, 1.05, 0.8, 1.0, 0.85]));
        let r = only(&result(configs.clone(), noisy));
        assert_eq!(r.outcome, Outcome::NoneFaster, "{}", r.text);
        assert_eq!(r.label.as_deref(), Some("nw=0"));
        assert_eq!(r.samples, 5);
        assert!(r.text.contains("(95% interval "), "{}", r.text);
        assert!(!r.text.contains("one sample"), "{}", r.text);
        // The same medians with tight repeats: nw=2 wins beyond the noise.
        let mut tight = repeats(0, &configs[0], &[1.0, 1.01, 0.99, 1.0, 1.0]);
        tight.extend(repeats(1, &configs[1], &[0.9, 0.91, 0.89, 0.9, 0.9]));
        let r = only(&result(configs, tight));
        assert_eq!(r.outcome, Outcome::Faster, "{}", r.text);
        assert_eq!(r.label.as_deref(), Some("nw=2"));
        assert!(
            r.text
                .contains("1.1× as fast as nw=0 (1.00 s per epoch) beyond the noise."),
            "{}",
            r.text
        );
    }

    /// Repeats of one config numbered as rounds: repeat `r` takes `seconds[r]`.
    fn rounds(index: usize, config: &Config, seconds: &[f64]) -> Vec<ConfigResult> {
        let mut runs = repeats(index, config, seconds);
        for (round, run) in runs.iter_mut().enumerate() {
            run.repeat = round;
        }
        runs
    }

    #[test]
    fn configs_are_compared_round_by_round_so_drift_between_rounds_cancels() {
        let configs = vec![config(0, false), config(2, false)];
        // Whole rounds run up to 40% slow, and nw=2 is 10% faster than nw=0 in each:
        // their own intervals overlap, the per-round ratio does not reach 1.
        let drift = [1.0, 1.4, 1.1, 0.9, 1.3];
        let slow = drift.to_vec();
        let fast: Vec<f64> = drift.iter().map(|d| d * 0.9).collect();
        let mut drifting = rounds(0, &configs[0], &slow);
        drifting.extend(rounds(1, &configs[1], &fast));
        let nw0 = Estimate::of(&slow).unwrap();
        assert!(!nw0.differs_from(&Estimate::of(&fast).unwrap()));
        let r = only(&result(configs.clone(), drifting));
        assert_eq!(r.outcome, Outcome::Faster, "{}", r.text);
        assert_eq!(r.label.as_deref(), Some("nw=2"));
        // The same spread with no consistent difference between the two is noise.
        let mut shuffled = rounds(0, &configs[0], &slow);
        shuffled.extend(rounds(1, &configs[1], &[1.3, 0.9, 1.4, 1.0, 1.0]));
        let r = only(&result(configs, shuffled));
        assert_eq!(r.outcome, Outcome::NoneFaster, "{}", r.text);
        assert_eq!(r.label.as_deref(), Some("nw=0"));
    }

    /// Three questions (ranks 1, 2 and 4) of two rounds of two configs, nw=2 25% faster
    /// in each round but for a 1% wobble: alone, a question has one residual degree of
    /// freedom (t = 12.7) and its gain stays open; pooled, three (t = 3.2) resolve it.
    /// Questions of alike times on another runtime lend nothing.
    #[test]
    fn questions_of_two_rounds_pool_their_noise_on_one_runtime() {
        let first_question = |others_on: Runtime| -> Recommendation {
            let mut configs = Vec::new();
            let mut results = Vec::new();
            for ranks in [1, 2, 4] {
                for (workers, level, wobble) in [(0, 1.0, 0.01f64), (2, 0.8, -0.01)] {
                    let mut config = match others_on {
                        Runtime::Pytorch if ranks > 1 => pytorch(workers, false, StartMethod::Fork),
                        _ => config(workers, false),
                    };
                    config.ranks = ranks;
                    let seconds = [level * wobble.exp(), 1.1 * level * (-wobble).exp()];
                    results.extend(rounds(configs.len(), &config, &seconds));
                    configs.push(config);
                }
            }
            Analysis::of(&result(configs, results))
                .recommendations
                .remove(0)
        };
        let pooled = first_question(Runtime::Loaderbench);
        assert_eq!(pooled.verdict.kind, VerdictKind::Fastest, "{}", pooled.text);
        assert!(
            pooled
                .verdict
                .text
                .starts_with("nw=2 is fastest: 25% faster than nw=0")
                && pooled.verdict.text.ends_with(
                    "(the noise pooled with the run's questions of alike times on this runtime)"
                ),
            "{}",
            pooled.verdict.text
        );
        let alone = first_question(Runtime::Pytorch);
        assert_eq!(
            alone.verdict.kind,
            VerdictKind::NotResolved,
            "{}",
            alone.text
        );
        assert!(
            !alone.verdict.text.contains("pooled"),
            "{}",
            alone.verdict.text
        );
    }

    #[test]
    fn a_disturbed_config_leaves_the_question_undecided() {
        let configs = vec![config(0, false), config(2, false)];
        let mut results = repeats(0, &configs[0], &[1.0, 1.0, 1.0]);
        let mut busy = repeats(1, &configs[1], &[0.5, 0.5, 0.5]);
        // One disturbed round of three is set aside, and said so.
        busy[1].disturbed = true;
        busy[1].other_load_cores = Some(0.8);
        let mut some = results.clone();
        some.extend(busy.clone());
        let r = only(&result(configs.clone(), some));
        assert_eq!(r.label.as_deref(), Some("nw=2"), "{}", r.text);
        assert!(
            r.text
                .contains("Set aside as disturbed by other load: nw=2 (1 of 3)."),
            "{}",
            r.text
        );
        // Every round disturbed: no config is named, and the verdict hinges on it.
        for run in &mut busy {
            run.disturbed = true;
            run.other_load_cores = Some(0.8);
        }
        results.extend(busy);
        let r = only(&result(configs, results));
        assert_eq!(r.outcome, Outcome::Undecided);
        assert_eq!((r.config, r.snippet), (None, None));
        assert_eq!(r.verdict.hinges_on, [1]);
        assert_eq!(
            r.text,
            format!(
                "No config is named: nw=2 (0.80 cores of other load) ran while other work \
                 kept the machine busy, so a winner would rest on noise. To decide, {RERUN}. \
                 Verdict: not resolved: every measurement of nw=2 was disturbed by other \
                 load; measure them again on a quiet machine."
            )
        );
    }

    #[test]
    fn warm_and_cold_are_separate_questions_and_a_config_that_stayed_warm_answers_none() {
        let cold = |workers| Config {
            cache: Cache::Cold,
            ..config(workers, false)
        };
        let configs = vec![config(0, false), config(2, false), cold(0), cold(2)];
        let results: Vec<ConfigResult> = [(0, 1.0), (1, 0.99), (2, 3.0), (3, 1.5)]
            .into_iter()
            .flat_map(|(index, s)| repeats(index, &configs[index], &[s, s, s]))
            .collect();
        let all = Analysis::of(&result(configs.clone(), results.clone())).recommendations;
        let groups: Vec<&str> = all.iter().map(|r| r.group.as_str()).collect();
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert!(groups[0].ends_with(" · warm") && groups[1].ends_with(" · cold"));
        assert_eq!((all[0].config, all[1].config), (Some(0), Some(3)));

        let mut stayed = results;
        stayed[9].stayed_warm = Some("x.png: on tmpfs".to_owned());
        let all = Analysis::of(&result(configs, stayed)).recommendations;
        assert_eq!(all[0].config, Some(0), "the warm question stands");
        assert_eq!((all[1].outcome, all[1].config), (Outcome::Undecided, None));
        assert!(
            all[1].text.contains("nw=2 stayed warm (x.png: on tmpfs)"),
            "{}",
            all[1].text
        );
    }

    #[test]
    fn a_warm_config_that_read_from_storage_answers_no_warm_question() {
        let configs = vec![config(0, false), config(2, false)];
        let mut results: Vec<ConfigResult> = [(0, 1.0), (1, 0.5)]
            .into_iter()
            .flat_map(|(index, s)| repeats(index, &configs[index], &[s, s, s]))
            .collect();
        assert_eq!(
            Analysis::of(&result(configs.clone(), results.clone())).recommendations[0].config,
            Some(1),
            "held in memory, nw=2 answers"
        );
        results[4].partly_cold = Some("12.0 GB of files, 8.0 GB available".to_owned());
        let all = Analysis::of(&result(configs, results)).recommendations;
        assert_eq!((all[0].outcome, all[0].config), (Outcome::Undecided, None));
        assert!(
            all[0].text.contains(
                "nw=2 read part of its files from storage (12.0 GB of files, 8.0 GB available)"
            ),
            "{}",
            all[0].text
        );
    }

    /// nw=0, its `pin_memory` twin ("nw=0 pin") and nw=2, measured as `measure` gives
    /// them the plain config and the pinned one.
    fn with_pin_twin(measure: impl FnOnce(Config, Config) -> Vec<ConfigResult>) -> RunResult {
        let plain = config(0, false);
        let pinned = Config {
            pin_memory: true,
            ..plain.clone()
        };
        let configs = vec![plain.clone(), pinned.clone(), config(2, false)];
        let mut r = result(configs, measure(plain, pinned));
        r.labels[1] = "nw=0 pin".to_owned();
        r
    }

    #[test]
    fn pin_memory_without_effect_is_the_same_config() {
        // seed-light-pytorch's trap: nw=0 ran first and paid the process's warm-up, so
        // nw=0 pin (a no-op without CUDA) looked 6× as fast.
        let mut r = with_pin_twin(|plain, pinned| {
            three_rounds(vec![
                run(0, plain, two_epochs(0.6, 0.06, 11)),
                run(1, pinned, two_epochs(0.1, 0.01, 11)),
                measured(2, 2, false, 0.5, 0.1),
            ])
        });
        let rec = only(&r);
        assert_eq!(rec.label.as_deref(), Some("nw=0"));
        assert_eq!(rec.config, Some(0));
        assert_eq!(rec.outcome, Outcome::NoneFaster, "{}", rec.text);
        assert!(
            rec.text
                .contains("pin_memory had no effect (no CUDA), so these count as one config: nw=0 pin as nw=0."),
            "{}",
            rec.text
        );
        // With CUDA pinning is real work, and the pinned config stands on its own.
        for run in &mut r.results {
            run.pin_memory_effective = run.config.pin_memory;
        }
        let rec = only(&r);
        assert_eq!(rec.label.as_deref(), Some("nw=0 pin"));
        assert!(!rec.text.contains("no effect"), "{}", rec.text);
    }

    #[test]
    fn a_folded_twin_measured_in_the_same_round_is_not_a_round_of_its_own() {
        // seed-light with one repeat said "not resolved after 2 rounds: one round shows
        // nothing of this machine's noise": nw=0 held its pin twin's measurement too.
        let r = with_pin_twin(|plain, pinned| {
            vec![
                run(0, plain, two_epochs(0.6, 0.5, 11)),
                run(1, pinned, two_epochs(0.6, 0.5, 11)),
                measured(2, 2, false, 0.5, 0.4),
            ]
        });
        let rec = only(&r);
        assert!(
            rec.verdict.text.starts_with("not resolved after 1 round (")
                && rec.verdict.text.contains("one round shows nothing"),
            "{}",
            rec.verdict.text
        );
    }

    #[test]
    fn a_copy_pools_its_repeats_with_the_original() {
        let original = config(0, false);
        let copy = Config {
            copy: 1,
            ..original.clone()
        };
        let mut results = repeats(0, &original, &[1.0, 1.0]);
        results.extend(repeats(1, &copy, &[1.1, 1.1]));
        let mut r = result(vec![original, copy], results);
        r.labels[1] = "nw=0 copy 1".to_owned();
        let rec = only(&r);
        assert_eq!(rec.label.as_deref(), Some("nw=0"));
        assert_eq!(rec.samples, 4, "the copy's repeats count as the original's");
        assert!(
            rec.equally_fast.is_empty() && !rec.text.contains("copy"),
            "{}",
            rec.text
        );
    }

    fn pytorch(workers: usize, persistent: bool, start_method: StartMethod) -> Config {
        Config {
            runtime: Runtime::Pytorch,
            worker_kind: WorkerKind::Auto,
            start_method,
            batch_size: 256,
            ..config(workers, persistent)
        }
    }

    /// The recommendations for four configs over two questions: ours at nw=0 and nw=4
    /// persistent (nw=4 the faster), then config 2 (its batches every `batch_s`, the
    /// other question's faster) and config 3.
    fn two_questions(configs: Vec<Config>, batch_s: f64) -> Vec<Recommendation> {
        let results = vec![
            measured(0, 0, false, 0.4, 0.4),
            measured(1, 4, true, 0.2, 0.1),
            run(2, configs[2].clone(), vec![epoch(1, 0.1, batch_s, 11)]),
            run(3, configs[3].clone(), vec![epoch(1, 2.0, 0.5, 11)]),
        ];
        Analysis::of(&result(configs, three_rounds(results))).recommendations
    }

    /// Each recommendation's question and pick.
    fn groups(all: &[Recommendation]) -> Vec<(&str, Option<usize>)> {
        all.iter().map(|r| (r.group.as_str(), r.config)).collect()
    }

    #[test]
    fn each_runtime_is_its_own_question() {
        let configs = vec![
            config(0, false),
            config(4, true),
            pytorch(0, false, StartMethod::Fork),
            pytorch(4, true, StartMethod::Spawn),
        ];
        let all = two_questions(configs, 0.1);
        assert_eq!(
            groups(&all),
            [
                ("synthetic · light · loaderbench", Some(1)),
                ("synthetic · light · pytorch", Some(2)),
            ],
            "the PyTorch question is answered among PyTorch configs, though ours were faster"
        );
        assert!(
            all[0]
                .snippet
                .as_ref()
                .unwrap()
                .contains("runtime: [loaderbench],")
        );
        assert!(all[1].snippet.as_ref().unwrap().contains("DataLoader("));
    }

    #[test]
    fn each_ranks_value_is_its_own_question() {
        let mut two_ranks = config(0, false);
        two_ranks.ranks = 2;
        let mut two_ranks_workers = config(4, true);
        two_ranks_workers.ranks = 2;
        let configs = vec![
            config(0, false),
            config(4, true),
            two_ranks,
            two_ranks_workers,
        ];
        assert_eq!(
            groups(&two_questions(configs, 0.01)),
            [
                ("synthetic · light · loaderbench · 1 rank", Some(1)),
                ("synthetic · light · loaderbench · 2 ranks", Some(2)),
            ]
        );
    }

    #[test]
    fn pytorch_snippet_passes_only_what_the_worker_count_allows() {
        let r = result(vec![], vec![]);
        let seeded = "generator = torch.Generator()\ngenerator.manual_seed(0)  # the run's \
                      seed: the order that was measured\n";
        let seed_transforms = "\ntorch.manual_seed(0)  # as measured: the same random transforms";
        assert_eq!(
            snippet(&r, &pytorch(4, true, StartMethod::Spawn), None),
            format!(
                "import torch\nfrom torch.utils.data import DataLoader\n{seeded}loader = \
                 DataLoader(dataset, batch_size=256, num_workers=4, persistent_workers=True, \
                 prefetch_factor=2, pin_memory=False, multiprocessing_context=\"spawn\", \
                 timeout=60, shuffle=True, generator=generator){seed_transforms}"
            )
        );
        // PyTorch refuses prefetch_factor, a multiprocessing context and a timeout
        // without workers.
        assert_eq!(
            snippet(&r, &pytorch(0, false, StartMethod::Fork), Some(2)),
            format!(
                "import torch\ntorch.set_num_threads(2)\nfrom torch.utils.data import \
                 DataLoader\n{seeded}loader = DataLoader(dataset, batch_size=256, \
                 num_workers=0, pin_memory=False, shuffle=True, \
                 generator=generator){seed_transforms}"
            )
        );
    }

    #[test]
    fn a_ranked_pytorch_snippet_loads_through_a_distributed_sampler() {
        let r = result(vec![], vec![]);
        let mut ranked = pytorch(2, false, StartMethod::Fork);
        ranked.ranks = 4;
        let code = snippet(&r, &ranked, None);
        assert!(
            code.contains(
                "sampler = DistributedSampler(dataset, shuffle=True, seed=0, drop_last=False)\n"
            ),
            "{code}"
        );
        assert!(code.contains("each of the 4 ranks"), "{code}");
        assert!(
            code.contains(
                "loader = DataLoader(dataset, batch_size=256, num_workers=2, \
                 persistent_workers=False, prefetch_factor=2, pin_memory=False, \
                 multiprocessing_context=\"fork\", timeout=60, sampler=sampler)\n"
            ),
            "{code}"
        );
    }

    #[test]
    fn intra_op_threads_appear_only_where_they_were_swept() {
        let configs = vec![
            pytorch(0, false, StartMethod::Fork),
            pytorch(2, false, StartMethod::Fork),
        ];
        let mut results = vec![
            run(0, configs[0].clone(), vec![epoch(1, 0.1, 0.1, 11)]),
            run(1, configs[1].clone(), vec![epoch(1, 0.5, 0.1, 11)]),
        ];
        let r = only(&result(configs.clone(), results.clone()));
        assert!(!r.snippet.unwrap().contains("set_num_threads"));
        results[0].intra_op_threads = 4;
        let r = only(&result(configs.clone(), results.clone()));
        assert!(
            r.snippet
                .unwrap()
                .starts_with("import torch\ntorch.set_num_threads(4)\n")
        );
        // A count the preset set is part of the config, swept or not.
        let mut set = configs[0].clone();
        set.intra_op_threads = IntraOpThreads::Count(3);
        results[0].config = set.clone();
        results[0].intra_op_threads = 3;
        results[1].intra_op_threads = 3;
        let r = only(&result(vec![set, configs[1].clone()], results));
        assert!(r.snippet.unwrap().contains("torch.set_num_threads(3)\n"));
    }

    /// Pasted, the lines measure the config: they name every knob it uses, and leave out
    /// those it does not (a config without workers, our engine's thread workers'
    /// transfers), whatever values the run gave them.
    #[test]
    fn preset_lines_measure_exactly_the_recommended_config() {
        use loaderbench_engine::preset::{DatasetTransfer, WorkerKind};
        let mut threads = config(4, true);
        threads.batch_size = 128;
        threads.intra_op_threads = IntraOpThreads::Count(2);
        threads.in_order = false;
        let forked = Config {
            worker_kind: WorkerKind::Fork,
            dataset_transfer: DatasetTransfer::Copy,
            ..config(2, false)
        };
        // Settled to a sweep's first prefetch depth, which no config without workers uses.
        let none = Config {
            prefetch_factor: 1,
            ..config(0, false)
        };
        let mut r = result(vec![], vec![]);
        r.drop_last = true;
        for (chosen, left_out) in [
            (
                threads,
                &["start_method", "dataset_transfer", "batch_transfer"][..],
            ),
            (forked, &["start_method"][..]),
            (
                none,
                &[
                    "start_method",
                    "worker_kind",
                    "dataset_transfer",
                    "batch_transfer",
                    "persistent_workers",
                    "prefetch_factor",
                    "in_order",
                ][..],
            ),
        ] {
            let lines = snippet(&r, &chosen, None);
            let text = format!("(version: 1, name: \"pasted\",\n{lines}\n)");
            let preset = Preset::from_ron(&text, std::path::Path::new("pasted.ron"))
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert!(preset.drop_last && preset.shuffle);
            let plan = Plan::from_preset(&preset, None).unwrap();
            assert_eq!(plan.configs.len(), 1, "{lines}");
            for knob in KNOBS.iter().filter(|knob| chosen.uses_knob(knob.field)) {
                let value = knob.value;
                assert_eq!(value(&plan.configs[0]), value(&chosen), "{lines}");
            }
            for knob in &KNOBS {
                let listed = lines.contains(&format!("\n{}: [", knob.field));
                assert_eq!(
                    listed,
                    !left_out.contains(&knob.field),
                    "{}: {lines}",
                    knob.field
                );
            }
        }
    }
}
