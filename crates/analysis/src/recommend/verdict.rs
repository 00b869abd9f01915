//! The verdict: whether the measurements resolve a question, in one of three sentences.
//! The pick is fastest (faster than the next by more than the tie margin, beyond the
//! noise); or the best set is equally fast (every member within the tie margin of the
//! pick, beyond the noise), and the tie rule picked; or the question is not resolved yet:
//! some config could still beat the pick, or tie with it, and more rounds would say
//! which; the verdict then says about how many more rounds, as the measurements stand,
//! and how long to measure on for them, from what measuring its configs took, or, where
//! the difference measured lies within its standard error of the tie margin, that it
//! sits there and what taking the pick may cost. The verdict lists the configs the
//! decision hinges on (the pick and every config still open against it), which `run
//! --recommend`, the app and tune go on measuring.

use serde::{Deserialize, Serialize};

use super::Candidate;
use super::candidates::Effort;
use super::measuring_cost::{ROUNDS_TO_SHOW_THE_NOISE, measure_longer, resolve_for};
use super::noise::{Difference, NoiseSource, Relation, Settling};
use super::tie::{Question, TIE_RULE};
use crate::{and_list, percent};

/// Whether a question is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// The pick is faster than every other config beyond the tie margin and the noise.
    Fastest,
    /// The best set's configs are within the tie margin of each other, beyond the noise.
    EquallyFast,
    /// Some config could still beat the pick or tie with it.
    NotResolved,
}

/// The verdict of one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// One sentence with the figures.
    pub text: String,
    /// The configs the decision still hinges on (plan indices): the pick, then every
    /// config open against it, those that look fastest against it first; empty when
    /// resolved.
    #[serde(default)]
    pub hinges_on: Vec<usize>,
    /// Every comparison the decision is open on sits at the tie margin
    /// ([`Settling::AtTheMargin`]): more rounds may never settle it, so resolve and tune
    /// measure the other open questions first ([`time_share`](crate::time_share)).
    /// Computed from the measurements, never saved.
    #[serde(skip)]
    pub may_never_settle: bool,
    /// How long the verdict asks to measure on (its `--resolve-for`, in seconds), where
    /// it asks; the app offers it as the budget of Measure further. Computed from the
    /// measurements, never saved.
    #[serde(skip)]
    pub measure_for_s: Option<f64>,
}

impl Verdict {
    /// This verdict where the run ended before `unmeasured` (configs of the question)
    /// were measured: nothing is resolved while they might be faster, and the decision
    /// hinges on them too, so resolving measures them, for about what a round of the
    /// configs it hinges on takes (`cost_s` of each). `pick` is the config named, if any.
    pub(super) fn unless_unmeasured(
        self,
        unmeasured: &[usize],
        labels: &[String],
        pick: Option<&Candidate<'_>>,
        cost_s: &dyn Fn(usize) -> f64,
    ) -> Verdict {
        if unmeasured.is_empty() {
            return self;
        }
        let names: Vec<&str> = unmeasured
            .iter()
            .filter_map(|&i| labels.get(i).map(String::as_str))
            .collect();
        let (were, them) = match names.len() {
            1 => ("was", "it"),
            _ => ("were", "them"),
        };
        let names = and_list(&names);
        let mut hinges_on = self.hinges_on;
        if let Some(pick) = pick
            && hinges_on.is_empty()
        {
            hinges_on.push(pick.index);
        }
        hinges_on.extend_from_slice(unmeasured);
        let round_s: f64 = hinges_on.iter().map(|&i| cost_s(i)).sum();
        let (limit, limit_s) = resolve_for(round_s);
        let resolve = format!("`loaderbench resolve --resolve-for {limit}`");
        let text = match pick {
            // Resolved over what was measured: the configs left out are what keeps it open.
            Some(pick) if self.kind != VerdictKind::NotResolved => {
                format!(
                    "not resolved: {names} {were} not measured (the run ended before {them}); \
                     {resolve} measures {them}, or take {}",
                    pick.label
                )
            }
            // Open already: what was measured says why, and the configs left out add to it.
            Some(_) | None => format!(
                "{}; {names} {were} not measured (the run ended before {them}), and \
                 {resolve} measures {them}",
                self.text
            ),
        };
        Verdict {
            kind: VerdictKind::NotResolved,
            text,
            hinges_on,
            may_never_settle: false,
            measure_for_s: Some(self.measure_for_s.unwrap_or(0.0).max(limit_s)),
        }
    }

