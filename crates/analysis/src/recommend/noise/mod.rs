//! The one noise model every rule of the recommendation decides with: how far this run's
//! measurements scatter, measured in this run, never a constant chosen per number of
//! rounds. Two configs that shared three rounds or more are compared round by round: the
//! mean of their per-round log ratio, with the 95% Student-t interval from those ratios'
//! own scatter, so drift that slows a whole round cancels and a noisy third config does
//! not hide their difference. Configs that shared fewer rounds (a tune's, a run's first)
//! fall back on the whole question: each config's per-round log time as its level plus
//! the round's drift plus noise (an additive model fitted by alternating means, so
//! configs measured in different rounds still share the drift), with the residuals'
//! scatter. Residuals with fewer than [`BORROW_BELOW_DF`](scatter::BORROW_BELOW_DF) degrees of freedom (two rounds
//! of two or three configs: a t of 4.3 to 12.7) are pooled with those of the run's other
//! questions on the same runtime whose times are alike (within [`LIKE_TIMES`](scatter::LIKE_TIMES) of each
//! other), as a one-way layout pools its cells' variances: the scatter is the machine's,
//! and this run's other questions measured it too. With a single round and nothing to
//! borrow there are no residuals, and the scatter of a repeat's epochs after the first
//! stands in. An A/A check (a config measured against a copy of
//! itself) sets a floor under either. Against the tie margin a difference is one of three
//! things: a gain beyond the margin, a tie within it, or not resolved yet (its interval
//! reaches across the margin), which more rounds settle: about how many, as it stands, is
//! [`NoiseModel::settling`]'s count.

use std::collections::BTreeMap;

use loaderbench_measure::results::ConfigResult;
use loaderbench_measure::stats;

mod scatter;

pub use scatter::Residuals;
use scatter::{Level, Scatter, aa_scatter, additive_fit, logs, typical, within_round_scatter};

/// Rounds two configs must share to be compared by their own per-round ratios: two
/// rounds give one degree of freedom, whose t (12.7) makes every interval useless, where
/// the whole question's scatter has many more.
const PAIRED_ROUNDS: usize = 3;

/// Where the scatter came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoiseSource {
    /// Residuals between rounds.
    Rounds,
    /// Residuals between rounds, pooled with the run's alike questions'.
    PooledRounds,
    /// A single round: the scatter between a repeat's epochs after the first.
    Epochs,
    /// An A/A check's copies, where they scattered more than the model (or alone).
    AaCheck,
}

/// What the measurements of one question say about their noise and each config's level.
#[derive(Debug, Clone)]
pub struct NoiseModel {
    /// Per config (in the order given): its level (log seconds, drift taken out) and the
    /// rounds behind it; `None` for a config without any.
    levels: Vec<Option<Level>>,
    /// Per config, its log time by round.
    logs: Vec<BTreeMap<usize, f64>>,
    /// The scatter one measurement has by an A/A check, with its degrees of freedom.
    aa: Option<Scatter>,
    /// The scatter of one round's log time, with its degrees of freedom; `None` when
    /// nothing measured shows it.
    scatter: Option<Scatter>,
    source: Option<NoiseSource>,
    /// The tie margin on the log scale.
    margin: f64,
}

/// The measurements the model is fitted to.
#[derive(Debug, Clone, Default)]
pub struct NoiseInput {
    /// Per config, its projected seconds by round.
    pub rounds: Vec<BTreeMap<usize, f64>>,
    /// Per repeat of any config, its epochs' seconds after the first (the epochs of one
    /// round, for the within-round scatter).
    pub later_epochs: Vec<Vec<f64>>,
    /// Per round of an A/A check, the copy's projected time over the original's.
    pub aa_ratios: Vec<f64>,
    /// The residuals of the run's other questions on the same runtime, to pool with
    /// where this question's own are too few.
    pub others: Vec<Residuals>,
}

impl NoiseInput {
    /// One config's rounds: `value` of each of its results, by repeat number (the median
    /// where several results measured the same repeat: a folded no-op twin, a copy).
    pub fn by_round<'r>(
        runs: impl IntoIterator<Item = &'r ConfigResult>,
        value: impl Fn(&ConfigResult) -> Option<f64>,
    ) -> BTreeMap<usize, f64> {
        let mut rounds: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for run in runs {
            if let Some(value) = value(run) {
                rounds.entry(run.repeat).or_default().push(value);
            }
        }
        rounds
            .into_iter()
            .filter_map(|(round, values)| Some((round, stats::median(&values)?)))
            .collect()
    }
}

