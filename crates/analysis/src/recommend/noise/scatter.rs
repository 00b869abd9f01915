//! The scatter a question's comparisons are judged by, fitted three ways: the residuals
//! of the additive model between rounds (pooled with the run's alike questions' where
//! they are too few), the scatter of a round's epochs, and an A/A check's copies.

use std::collections::BTreeMap;

use loaderbench_measure::stats;

use super::NoiseInput;

/// Degrees of freedom below which a question's residuals are pooled with its alike
/// questions': t(3) is 3.2, where t(1) is 12.7 and t(4) 2.8.
pub const BORROW_BELOW_DF: usize = 4;

/// How far apart two questions' typical times may be (a factor) for one to borrow the
/// other's residuals: the scatter of a log time depends on how long it is (in
/// `ddp-light` here, epochs of 10–120 ms scattered by 10–39% a round, those of 2–4 s by
/// 4–9%).
pub const LIKE_TIMES: f64 = 2.0;

/// Rounds of backfitting: the additive model converges in a few for the designs a run
/// or a tune makes (balanced, or nearly).
const FIT_ITERATIONS: usize = 200;

/// A scatter: the standard deviation of one measurement's log time, with the degrees of
/// freedom it was estimated with.
pub(super) type Scatter = (f64, usize);

/// A config's level: its mean log time, drift taken out, with the rounds behind it.
pub(super) type Level = (f64, usize);

/// A question's residuals between rounds, for the run's other questions to borrow: their
/// sum of squares and degrees of freedom, with the question's typical level (the median
/// of its configs' levels, log seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Residuals {
    squares: f64,
    df: usize,
    level: f64,
}

impl Residuals {
    /// Of one question's measurements; `None` without any (a single round).
    pub fn of(input: &NoiseInput) -> Option<Residuals> {
        additive_fit(&logs(input)).1
    }

    /// This question's scatter: its own residuals, pooled with those of `others` whose
    /// levels are alike where its own are fewer than [`BORROW_BELOW_DF`]; where `own` is
    /// `None` (a single round), the others' alone. `None` without residuals; the flag
    /// says whether any were borrowed.
    pub(super) fn pooled(
        own: Option<Residuals>,
        level: Option<f64>,
        others: &[Residuals],
    ) -> Option<(Scatter, bool)> {
        let (mut squares, mut df) = own.map_or((0.0, 0), |r| (r.squares, r.df));
        let mut borrowed = false;
        if let Some(level) = level.filter(|_| df < BORROW_BELOW_DF) {
            for other in others
                .iter()
                .filter(|o| (o.level - level).abs() <= LIKE_TIMES.ln())
            {
                squares += other.squares;
                df += other.df;
                borrowed |= other.df > 0;
            }
        }
        (df > 0).then(|| (((squares / df as f64).sqrt(), df), borrowed))
    }
}

/// Each config's log times by round, of the finite positive times measured.
pub(super) fn logs(input: &NoiseInput) -> Vec<BTreeMap<usize, f64>> {
    input
        .rounds
        .iter()
        .map(|rounds| {
            rounds
                .iter()
                .filter(|(_, s)| s.is_finite() && **s > 0.0)
                .map(|(&r, &s)| (r, s.ln()))
                .collect()
        })
        .collect()
}

/// The additive model `log t = level[config] + drift[round] + noise`, fitted by
/// alternating means; returns each config's level with its rounds, and the residuals
/// (their degrees of freedom: observations less configs less rounds plus one) where
/// there are any.
pub(super) fn additive_fit(
    logs: &[BTreeMap<usize, f64>],
) -> (Vec<Option<Level>>, Option<Residuals>) {
    let mut drift: BTreeMap<usize, f64> = logs
        .iter()
        .flat_map(|rounds| rounds.keys().map(|&r| (r, 0.0)))
        .collect();
    let mut levels: Vec<Option<f64>> = vec![None; logs.len()];
    for _ in 0..FIT_ITERATIONS {
        for (level, rounds) in levels.iter_mut().zip(logs) {
            *level = mean(rounds.iter().map(|(r, y)| y - drift[r]));
        }
        for (round, value) in &mut drift {
            let residuals = logs
                .iter()
                .zip(&levels)
                .filter_map(|(rounds, level)| Some(rounds.get(round)? - (*level)?));
            *value = mean(residuals).unwrap_or(0.0);
        }
        // The drift is only known up to a constant: centred, the levels stay in seconds.
        let centre = mean(drift.values().copied()).unwrap_or(0.0);
        for value in drift.values_mut() {
            *value -= centre;
        }
    }
    let observations: usize = logs.iter().map(BTreeMap::len).sum();
    let configs = logs.iter().filter(|r| !r.is_empty()).count();
    let df = (observations + 1).saturating_sub(configs + drift.len());
    let drift = &drift;
    let squares: f64 = logs
        .iter()
        .zip(&levels)
        .flat_map(|(rounds, level)| {
            rounds
                .iter()
                .filter_map(move |(r, y)| Some((y - (*level)? - drift[r]).powi(2)))
        })
        .sum();
    let levels: Vec<Option<Level>> = logs
        .iter()
        .zip(levels)
        .map(|(rounds, level)| Some((level?, rounds.len())))
        .collect();
    let residuals =
        typical(&levels)
            .filter(|_| df > 0)
            .map(|level| Residuals { squares, df, level });
    (levels, residuals)
}

/// A question's typical level: the median of its configs' levels.
pub(super) fn typical(levels: &[Option<Level>]) -> Option<f64> {
    let levels: Vec<f64> = levels.iter().flatten().map(|(level, _)| *level).collect();
    stats::median(&levels)
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The pooled scatter of log epoch times around their repeat's mean, over repeats with
/// two epochs after the first or more.
pub(super) fn within_round_scatter(later_epochs: &[Vec<f64>]) -> Option<Scatter> {
    let mut squares = 0.0;
    let mut df = 0;
    for epochs in later_epochs {
        let logs: Vec<f64> = epochs
            .iter()
            .filter(|s| s.is_finite() && **s > 0.0)
            .map(|s| s.ln())
            .collect();
        if logs.len() < 2 {
            continue;
        }
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        squares += logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>();
        df += logs.len() - 1;
    }
    (df > 0).then(|| ((squares / df as f64).sqrt(), df))
}

/// The scatter one measurement has by an A/A check: a copy and its original differ by
/// two measurements' noise and nothing else.
pub(super) fn aa_scatter(ratios: &[f64]) -> Option<Scatter> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|r| r.ln())
        .collect();
    (!logs.is_empty()).then(|| {
        let squares: f64 = logs.iter().map(|l| l * l).sum();
        ((squares / (2.0 * logs.len() as f64)).sqrt(), logs.len())
    })
}