    /// The verdict of a question that names no config, for `reason`; measuring
    /// `hinges_on` again may let it name one.
    pub(super) fn none_named(reason: &str, hinges_on: Vec<usize>) -> Verdict {
        Verdict {
            kind: VerdictKind::NotResolved,
            text: format!("not resolved: {reason}"),
            hinges_on,
            may_never_settle: false,
            measure_for_s: None,
        }
    }
}

/// The verdict on `chosen`, the tie rule's pick of `best`, `after` measuring the
/// question for that long; measuring config `i` once more takes about `cost_s(i)`.
pub(super) fn verdict(
    question: &Question<'_, '_>,
    best: &[&Candidate<'_>],
    chosen: &Candidate<'_>,
    after: Effort,
    cost_s: &dyn Fn(usize) -> f64,
) -> Verdict {
    let others: Vec<&Candidate<'_>> = question
        .candidates
        .iter()
        .filter(|c| c.index != chosen.index)
        .collect();
    if others.is_empty() {
        let fits = if question.too_big > 0 {
            " that fits the memory limit"
        } else {
            ""
        };
        return Verdict {
            kind: VerdictKind::Fastest,
            text: format!("{} is the only config of this question{fits}", chosen.label),
            hinges_on: Vec::new(),
            may_never_settle: false,
            measure_for_s: None,
        };
    }
    let compared: Vec<(&Candidate<'_>, Option<Difference>)> = others
        .iter()
        .map(|c| (*c, question.compare(chosen, c)))
        .collect();
    // Open against the pick: a config that does not tie with it, of the best set or out
    // of it with an interval that still reaches inside the margin.
    let open: Vec<(&Candidate<'_>, Option<Difference>)> = compared
        .iter()
        .copied()
        .filter(|(c, d)| !question.settled_out(c) && d.is_none_or(|d| d.relation != Relation::Tie))
        .collect();
    let margin = question.noise.tie_margin();
    if open.is_empty() && best.len() == 1 {
        let (next, d) = compared
            .iter()
            .filter_map(|(c, d)| Some((*c, (*d)?)))
            .min_by(|a, b| a.1.gain.total_cmp(&b.1.gain))
            .map_or((others[0], None), |(c, d)| (c, Some(d)));
        let text = match d {
            Some(d) => format!(
                "{} is fastest: {} faster than {}, the next, beyond this machine's noise \
                 ({})",
                chosen.label,
                percent(d.gain),
                next.label,
                plus_minus(d.gain, d.plus_minus)
            ),
            None => format!("{} is fastest", chosen.label),
        };
        return Verdict {
            kind: VerdictKind::Fastest,
            text: with_source(text, question),
            hinges_on: Vec::new(),
            may_never_settle: false,
            measure_for_s: None,
        };
    }
    if open.is_empty() {
        let names: Vec<&str> = std::iter::once(chosen.label)
            .chain(
                best.iter()
                    .filter(|c| c.index != chosen.index)
                    .map(|c| c.label),
            )
            .collect();
        let measured_to = compared
            .iter()
            .filter(|(c, _)| best.iter().any(|b| b.index == c.index))
            .filter_map(|(_, d)| d.map(|d| d.plus_minus))
            .fold(0.0, f64::max);
        return Verdict {
            kind: VerdictKind::EquallyFast,
            text: with_source(
                format!(
                    "{} are equally fast: within ±{}, measured to ±{}; {} is picked by the \
                     tie rule ({TIE_RULE})",
                    and_list(&names),
                    percent(margin),
                    percent(measured_to),
                    chosen.label
                ),
                question,
            ),
            hinges_on: Vec::new(),
            may_never_settle: false,
            measure_for_s: None,
        };
    }
    // The pick, then the configs most likely to change the decision: those that look
    // fastest against it first (a round that cannot fit them all measures these).
    let mut challengers = open.clone();
    challengers.sort_by(|a, b| {
        let gain = |d: &Option<Difference>| d.map_or(f64::NEG_INFINITY, |d| -d.gain);
        gain(&b.1)
            .total_cmp(&gain(&a.1))
            .then(a.0.index.cmp(&b.0.index))
    });
    let mut hinges_on = vec![chosen.index];
    hinges_on.extend(challengers.iter().map(|(c, _)| c.index));
    let may_never_settle = open
        .iter()
        .all(|(c, _)| question.settling(chosen, c) == Some(Settling::AtTheMargin));
    let round_s: f64 = hinges_on.iter().map(|&i| cost_s(i)).sum();
    let mut measure_for_s = None;
    let mut longer = |rounds: usize| {
        let (text, limit_s) = measure_longer(round_s, rounds);
        measure_for_s = Some(limit_s);
        text
    };
    let text = if !question.noise.known() {
        // What was measured, though nothing says how far to trust it: the config that
        // looks fastest, where it is not the pick.
        let fastest = open
            .iter()
            .map(|(c, _)| *c)
            .min_by(|a, b| a.projected_s.median.total_cmp(&b.projected_s.median))
            .filter(|c| c.projected_s.median < chosen.projected_s.median);
        let looks = fastest.map_or_else(String::new, |fastest| {
            format!(
                "{} looks {} faster than {}, but ",
                fastest.label,
                percent(chosen.projected_s.median / fastest.projected_s.median - 1.0),
                chosen.label
            )
        });
        // Rounds in which the configs were measured apart show no more than one does.
        let nothing = if after.rounds > 1 {
            "no two configs shared two rounds, so nothing shows this machine's noise yet"
        } else {
            "one round shows nothing of this machine's noise"
        };
        format!(
            "not resolved after {after}: {looks}{nothing}; {} or take {}",
            longer(ROUNDS_TO_SHOW_THE_NOISE),
            chosen.label
        )
    } else {
        // The widest-open comparison: the one furthest from the pick.
        let (other, d) = open
            .iter()
            .filter_map(|(c, d)| Some((*c, (*d)?)))
            .max_by(|a, b| a.1.gain.abs().total_cmp(&b.1.gain.abs()))
            .unwrap_or((open[0].0, no_difference()));
        let (faster, slower, gain) = if d.gain <= 0.0 {
            (other.label, chosen.label, 1.0 / (1.0 + d.gain) - 1.0)
        } else {
            (chosen.label, other.label, d.gain)
        };
        let at_the_margin = question.settling(chosen, other) == Some(Settling::AtTheMargin);
        // More rounds: the most any comparison still open needs, where each has a count.
        let more: Option<usize> = open
            .iter()
            .map(|(c, _)| match question.settling(chosen, c) {
                Some(Settling::Within(more)) => Some(more),
                _ => None,
            })
            .try_fold(0, |most, more| Some(most.max(more?)));
        let advice = if at_the_margin {
            let cost = if slower == chosen.label {
                format!(
                    ", at most {} slower than {faster}",
                    percent((1.0 + gain) * d.plus_minus.exp() - 1.0)
                )
            } else {
                String::new()
            };
            format!(
                "more rounds may never tell a tie from a gain: take {}{cost}",
                chosen.label
            )
        } else if let Some(more) = more {
            format!(
                "about {more} more {} would settle it as it stands: {} or take {}",
                if more == 1 { "round" } else { "rounds" },
                longer(more),
                chosen.label
            )
        } else {
            format!(
                "{} or take {}",
                longer(ROUNDS_TO_SHOW_THE_NOISE),
                chosen.label
            )
        };
        format!(
            "not resolved after {after}: {faster} looks {} faster than {slower}{}{}; {advice}",
            percent(gain),
            if wide(d.plus_minus) {
                format!(" ({})", plus_minus(gain, d.plus_minus))
            } else {
                format!(", {}", plus_minus(gain, d.plus_minus))
            },
            if at_the_margin {
                format!(", at the tie margin ({})", percent(margin))
            } else if (1.0 + gain) * (-d.plus_minus).exp() > 1.0 {
                // Faster beyond the noise: what is open is whether by the margin.
                format!(
                    ": beyond the noise, but perhaps not by the tie margin ({})",
                    percent(margin)
                )
            } else {
                String::new()
            },
        )
    };
    Verdict {
        kind: VerdictKind::NotResolved,
        text: with_source(text, question),
        hinges_on,
        may_never_settle,
        measure_for_s,
    }
}

fn no_difference() -> Difference {
    Difference {
        gain: 0.0,
        plus_minus: f64::INFINITY,
        relation: Relation::Open,
        ahead: false,
    }
}

/// Says where the noise came from when an A/A check set it, or the run's alike questions
/// lent theirs.
fn with_source(text: String, question: &Question<'_, '_>) -> String {
    match question.noise.source() {
        Some(NoiseSource::AaCheck) => format!("{text} (the noise is the A/A check's)"),
        Some(NoiseSource::PooledRounds) => format!(
            "{text} (the noise pooled with the run's questions of alike times on this runtime)"
        ),
        _ => text,
    }
}

/// Log half-widths beyond this are given as the interval's ends: `±68%` beside a 70% gain
/// reads as "at least 2% faster", where the interval runs from 16% slower to 236% faster.
const WIDE_HALF_WIDTH: f64 = 0.2;

/// A gain's 95% interval from its log half-width `half`: `±4.0%`, or where that is wide,
/// its ends (`95% interval: 16% slower to 236% faster`).
fn plus_minus(gain: f64, half: f64) -> String {
    if !wide(half) {
        return format!("±{}", percent(half));
    }
    let ratio = 1.0 + gain;
    let (low, high) = (ratio * (-half).exp(), ratio * half.exp());
    let end = |r: f64| {
        if r < 1.0 {
            format!("{} slower", percent(1.0 / r - 1.0))
        } else {
            format!("{} faster", percent(r - 1.0))
        }
    };
    format!("95% interval: {} to {}", end(low), end(high))
}

/// True when a log half-width is given by the interval's ends.
fn wide(half: f64) -> bool {
    half.is_finite() && half > WIDE_HALF_WIDTH
}

#[cfg(test)]
mod tests {
    use super::super::super::Analysis;
    use super::super::Recommendation;
    use super::*;
    use loaderbench_engine::plan::Config;
    use loaderbench_measure::fixtures::{config, result, run, two_epochs};
    use loaderbench_measure::results::{ConfigResult, RunResult, RunStatus};

    /// Recorded rounds of nw=0 (1 s an epoch) and nw=2, whose time in round `r` is
    /// nw=0's over `exp(log_gain + scatter[r])`: a gain of `exp(log_gain) - 1` whose
    /// per-round ratios scatter by `scatter`.
    fn measured(log_gain: f64, scatter: &[f64]) -> Recommendation {
        let configs = vec![config(0, false), config(2, false)];
        let mut all = Analysis::of(&recorded(configs, log_gain, scatter)).recommendations;
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    /// The rounds [`measured`] analyses, of the first two of `configs` (the rest never
    /// measured).
    fn recorded(configs: Vec<Config>, log_gain: f64, scatter: &[f64]) -> RunResult {
        let drift = [1.0, 1.3, 0.9, 1.1, 1.0, 1.2];
        let mut results: Vec<ConfigResult> = Vec::new();
        for (round, s) in scatter.iter().enumerate() {
            for (index, seconds) in [(0, drift[round]), (1, drift[round] / (log_gain + s).exp())] {
                let mut r = run(
                    index,
                    configs[index].clone(),
                    two_epochs(seconds, seconds, 1),
                );
                r.repeat = round;
                results.push(r);
            }
        }
        result(configs, results)
    }

    /// Five rounds whose ratios scatter with a standard deviation of `sd`: the 95%
    /// interval's half-width is `2.776 * sd / sqrt(5)`.
    fn scatter(sd: f64) -> [f64; 5] {
        [sd, -sd, sd, -sd, 0.0]
    }

    /// The standard deviation that gives a half-width of `plus_minus` over five rounds.
    fn sd_for(plus_minus: f64) -> f64 {
        plus_minus * 5f64.sqrt() / 2.776
    }

    /// What the verdicts ask for where a round takes `round` and settling it `limit`.
    fn longer(round: &str, limit: &str) -> String {
        format!(
            "measure longer (rounds of about {round}: `run --recommend --resolve-for {limit}`, \
             or `loaderbench resolve --resolve-for {limit}` on its journal)"
        )
    }

    /// Asserts the recommendation's pick and its verdict's kind.
    fn assert_pick(r: &Recommendation, label: &str, kind: VerdictKind) {
        assert_eq!(r.label.as_deref(), Some(label), "{}", r.text);
        assert_eq!(r.verdict.kind, kind, "{}", r.verdict.text);
    }

    /// nw=2 12% faster than nw=0 over five rounds, to ±`plus_minus`; nw=4 never
    /// measured: the run was cancelled (or its journal cut) before it.
    fn cut_before_nw_4(plus_minus: f64) -> RunResult {
        let configs = vec![config(0, false), config(2, false), config(4, false)];
        let mut cut = recorded(configs, 1.12f64.ln(), &scatter(sd_for(plus_minus)));
        cut.status = RunStatus::Cancelled;
        cut
    }

    #[test]
    fn a_run_that_ended_before_a_config_was_measured_is_not_resolved_and_hinges_on_it() {
        // nw=2 is 12% faster than nw=0 to ±4%, as in the test below.
        let mut cut = cut_before_nw_4(0.04);
        assert_open_for_nw_4(&Analysis::of(&cut).recommendations.remove(0));
        // Finished, a run that measured every config it planned says what it measured.
        cut.status = RunStatus::Finished;
        let r = Analysis::of(&cut).recommendations.remove(0);
        assert_eq!(r.verdict.kind, VerdictKind::Fastest, "{}", r.verdict.text);
    }

    /// A tune whose budget ended before nw=4 (its fate "the search stopped first") is not
    /// resolved, and names it; nw=8, which its model predicted slow, is left out by
    /// design and not named. A 60 s tune of `seed-heavy-pytorch` measured one PyTorch
    /// config of eight, and its verdict read "nw=0 pytorch is the only config of this
    /// question".
    #[test]
    fn a_tune_stopped_before_a_config_is_not_resolved_but_names_none_its_model_left_out() {
        use loaderbench_measure::tune_trail::{Fate, TuneStop, TuneTrail, TunedConfig};
        let configs = vec![
            config(0, false),
            config(2, false),
            config(4, false),
            config(8, false),
        ];
        let mut tuned = recorded(configs, 1.12f64.ln(), &scatter(sd_for(0.04)));
        let fates = [
            Fate::Best,
            Fate::Best,
            Fate::stopped_first(),
            Fate::NotMeasured {
                reason: "predicted 3.0 s, 2.0× the best".to_owned(),
            },
        ];
        tuned.tune = Some(TuneTrail {
            budget_s: 60.0,
            used_s: 60.0,
            stop: TuneStop::Budget,
            anchors: vec![0, 1],
            rounds: 5,
            configs: (fates.into_iter().enumerate())
                .map(|(config, fate)| TunedConfig {
                    config,
                    predicted_s: None,
                    measured_s: None,
                    rounds: 0,
                    fate,
                })
                .collect(),
        });
        assert_open_for_nw_4(&Analysis::of(&tuned).recommendations.remove(0));
    }

    /// Asserts that nw=2, 12% faster than nw=0 to ±4%, is not resolved for want of nw=4.
    fn assert_open_for_nw_4(r: &Recommendation) {
        assert_pick(r, "nw=2", VerdictKind::NotResolved);
        assert_eq!(
            r.verdict.text,
            "not resolved: nw=4 was not measured (the run ended before it); `loaderbench \
             resolve --resolve-for 1m` measures it, or take nw=2"
        );
        assert_eq!(r.verdict.hinges_on, [1, 2]);
    }

    /// Open over what was measured too, a cut run's verdict keeps what that showed (which
    /// config looks faster, by how much) and adds the configs it never measured: a
    /// resolve's first round measured nw=2 pytorch 1.8× as fast as the pick, and the
    /// verdict had said only which configs were missing.
    #[test]
    fn a_cut_run_open_over_what_it_measured_says_both() {
        let r = Analysis::of(&cut_before_nw_4(0.15))
            .recommendations
            .remove(0);
        assert_pick(&r, "nw=0", VerdictKind::NotResolved);
        let text = &r.verdict.text;
        assert!(
            text.contains(": nw=2 looks 12% faster than nw=0, ±15%;"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "or take nw=0; nw=4 was not measured (the run ended before it), and \
                 `loaderbench resolve --resolve-for 1m` measures it"
            ),
            "{text}"
        );
        assert_eq!(r.verdict.hinges_on, [0, 1, 2]);
    }

    /// How much longer to measure is counted from what the configs the decision hinges
    /// on took, set-up and all: a job whose configs take 100 s each is told 37 minutes
    /// for 11 rounds of two, and a minute for resolving a config never measured would
    /// not measure it. "5 minutes" was said to every run, of 0.2 s epochs or of minutes.
    #[test]
    fn how_much_longer_to_measure_is_counted_from_what_the_configs_took() {
        let took_100_s = |mut result: RunResult| {
            for measured in &mut result.results {
                measured.took_s = Some(100.0);
            }
            result
        };
        let configs = vec![config(0, false), config(2, false)];
        let slow = took_100_s(recorded(configs, 1.12f64.ln(), &scatter(sd_for(0.15))));
        let r = Analysis::of(&slow).recommendations.remove(0);
        assert_pick(&r, "nw=0", VerdictKind::NotResolved);
        assert!(
            r.verdict.text.ends_with(&format!(
                "about 11 more rounds would settle it as it stands: {} or take nw=0",
                longer("3.3 minutes", "37m")
            )),
            "{}",
            r.verdict.text
        );
        assert_eq!(
            r.verdict.measure_for_s,
            Some(37.0 * 60.0),
            "what the app offers"
        );
        // A round of the pick and nw=4, which costs what its question's slowest took.
        let r = Analysis::of(&took_100_s(cut_before_nw_4(0.04)))
            .recommendations
            .remove(0);
        assert!(
            r.verdict
                .text
                .contains("`loaderbench resolve --resolve-for 4m` measures it"),
            "{}",
            r.verdict.text
        );
        assert_eq!(r.verdict.measure_for_s, Some(240.0));
        assert_eq!(resolve_for(0.2), ("1m".to_owned(), 60.0));
        assert_eq!(resolve_for(61.0), ("2m".to_owned(), 120.0));
        assert_eq!(resolve_for(7200.0), ("120m".to_owned(), 7200.0));
        assert_eq!(resolve_for(7201.0), ("3h".to_owned(), 10800.0));
    }

    #[test]
    fn a_12_percent_gain_measured_to_4_percent_is_named_a_gain() {
        let r = measured(1.12f64.ln(), &scatter(sd_for(0.04)));
        assert_pick(&r, "nw=2", VerdictKind::Fastest);
        assert_eq!(
            r.verdict.text,
            "nw=2 is fastest: 12% faster than nw=0, the next, beyond this machine's noise \
             (±4.0%)"
        );
        assert!(r.verdict.hinges_on.is_empty());
    }

    #[test]
    fn a_12_percent_gain_measured_to_15_percent_is_not_resolved() {
        let r = measured(1.12f64.ln(), &scatter(sd_for(0.15)));
        // The pick is the tie rule's among the configs nothing beats: the fewest workers.
        assert_pick(&r, "nw=0", VerdictKind::NotResolved);
        let text = &r.verdict.text;
        // After the rounds behind it, with the seconds they measured.
        assert!(text.starts_with("not resolved after 5 rounds ("), "{text}");
        assert!(text.contains(" s measured): "), "{text}");
        assert!(
            text.ends_with(&format!(
                ": nw=2 looks 12% faster than nw=0, ±15%; about 11 more rounds would settle it \
                 as it stands: {} or take nw=0",
                longer("3.8 s", "1m")
            )),
            "{text}"
        );
        assert_eq!(r.verdict.hinges_on, [0, 1]);
        assert!(
            r.snippet.is_some(),
            "the pick's snippet comes with every verdict"
        );
    }

    #[test]
    fn a_12_percent_gain_beyond_the_noise_but_not_yet_the_margin_moves_the_pick_unresolved() {
        // Faster in every round, by 12% ±10%: nw=0 lost beyond the noise, though the
        // interval still reaches inside the 5% margin. The pick is the config that won,
        // and the verdict still hinges on the one it beat.
        let r = measured(1.12f64.ln(), &scatter(sd_for(0.10)));
        assert_pick(&r, "nw=2", VerdictKind::NotResolved);
        assert!(r.equally_fast.is_empty(), "{}", r.text);
        assert!(
            r.verdict.text.ends_with(&format!(
                ": nw=2 looks 12% faster than nw=0, ±10.0%: beyond the noise, but perhaps \
                 not by the tie margin (5.0%); about 4 more rounds would settle it as it \
                 stands: {} or take nw=2",
                longer("3.8 s", "1m")
            )),
            "{}",
            r.verdict.text
        );
        assert_eq!(r.verdict.hinges_on, [1, 0]);
        assert!(
            r.text
                .contains("1.1× as fast as nw=0 (1.00 s per epoch) beyond the noise.")
        );
    }

    /// A difference of 4.8% ±2.4% against a 5% margin, over five rounds: the difference
    /// measured is a fifth of its standard error from the margin, so whether it is a tie
    /// or a gain is as good as unknown, and no count of rounds can be promised to tell.
    /// The verdict says so, and what taking the pick may cost, rather than only "measure
    /// longer".
    #[test]
    fn a_difference_at_the_tie_margin_is_said_to_be_there_with_what_the_pick_may_cost() {
        let r = measured(1.048f64.ln(), &scatter(sd_for(0.024)));
        assert_pick(&r, "nw=0", VerdictKind::NotResolved);
        assert!(
            r.verdict.text.ends_with(
                ": nw=2 looks 4.8% faster than nw=0, ±2.4%, at the tie margin (5.0%); more \
                 rounds may never tell a tie from a gain: take nw=0, at most 7.3% slower than \
                 nw=2"
            ),
            "{}",
            r.verdict.text
        );
        assert_eq!(r.verdict.hinges_on, [0, 1]);
        assert!(
            r.verdict.may_never_settle,
            "resolve and tune measure others first"
        );
    }

    /// One round: the pick is still the tie rule's (nothing is beaten beyond a noise
    /// nobody measured), and the verdict says what the round showed.
    #[test]
    fn one_round_says_what_looked_fastest_though_it_shows_no_noise() {
        let r = measured(1.56f64.ln(), &[0.0]);
        assert_pick(&r, "nw=0", VerdictKind::NotResolved);
        // Not "no config with workers was faster beyond the noise": none was measured.
        assert!(
            r.text.contains(
                " s; what was measured shows nothing of the noise, so no config can be \
                 shown faster beyond it. nw=2 is not shown slower"
            ),
            "{}",
            r.text
        );
        let text = &r.verdict.text;
        assert!(text.starts_with("not resolved after 1 round ("), "{text}");
        assert!(
            text.ends_with(&format!(
                "): nw=2 looks 56% faster than nw=0, but one round shows nothing of this \
                 machine's noise; {} or take nw=0",
                longer("3.3 s", "1m")
            )),
            "{text}"
        );
    }

    /// A tune's rounds: nw=0 measured in rounds 0 and 1, nw=2 only in round 0. Two
    /// rounds, but the second's drift takes all of what it measured: still no noise, and
    /// the verdict says why rather than "one round".
    #[test]
    fn rounds_in_which_no_two_configs_met_twice_show_no_noise_either() {
        let mut measured = recorded(vec![config(0, false), config(2, false)], 0.5, &[0.0, 0.0]);
        measured
            .results
            .retain(|r| r.repeat == 0 || r.config_index == 0);
        let r = Analysis::of(&measured).recommendations.remove(0);
        assert_pick(&r, "nw=0", VerdictKind::NotResolved);
        let text = &r.verdict.text;
        assert!(
            text.starts_with("not resolved after 2 rounds (")
                && text.contains(
                    "): nw=2 looks 90% faster than nw=0, but no two configs shared two rounds, \
                     so nothing shows this machine's noise yet;"
                ),
            "{text}"
        );
    }

    #[test]
    fn a_wide_interval_is_given_by_its_ends_not_as_plus_minus() {
        // 70% faster in every round but scattering by ±68% on the log scale: read as a
        // share, "±68%" would say at least 2% faster; the interval reaches 16% slower.
        let r = measured(1.7f64.ln(), &scatter(sd_for(0.68)));
        assert_pick(&r, "nw=0", VerdictKind::NotResolved);
        assert!(
            r.verdict.text.ends_with(&format!(
                ": nw=2 looks 70% faster than nw=0 (95% interval: 16% slower to 236% \
                 faster); about 3 more rounds would settle it as it stands: {} or take nw=0",
                longer("3.2 s", "1m")
            )),
            "{}",
            r.verdict.text
        );
        assert!(
            !r.verdict.may_never_settle,
            "a count of rounds would settle it"
        );
    }

    #[test]
    fn a_2_percent_difference_measured_to_1_percent_is_a_tie() {
        let r = measured(1.02f64.ln(), &scatter(sd_for(0.01)));
        assert_pick(&r, "nw=0", VerdictKind::EquallyFast);
        assert_eq!(
            r.verdict.text,
            format!(
                "nw=0 and nw=2 are equally fast: within ±5.0%, measured to ±1.0%; nw=0 is \
                 picked by the tie rule ({TIE_RULE})"
            )
        );
    }

    #[test]
    fn a_single_lucky_round_does_not_move_the_pick() {
        let even = [0.01, -0.01, 0.005, 0.0, -0.005];
        let r = measured(0.0, &even);
        assert_eq!(r.label.as_deref(), Some("nw=0"), "{}", r.verdict.text);
        assert_eq!(
            r.verdict.kind,
            VerdictKind::EquallyFast,
            "{}",
            r.verdict.text
        );
        // One round in which nw=2 ran 40% faster: its mean gain is 7%, but the round's
        // scatter says that is no gain beyond the margin.
        let mut lucky = even;
        lucky[3] = 1.4f64.ln();
        let r = measured(0.0, &lucky);
        assert_eq!(r.label.as_deref(), Some("nw=0"), "{}", r.verdict.text);
        assert_eq!(
            r.verdict.kind,
            VerdictKind::NotResolved,
            "{}",
            r.verdict.text
        );
        // The same 7% in every round is a gain, and moves it.
        let r = measured(1.4f64.ln() / 5.0, &even);
        assert_eq!(r.label.as_deref(), Some("nw=2"), "{}", r.verdict.text);
    }
}
