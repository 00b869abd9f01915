//! What measuring a config once more takes, in seconds: what its last measurement took
//! from its start to its end, set-up and all ([`ConfigResult::cost_s`]), or for a config
//! never measured, what its question's slowest took. Resolve fits its rounds into the
//! time left by it, and a verdict that is not resolved counts by it how long to measure
//! on, in the words and the `--resolve-for` it says that in ([`measure_longer`]).

use loaderbench_measure::results::{ConfigResult, RunResult};

/// What measuring config `index` of `result` once more will take: what its last
/// measurement took ([`ConfigResult::cost_s`]), or for a config never measured, the
/// longest that of its question's configs (of any config, where none of its question was
/// measured). Counted as free, a PyTorch config the run ended before began a resolve's
/// round with 11 s left, and the limit passed with nothing of it measured.
pub(crate) fn of(result: &RunResult, index: usize) -> f64 {
    if let Some(seconds) = last(result, index) {
        return seconds;
    }
    let config = &result.configs[index];
    let longest = |alike: &dyn Fn(usize) -> bool| {
        (0..result.configs.len())
            .filter(|&i| alike(i))
            .filter_map(|i| last(result, i))
            .reduce(f64::max)
    };
    longest(&|i| super::same_question(&result.configs[i], config))
        .or_else(|| longest(&|_| true))
        .unwrap_or(0.0)
}

/// What config `index`'s last measurement took; `None` if it was never measured.
pub(crate) fn last(result: &RunResult, index: usize) -> Option<f64> {
    let mut measurements = result.results.iter().rev();
    measurements
        .find(|r| r.config_index == index)
        .map(ConfigResult::cost_s)
}

/// The rounds a verdict counts on where nothing yet shows this machine's noise: five
/// rounds give a comparison's interval four degrees of freedom.
pub(super) const ROUNDS_TO_SHOW_THE_NOISE: usize = 5;

/// What measuring longer takes, in the words the verdicts use, and that limit in
/// seconds: `rounds` more rounds of the configs the decision hinges on, each round taking
/// `round_s` as they last did, as a limit for `run --recommend` and `loaderbench resolve`
/// ([`resolve_for`]). A fixed "5 minutes" was 25 rounds of a light pipeline's question
/// and two of a 12 s-epoch job's.
pub(super) fn measure_longer(round_s: f64, rounds: usize) -> (String, f64) {
    let (limit, limit_s) = resolve_for(round_s * rounds as f64);
    let text = format!(
        "measure longer (rounds of about {}: `run --recommend --resolve-for {limit}`, or \
         `loaderbench resolve --resolve-for {limit}` on its journal)",
        crate::duration(round_s)
    );
    (text, limit_s)
}

/// `seconds` as a `--resolve-for` value, and its seconds: whole minutes rounded up, at
/// least one (resolving stops once the question is resolved), or whole hours beyond two.
pub(super) fn resolve_for(seconds: f64) -> (String, f64) {
    let minutes = (seconds / 60.0).ceil().max(1.0);
    if minutes <= 120.0 {
        (format!("{minutes}m"), minutes * 60.0)
    } else {
        let hours = (minutes / 60.0).ceil();
        (format!("{hours}h"), hours * 3600.0)
    }
}
