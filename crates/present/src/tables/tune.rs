//! A tune's trail as text: one line on the budget (what was used, why the search
//! stopped), then a row per config of the search space, best first: what the model
//! predicted for the planned epochs, what was measured (the median over its rounds), the
//! prediction's error, and its fate; and the model's error per runtime (each runtime is
//! predicted from its own anchors).

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
    // Times over the planned epochs, as the recommendation projects them: a bare
    // `6009.22` said neither.
    let over = format!("s, {} epochs", result.planned_epochs);
    let header: Vec<String> = vec![
        "config".to_owned(),
        format!("predicted ({over})"),
        format!("measured ({over})"),
        "rounds".to_owned(),
        "error".to_owned(),
        "fate".to_owned(),
    ];
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
    let mut text = summary(trail);
    if let Some(errors) = model_errors(result) {
        text.push_str(&format!("\n{errors}"));
    }
    Some(format!("{text}\n{}", render(&header, &cells)))
}

/// `model error: loaderbench ±12% (3 configs), pytorch ±40% (2 configs)`: per runtime,
/// the median of the predictions' errors against what was measured; `None` where no
/// predicted config was measured.
pub fn model_errors(result: &RunResult) -> Option<String> {
    let trail = result.tune.as_ref()?;
    let mut by_runtime: Vec<(&str, Vec<f64>)> = Vec::new();
    for tuned in &trail.configs {
        let (Some(error), Some(config)) =
            (tuned.prediction_error(), result.configs.get(tuned.config))
        else {
            continue;
        };
        let runtime = config.runtime.name();
        match by_runtime.iter_mut().find(|(name, _)| *name == runtime) {
            Some((_, errors)) => errors.push(error.abs()),
            None => by_runtime.push((runtime, vec![error.abs()])),
        }
    }
    let parts: Vec<String> = by_runtime
        .iter()
        .filter_map(|(runtime, errors)| {
            let median = loaderbench_measure::stats::median(errors)?;
            Some(format!(
                "{runtime} ±{:.0}% ({})",
                median * 100.0,
                loaderbench_engine::counted(errors.len(), "config")
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("model error: {}", parts.join(", ")))
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

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, pytorch_config, result};
    use loaderbench_measure::tune_trail::TunedConfig;

    #[test]
    fn the_model_s_error_is_given_per_runtime() {
        let configs = vec![
            config(0, false),
            config(2, false),
            pytorch_config(0),
            pytorch_config(2),
        ];
        let mut run = result(configs, Vec::new());
        let tuned = |config, predicted_s, measured_s| TunedConfig {
            config,
            predicted_s,
            measured_s,
            rounds: 1,
            fate: Fate::Best,
        };
        run.tune = Some(TuneTrail {
            budget_s: 60.0,
            used_s: 30.0,
            stop: TuneStop::Settled,
            anchors: vec![0, 2],
            rounds: 2,
            configs: vec![
                tuned(0, None, Some(1.0)),
                tuned(1, Some(1.1), Some(1.0)),
                tuned(2, None, Some(2.0)),
                tuned(3, Some(1.0), Some(2.0)),
            ],
        });
        assert_eq!(
            model_errors(&run).as_deref(),
            Some("model error: loaderbench ±10% (1 config), pytorch ±50% (1 config)")
        );
        let text = table(&run).unwrap();
        assert!(text.contains("\nmodel error: loaderbench ±10%"), "{text}");
        assert!(
            text.contains(&format!(
                "| predicted (s, {0} epochs) | measured (s, {0} epochs) |",
                run.planned_epochs
            )),
            "{text}"
        );
    }
}
