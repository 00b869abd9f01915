//! The analysis as chart descriptions, drawn by `plots` like the live charts: the
//! start-up ledger (grouped bars per config), the scaling curve (steady epoch time
//! against `num_workers`, the Amdahl fit and the knee marked), the stall per batch with
//! a training step, and the change against a baseline.

use loaderbench_analysis::baseline::Change;
use loaderbench_analysis::{Analysis, workers};
use loaderbench_present::views::ChartId;

use super::charts::{Axis, Chart, Mark, Series, configs_axis, grouped};

const MILLISECONDS: Axis = Axis::numeric("milliseconds", "ms");

/// Worker start-up, first batch, steady batch and restart cost of every config.
pub fn ledger(analysis: &Analysis) -> Chart {
    let values: Vec<Vec<Option<f64>>> = analysis
        .ledger
        .iter()
        .map(|row| {
            vec![
                row.worker_startup_s,
                row.first_batch_s,
                row.steady_batch_s,
                row.restart_cost_s,
            ]
        })
        .collect();
    let names = [
        "worker start-up",
        "first-batch latency",
        "steady per batch",
        "restart cost per epoch",
    ];
    let (mark, series) = grouped(&names, &values, 1e3);
    Chart {
        id: ChartId::Ledger,
        title: "Start-up ledger".to_owned(),
        x: configs_axis(analysis.ledger.iter().map(|r| r.label.clone()).collect()),
        y: MILLISECONDS,
        mark,
        series,
        highlights: Vec::new(),
    }
}

/// Steady epoch time against `num_workers`, one line per family, with its Amdahl fit
/// and its knee.
pub fn scaling(analysis: &Analysis) -> Chart {
    let families = analysis.scaling.len();
    let mut series = Vec::new();
    let mut highlights = Vec::new();
    for (index, curve) in analysis.scaling.iter().enumerate() {
        series.push(Series {
            name: curve.family.clone(),
            color: index,
            points: curve
                .points
                .iter()
                .map(|p| [p.num_workers as f64, p.steady_epoch_s])
                .collect(),
        });
        if let Some(fit) = curve.fit {
            let most = curve
                .points
                .iter()
                .map(|p| p.num_workers)
                .max()
                .unwrap_or(1);
            series.push(Series {
                name: format!("{} fit, serial {:.2}", curve.family, fit.serial_fraction),
                color: families + index,
                points: (1..=most.max(1))
                    .map(|n| [n as f64, fit.time_s(n as f64)])
                    .collect(),
            });
        }
        let knee = curve
            .knee_workers
            .and_then(|workers| curve.points.iter().find(|p| p.num_workers == workers));
        if let Some(knee) = knee {
            highlights.push(Series {
                name: format!("{} knee: {}", curve.family, workers(knee.num_workers)),
                color: index,
                points: vec![[knee.num_workers as f64, knee.steady_epoch_s]],
            });
        }
    }
    Chart {
        id: ChartId::Scaling,
        title: "Scaling: steady epoch time against num_workers".to_owned(),
        x: Axis::numeric("num_workers", ""),
        y: Axis::numeric("steady epoch", "s"),
        mark: Mark::Lines,
        series,
        highlights,
    }
}

/// The consumer's stall per batch for each config, when a training step ran.
pub fn stall(analysis: &Analysis) -> Option<Chart> {
    if analysis.input_bound.is_empty() {
        return None;
    }
    let values: Vec<Vec<Option<f64>>> = analysis
        .input_bound
        .iter()
        .map(|v| vec![Some(v.stall_per_batch_s)])
        .collect();
    let (mark, series) = grouped(&["stall per batch"], &values, 1e3);
    Some(Chart {
        id: ChartId::Stall,
        title: "Training step: the wait for each batch".to_owned(),
        x: configs_axis(
            analysis
                .input_bound
                .iter()
                .map(|v| v.label.clone())
                .collect(),
        ),
        y: MILLISECONDS,
        mark,
        series,
        highlights: Vec::new(),
    })
}

/// The typical epoch time of each config in the baseline and now.
pub fn baseline(name: &str, changes: &[Change]) -> Chart {
    let values: Vec<Vec<Option<f64>>> = changes
        .iter()
        .map(|c| vec![Some(c.before.epoch_s.median), Some(c.after.epoch_s.median)])
        .collect();
    let before = format!("baseline {name}");
    let (mark, series) = grouped(&[before.as_str(), "this run"], &values, 1.0);
    Chart {
        id: ChartId::Baseline,
        title: format!("Against baseline {name}: typical epoch time"),
        x: configs_axis(changes.iter().map(|c| c.label.clone()).collect()),
        y: Axis::numeric("seconds", "s"),
        mark,
        series,
        highlights: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_analysis::Analysis;
    use loaderbench_measure::fixtures::{config, result, run, two_epochs};

    fn analysis() -> Analysis {
        let configs = vec![config(0, false), config(2, false), config(4, false)];
        let results = configs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let batch = [0.4, 0.2, 0.19][i];
                run(i, c.clone(), two_epochs(0.5, batch, 11))
            })
            .collect();
        Analysis::of(&result(configs, results))
    }

    #[test]
    fn ledger_groups_the_four_measures_under_each_config() {
        let chart = ledger(&analysis());
        assert_eq!(chart.x.names, vec!["nw=0", "nw=2", "nw=4"]);
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert!(
            !names.contains(&"worker start-up"),
            "no start-ups recorded, so no entry: {names:?}"
        );
        assert_eq!(names[0], "first-batch latency");
        let first_batch = &chart.series[0].points;
        assert_eq!(first_batch.len(), 3);
        assert!(first_batch[1][0] < 2.0, "shifted left of group 2");
        assert!((first_batch[1][1] - 500.0).abs() < 1e-9, "in milliseconds");
    }

    #[test]
    fn scaling_marks_the_knee_and_draws_the_fit() {
        let chart = scaling(&analysis());
        assert_eq!(chart.series[0].name, "num_workers");
        assert_eq!(chart.series[0].points.len(), 3);
        assert!(chart.series[1].name.starts_with("num_workers fit, serial "));
        assert_eq!(chart.highlights.len(), 1);
        assert_eq!(chart.highlights[0].name, "num_workers knee: 2 workers");
        assert!((chart.highlights[0].points[0][1] - 2.5).abs() < 1e-9);
    }

    #[test]
    fn stall_chart_only_with_a_training_step() {
        assert!(stall(&analysis()).is_none());
    }
}