/// How config `a` compares with config `b`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// `b`'s time over `a`'s, minus one: how much faster `a` is (negative: slower).
    pub gain: f64,
    /// The 95% interval's half-width, as a share (the log scale's, which is close for
    /// the shares that matter).
    pub plus_minus: f64,
    pub relation: Relation,
    /// `a` is faster beyond the noise (its interval leaves out no difference) and, as
    /// measured, by more than the tie margin: settled when `relation` is
    /// [`Relation::Faster`], still open when the interval reaches inside the margin.
    pub ahead: bool,
}

/// What more rounds would do to a comparison still open, as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settling {
    /// About this many more rounds would settle it.
    Within(usize),
    /// The difference measured lies within its standard error of the tie margin, and its
    /// interval is narrower than the margin: which side of the margin it is on is as good
    /// as unknown, and no count of rounds can be foreseen to tell a tie from a gain.
    AtTheMargin,
}

/// Shared rounds a comparison needs before it is said to sit at the tie margin: the
/// scatter of fewer is too rough a guess of its own.
const SETTLE_MIN_ROUNDS: usize = 5;

/// A difference against the tie margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// `a` is faster than `b` by more than the margin, beyond the noise.
    Faster,
    /// `a` is slower than `b` by more than the margin, beyond the noise.
    Slower,
    /// They differ by less than the margin, beyond the noise.
    Tie,
    /// The interval reaches across the margin, or the noise is unknown.
    Open,
}

impl Relation {
    /// A log difference `d` (how much faster `a` is) with its 95% interval's half-width
    /// `half` (`None`: the noise is unknown), against the log tie margin `margin`.
    pub fn of(d: f64, half: Option<f64>, margin: f64) -> Relation {
        match half {
            None => Relation::Open,
            Some(h) if d - h > margin => Relation::Faster,
            Some(h) if d + h < -margin => Relation::Slower,
            Some(h) if d.abs() + h < margin => Relation::Tie,
            Some(_) => Relation::Open,
        }
    }
}

impl NoiseModel {
    /// Fits the model; `tie_margin` is a share (0.05 for 5%).
    pub fn fit(input: &NoiseInput, tie_margin: f64) -> NoiseModel {
        let logs = logs(input);
        let (levels, own) = additive_fit(&logs);
        let between = Residuals::pooled(own, typical(&levels), &input.others);
        let within = within_round_scatter(&input.later_epochs);
        let aa = aa_scatter(&input.aa_ratios);
        let (main, main_source) = match (between, within) {
            (Some((b, false)), _) => (Some(b), Some(NoiseSource::Rounds)),
            (Some((b, true)), _) => (Some(b), Some(NoiseSource::PooledRounds)),
            (None, Some(w)) => (Some(w), Some(NoiseSource::Epochs)),
            (None, None) => (None, None),
        };
        let (scatter, source) = match (main, aa) {
            (Some(m), Some(a)) if a.0 > m.0 => (Some((a.0, m.1)), Some(NoiseSource::AaCheck)),
            (Some(m), _) => (Some(m), main_source),
            (None, Some(a)) => (Some(a), Some(NoiseSource::AaCheck)),
            (None, None) => (None, None),
        };
        NoiseModel {
            levels,
            logs,
            aa,
            scatter,
            source,
            margin: (1.0 + tie_margin.max(0.0)).ln(),
        }
    }

    /// True when something measured shows the noise.
    pub fn known(&self) -> bool {
        self.scatter.is_some()
    }

    pub fn source(&self) -> Option<NoiseSource> {
        self.source
    }

    /// The tie margin, as a share.
    pub fn tie_margin(&self) -> f64 {
        self.margin.exp() - 1.0
    }

    /// Config `index`'s level as seconds (the geometric mean of its rounds, drift taken
    /// out).
    pub fn level_s(&self, index: usize) -> Option<f64> {
        self.levels
            .get(index)
            .copied()
            .flatten()
            .map(|(l, _)| l.exp())
    }

    /// How config `a` compares with config `b`; `None` when either has no rounds.
    pub fn compare(&self, a: usize, b: usize) -> Option<Difference> {
        let (d, half) = match self.paired(a, b) {
            Some(paired) => paired,
            None => self.through_levels(a, b)?,
        };
        Some(Difference {
            gain: d.exp() - 1.0,
            plus_minus: half.unwrap_or(f64::INFINITY),
            relation: Relation::of(d, half, self.margin),
            ahead: d > self.margin && half.is_some_and(|h| d - h > 0.0),
        })
    }

