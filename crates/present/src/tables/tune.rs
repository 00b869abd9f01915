//! A tune's trail as text: one line on the budget (what was used, why the search
//! stopped), then a row per config of the search space, best first: what the model
//! predicted for the planned epochs, what was measured (the median over its rounds), the
//! prediction's error, and its fate.

use loaderbench_measure::results::RunResult;
use loaderbench_measure::tune_trail::{Fate, TuneStop, TuneTrail};

use super::{render, seconds};

/// The trail of `result`, if it is a tune's.
pub fn table(result: &RunResult) -> Option<String> {
    let trail = result.tune.as_ref()?;
    let mut rows: Vec<&_> = trail.configs.iter().collect();
    // The best set first, then the rest by how far they went, then by measured time.
    rows.sort_by(|a, b| {
        rank(&a.fate)
            .cmp(&rank(&b.fate))
            .then(b.rounds.cmp(&a.rounds))
            .then(
                a.measured_s
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.measured_s.unwrap_or(f64::INFINITY)),
            )
            .then(a.config.cmp(&b.config))
    });
    let header: Vec<String> = ["config", "predicted", "measured", "rounds", "error", "fate"]
        .map(str::to_owned)
        .to_vec();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|c| {
            let label = result.labels.get(c.config).cloned().unwrap_or_default();
            let anchor = if trail.anchors.contains(&c.config) {
                " (anchor)"
            } else {
                ""
            };
            vec![
                format!("{label}{anchor}"),
                seconds(c.predicted_s),
                seconds(c.measured_s),
                c.rounds.to_string(),
                c.prediction_error()
                    .map_or("-".to_owned(), |e| format!("{:+.0}%", e * 100.0)),
                c.fate.describe(),
            ]
        })
        .collect();
    Some(format!("{}\n{}", summary(trail), render(&header, &cells)))
}

/// `tune: 12 configs, 7 measured in 5 rounds; budget 120 s, used 87 s: settled, 33 s
/// left`.
pub fn summary(trail: &TuneTrail) -> String {
    let measured = trail.configs.iter().filter(|c| c.rounds > 0).count();
    let stop = match trail.stop {
        TuneStop::Settled => format!(
            "settled, {:.0} s of the budget left",
            (trail.budget_s - trail.used_s).max(0.0)
        ),
        TuneStop::Budget => "the budget was spent".to_owned(),
        TuneStop::Cancelled => "stopped by the user".to_owned(),
        TuneStop::Failed => "the run failed".to_owned(),
    };
    format!(
        "tune: {} configs, {measured} measured in {} rounds; budget {:.0} s, used {:.0} s: {stop}",
        trail.configs.len(),
        trail.rounds,
        trail.budget_s,
        trail.used_s
    )
}

fn rank(fate: &Fate) -> u8 {
    match fate {
        Fate::Best => 0,
        Fate::Eliminated { .. } => 1,
        Fate::NotMeasured { .. } => 2,
    }
}
