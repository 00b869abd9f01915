//! What measuring a config once more takes, in seconds: what its last measurement took
//! from its start to its end, set-up and all ([`ConfigResult::cost_s`]), or for a config
//! never measured, what its question's slowest took. Resolve fits its rounds into the
//! time left by it, and a verdict that is not resolved counts by it how long to measure
//! on.

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