    /// About how many more rounds would settle the comparison of `a` with `b` against
    /// the tie margin (its interval clear of the margin on one side), if their
    /// difference and the scatter of one round's ratio stay as measured; or that the
    /// difference sits at the margin. Only for configs compared round by round
    /// ([`PAIRED_ROUNDS`] shared or more), and at the margin only from
    /// [`SETTLE_MIN_ROUNDS`]; `None` otherwise, as where the noise is unknown or the
    /// difference is within its standard error of the margin with an interval wider than
    /// the margin (too rough to extrapolate).
    pub fn settling(&self, a: usize, b: usize) -> Option<Settling> {
        let (d, spread, rounds) = self.paired_ratios(a, b)?;
        let distance = (d.abs() - self.margin).abs();
        let standard_error = spread / (rounds as f64).sqrt();
        if distance <= standard_error {
            // No count can be foreseen; the difference is at the margin where its interval
            // is narrower than the margin, else merely not yet measured well.
            let narrow = stats::t_975(rounds - 1).is_some_and(|t| t * standard_error < self.margin);
            return (rounds >= SETTLE_MIN_ROUNDS && narrow).then_some(Settling::AtTheMargin);
        }
        // Beyond it, t · spread / √n falls under the distance within t² times the rounds
        // so far.
        (rounds + 1..)
            .find(|&n| {
                stats::t_975(n - 1).is_some_and(|t| t * spread / (n as f64).sqrt() < distance)
            })
            .map(|n| Settling::Within(n - rounds))
    }

    /// Round by round, where `a` and `b` shared [`PAIRED_ROUNDS`]: the mean log ratio of
    /// `b` over `a` and its interval's half-width.
    fn paired(&self, a: usize, b: usize) -> Option<(f64, Option<f64>)> {
        let (mean, spread, n) = self.paired_ratios(a, b)?;
        let t = stats::t_975(n - 1)?;
        Some((mean, Some(t * spread / (n as f64).sqrt())))
    }

    /// The ratios of the rounds `a` and `b` shared, where they shared
    /// [`PAIRED_ROUNDS`]: the mean log ratio of `b` over `a`, the scatter of one round's
    /// ratio (never below the A/A check's), and the rounds.
    fn paired_ratios(&self, a: usize, b: usize) -> Option<(f64, f64, usize)> {
        let (a, b) = (self.logs.get(a)?, self.logs.get(b)?);
        let ratios: Vec<f64> = a
            .iter()
            .filter_map(|(round, la)| Some(b.get(round)? - la))
            .collect();
        let n = ratios.len();
        if n < PAIRED_ROUNDS {
            return None;
        }
        let mean = ratios.iter().sum::<f64>() / n as f64;
        let variance = ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        // A ratio holds two measurements' noise.
        let floor = self.aa.map_or(0.0, |(sigma, _)| 2.0 * sigma * sigma);
        Some((mean, variance.max(floor).sqrt(), n))
    }

    /// By the levels of the whole question's additive model and its scatter.
    fn through_levels(&self, a: usize, b: usize) -> Option<(f64, Option<f64>)> {
        let (level_a, n_a) = self.levels.get(a).copied().flatten()?;
        let (level_b, n_b) = self.levels.get(b).copied().flatten()?;
        let half = self.scatter.and_then(|(sigma, df)| {
            let t = stats::t_975(df)?;
            Some(t * sigma * (1.0 / n_a as f64 + 1.0 / n_b as f64).sqrt())
        });
        Some((level_b - level_a, half))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_engine::preset::DEFAULT_TIE_MARGIN;

    fn rounds(seconds: &[f64]) -> BTreeMap<usize, f64> {
        seconds.iter().copied().enumerate().collect()
    }

    fn model(configs: &[&[f64]]) -> NoiseModel {
        let input = NoiseInput {
            rounds: configs.iter().map(|s| rounds(s)).collect(),
            ..NoiseInput::default()
        };
        NoiseModel::fit(&input, DEFAULT_TIE_MARGIN)
    }

    #[test]
    fn drift_that_slows_whole_rounds_cancels() {
        let drift = [1.0, 1.4, 1.1, 0.9, 1.3];
        let slow: Vec<f64> = drift.to_vec();
        let fast: Vec<f64> = drift.iter().map(|d| d / 1.12).collect();
        let m = model(&[&slow, &fast]);
        let d = m.compare(1, 0).unwrap();
        assert!((d.gain - 0.12).abs() < 1e-9, "{d:?}");
        assert!(d.plus_minus < 1e-6, "{d:?}");
        assert_eq!(d.relation, Relation::Faster);
    }

    /// Per-round log ratios of ln 1.12 ± 0.1 (sd 0.1 over four rounds): the interval
    /// clears the 5% margin (0.0488) once t(n − 1) · 0.1 / √n < 0.0645, at 12 rounds
    /// (t = 2.201), eight more; a difference of exactly the margin sits at it.
    #[test]
    fn settling_counts_the_rounds_that_would_clear_the_margin_as_it_stands() {
        let base = [1.0, 1.2, 0.9, 1.1];
        let spread = 0.1 / (4.0f64 / 3.0).sqrt();
        let apart = |gain: f64| -> Vec<f64> {
            base.iter()
                .zip([spread, -spread, spread, -spread])
                .map(|(b, s)| b * (gain.ln() + s).exp())
                .collect()
        };
        let m = model(&[&base, &apart(1.12)]);
        assert_eq!(m.compare(0, 1).unwrap().relation, Relation::Open);
        assert_eq!(m.settling(0, 1), Some(Settling::Within(8)));
        // At the margin: said where five rounds or more measured it more narrowly than
        // the margin; four rounds, or a wider interval, are too rough to say anything.
        let at = |spread: f64, rounds: usize| -> Option<Settling> {
            let base: Vec<f64> = (0..rounds).map(|r| 1.0 + 0.1 * (r % 3) as f64).collect();
            let other: Vec<f64> = base
                .iter()
                .enumerate()
                .map(|(r, b)| b * (1.0 + DEFAULT_TIE_MARGIN) * [spread, -spread][r % 2].exp())
                .collect();
            model(&[&base, &other]).settling(0, 1)
        };
        assert_eq!(at(0.01, 6), Some(Settling::AtTheMargin));
        assert_eq!(at(0.01, 4), None);
        assert_eq!(at(0.1, 6), None);
        // Two rounds shared: not counted.
        let m = model(&[&base, &apart(1.12)[..2]]);
        assert_eq!(m.settling(0, 1), None);
        assert_eq!(model(&[&[1.0], &[0.5]]).settling(0, 1), None);
    }

    #[test]
    fn configs_measured_in_different_rounds_share_the_drift_through_the_others() {
        // Round 1 runs 30% slow; config 2 was only measured in rounds 1 and 2.
        let a = [1.0, 1.3, 1.0];
        let b = [0.8, 1.04, 0.8];
        let mut input = NoiseInput {
            rounds: vec![rounds(&a), rounds(&b)],
            ..NoiseInput::default()
        };
        input
            .rounds
            .push([(1, 1.3 * 0.9), (2, 0.9)].into_iter().collect());
        let m = NoiseModel::fit(&input, DEFAULT_TIE_MARGIN);
        assert!((m.level_s(2).unwrap() / m.level_s(0).unwrap() - 0.9).abs() < 1e-6);
    }

    #[test]
    fn one_round_takes_its_scatter_from_the_epochs_and_none_without_them() {
        let m = model(&[&[1.0], &[0.5]]);
        assert!(!m.known());
        assert_eq!(m.compare(1, 0).unwrap().relation, Relation::Open);
        let input = NoiseInput {
            rounds: vec![rounds(&[1.0]), rounds(&[0.5])],
            later_epochs: vec![vec![1.0, 1.02, 0.98], vec![0.5, 0.51, 0.49]],
            ..NoiseInput::default()
        };
        let m = NoiseModel::fit(&input, DEFAULT_TIE_MARGIN);
        assert_eq!(m.source(), Some(NoiseSource::Epochs));
        assert_eq!(m.compare(1, 0).unwrap().relation, Relation::Faster);
    }

    /// Two rounds of three configs, one of which the time left out of the second, as
    /// `ddp-light`'s PyTorch questions had: one residual degree of freedom, so t = 12.7
    /// and a log half-width of 2.5 around a 5% difference ("254% slower to 283% faster"
    /// there); lent the residuals of two alike questions (1.5× and 1.9× its times, one
    /// degree each), t(3) = 3.2 and the half-width falls by a factor of four. A question
    /// 3× slower, or one with enough residuals of its own, borrows nothing.
    #[test]
    fn a_question_with_too_few_residuals_pools_them_with_alike_questions() {
        let question = |scale: f64, wobble: f64| -> NoiseInput {
            let drift = [1.0, 1.1];
            let config = |level: f64, sign: f64| -> BTreeMap<usize, f64> {
                drift
                    .iter()
                    .enumerate()
                    .map(|(r, d)| {
                        (
                            r,
                            scale * level * d * (sign * wobble * [1.0, -1.0][r]).exp(),
                        )
                    })
                    .collect()
            };
            // The third config's second round did not fit in the time.
            let mut once = config(2.3, 0.0);
            once.remove(&1);
            NoiseInput {
                rounds: vec![config(2.2, 1.0), config(2.25, -1.0), once],
                ..NoiseInput::default()
            }
        };
        let alone = question(1.0, 0.08);
        let m = NoiseModel::fit(&alone, DEFAULT_TIE_MARGIN);
        assert_eq!(m.source(), Some(NoiseSource::Rounds));
        let wide = m.compare(0, 2).unwrap();
        assert!(wide.plus_minus > 2.0, "{wide:?}");
        let others: Vec<Residuals> = [question(1.5, 0.06), question(1.9, 0.1)]
            .iter()
            .map(|q| Residuals::of(q).unwrap())
            .collect();
        let pooled = NoiseModel::fit(
            &NoiseInput {
                others: others.clone(),
                ..alone.clone()
            },
            DEFAULT_TIE_MARGIN,
        );
        assert_eq!(pooled.source(), Some(NoiseSource::PooledRounds));
        let narrow = pooled.compare(0, 2).unwrap();
        assert!(
            narrow.plus_minus < wide.plus_minus / 3.0,
            "{narrow:?} against {wide:?}"
        );
        assert!(narrow.plus_minus > 0.5, "{narrow:?}");
        // Unlike times lend nothing.
        let slower = Residuals::of(&question(3.0, 0.03)).unwrap();
        let unlike = NoiseModel::fit(
            &NoiseInput {
                others: vec![slower],
                ..alone.clone()
            },
            DEFAULT_TIE_MARGIN,
        );
        assert_eq!(unlike.source(), Some(NoiseSource::Rounds));
        assert_eq!(unlike.compare(0, 2), Some(wide));
        // Five rounds of two configs: four degrees of freedom of its own, none borrowed.
        let own = NoiseInput {
            rounds: vec![
                rounds(&[1.0, 1.1, 0.9, 1.2, 1.0]),
                rounds(&[1.0, 1.0, 1.0, 1.1, 1.1]),
            ],
            others,
            ..NoiseInput::default()
        };
        assert_eq!(
            NoiseModel::fit(&own, DEFAULT_TIE_MARGIN).source(),
            Some(NoiseSource::Rounds)
        );
    }

    /// A question measured in one round, beside alike questions measured in two, takes
    /// their scatter between rounds rather than its epochs' within one.
    #[test]
    fn a_single_round_borrows_the_rounds_of_alike_questions_before_its_epochs() {
        let others = vec![
            Residuals::of(&NoiseInput {
                rounds: vec![rounds(&[1.0, 1.2]), rounds(&[1.1, 1.1])],
                ..NoiseInput::default()
            })
            .unwrap(),
        ];
        let input = NoiseInput {
            rounds: vec![rounds(&[1.0]), rounds(&[1.05])],
            later_epochs: vec![vec![1.0, 1.001, 0.999], vec![1.05, 1.051, 1.049]],
            others,
            ..NoiseInput::default()
        };
        let m = NoiseModel::fit(&input, DEFAULT_TIE_MARGIN);
        assert_eq!(m.source(), Some(NoiseSource::PooledRounds));
        assert_eq!(m.compare(1, 0).unwrap().relation, Relation::Open);
        let epochs_only = NoiseModel::fit(
            &NoiseInput {
                others: Vec::new(),
                ..input
            },
            DEFAULT_TIE_MARGIN,
        );
        assert_eq!(epochs_only.source(), Some(NoiseSource::Epochs));
    }

    #[test]
    fn an_aa_check_that_scatters_more_sets_the_floor() {
        let a = [1.0, 1.01, 0.99, 1.0];
        let b = [0.9, 0.91, 0.89, 0.9];
        let tight = NoiseInput {
            rounds: vec![rounds(&a), rounds(&b)],
            ..NoiseInput::default()
        };
        let m = NoiseModel::fit(&tight, DEFAULT_TIE_MARGIN);
        assert_eq!(m.source(), Some(NoiseSource::Rounds));
        assert_eq!(m.compare(1, 0).unwrap().relation, Relation::Faster);
        let floored = NoiseInput {
            aa_ratios: vec![1.2, 0.85, 1.15, 0.9],
            ..tight
        };
        let m = NoiseModel::fit(&floored, DEFAULT_TIE_MARGIN);
        assert_eq!(m.source(), Some(NoiseSource::AaCheck));
        assert_eq!(m.compare(1, 0).unwrap().relation, Relation::Open);
    }
}
