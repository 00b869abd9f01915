//! Ours against PyTorch's: pairs every `pytorch` config of a run with the loaderbench
//! config that has the same knobs, and gives first batch and each epoch side by side
//! with the ratio PyTorch / ours (above 1: ours is faster). The CLI's `compare` and the
//! app's compare view show the same [`rows`].

use crate::tables::{render, seconds};
use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::{Runtime, StartMethod, WorkerKind};
use loaderbench_measure::results::RunResult;
use loaderbench_measure::summary::SummaryRow;

/// One PyTorch config and its loaderbench counterpart.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRow {
    /// The config's label without the runtime.
    pub label: String,
    pub pipeline: String,
    /// First batch, then each epoch, in seconds: (ours, PyTorch's).
    pub figures: Vec<(Option<f64>, Option<f64>)>,
}

impl CompareRow {
    /// PyTorch's time over ours for figure `i`.
    pub fn ratio(&self, i: usize) -> Option<f64> {
        let (ours, pytorch) = self.figures.get(i)?;
        ratio(*ours, *pytorch)
    }
}

/// PyTorch / ours, when both were measured and ours is not zero.
pub fn ratio(ours: Option<f64>, pytorch: Option<f64>) -> Option<f64> {
    match (ours, pytorch) {
        (Some(ours), Some(pytorch)) if ours > 0.0 => Some(pytorch / ours),
        _ => None,
    }
}

/// True when the run holds configs of both runtimes.
pub fn has_both_runtimes(result: &RunResult) -> bool {
    let has = |runtime| result.configs.iter().any(|c| c.runtime == runtime);
    has(Runtime::Loaderbench) && has(Runtime::Pytorch)
}

/// One row per measured PyTorch config whose loaderbench counterpart was measured too,
/// in plan order.
pub fn rows(result: &RunResult) -> Vec<CompareRow> {
    let summary = result.summary();
    summary
        .iter()
        .filter(|row| row.config.runtime == Runtime::Pytorch)
        .filter_map(|pytorch| {
            let ours = summary
                .iter()
                .find(|row| row.config == counterpart(&pytorch.config))?;
            Some(pair(ours, pytorch))
        })
        .collect()
}

/// The loaderbench config with the same knobs (ours has no start method, and its
/// default workers are threads where PyTorch's `auto` are DataLoader's processes).
fn counterpart(pytorch: &Config) -> Config {
    let worker_kind = match pytorch.worker_kind {
        WorkerKind::Auto => WorkerKind::Thread,
        kind => kind,
    };
    Config {
        runtime: Runtime::Loaderbench,
        start_method: StartMethod::platform_default(),
        worker_kind,
        ..pytorch.clone()
    }
}

fn pair(ours: &SummaryRow, pytorch: &SummaryRow) -> CompareRow {
    let label = pytorch
        .label
        .split(' ')
        .filter(|word| *word != "pytorch")
        .collect::<Vec<_>>()
        .join(" ");
    let mut figures = vec![(ours.first_batch_s, pytorch.first_batch_s)];
    figures.extend(
        ours.epoch_s
            .iter()
            .zip(&pytorch.epoch_s)
            .map(|(o, p)| (*o, *p)),
    );
    CompareRow {
        label,
        pipeline: pytorch.config.pipeline.name().to_owned(),
        figures,
    }
}

/// The names of a row's figures: `first batch`, `epoch 1`, …
pub fn figure_names(epochs: usize) -> Vec<String> {
    let mut names = vec!["first batch".to_owned()];
    names.extend((1..=epochs).map(|e| format!("epoch {e}")));
    names
}

/// A ratio as `12.3×`, or a dash.
pub fn times(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |r| format!("{r:.1}×"))
}

/// The aligned Markdown table: per figure, ours, PyTorch's and the ratio.
pub fn table(result: &RunResult) -> String {
    let mut header = vec!["config".to_owned(), "pipeline".to_owned()];
    for name in figure_names(result.epochs) {
        header.push(format!("{name} ours"));
        header.push(format!("{name} pytorch"));
        header.push("pytorch/ours".to_owned());
    }
    let cells: Vec<Vec<String>> = rows(result)
        .iter()
        .map(|row| {
            let mut line = vec![row.label.clone(), row.pipeline.clone()];
            for (i, (ours, pytorch)) in row.figures.iter().enumerate() {
                line.push(seconds(*ours));
                line.push(seconds(*pytorch));
                line.push(times(row.ratio(i)));
            }
            line
        })
        .collect();
    render(&header, &cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_engine::plan::Plan;
    use loaderbench_engine::preset::Preset;
    use loaderbench_measure::fixtures;
    use loaderbench_measure::results::EpochResult;

    fn result_with(seconds: &[(usize, f64)]) -> RunResult {
        let mut preset = Preset::default();
        preset.set("num_workers", "0,2").unwrap();
        preset.set("runtime", "loaderbench,pytorch").unwrap();
        preset.set("start_method", "fork,spawn").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        let results = seconds
            .iter()
            .map(|&(index, s)| {
                let epochs = (1..=2)
                    .map(|e| EpochResult::from_batches(e, s, Vec::new(), Vec::new()))
                    .collect();
                let mut run = fixtures::run(index, plan.configs[index].clone(), epochs);
                run.label = plan.label(index);
                run
            })
            .collect();
        let mut result = fixtures::result(plan.configs.clone(), results);
        result.labels = plan.labels();
        result
    }

    #[test]
    fn each_pytorch_config_meets_ours_with_the_same_knobs() {
        // Configs: ours nw=0, ours nw=2, pytorch nw=0, pytorch nw=2 fork, nw=2 spawn.
        let result = result_with(&[(0, 0.5), (1, 0.25), (2, 5.0), (3, 1.0), (4, 2.5)]);
        assert!(has_both_runtimes(&result));
        let rows = rows(&result);
        let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["nw=0", "nw=2", "nw=2 spawn"]);
        assert_eq!(rows[0].figures[1], (Some(0.5), Some(5.0)));
        assert_eq!(rows[0].ratio(1), Some(10.0));
        assert_eq!(rows[2].ratio(2), Some(10.0));
        let table = table(&result);
        assert!(table.contains("| nw=2 spawn"), "{table}");
        assert!(table.contains("10.0×"), "{table}");
    }

    #[test]
    fn unmeasured_counterparts_are_left_out() {
        let result = result_with(&[(2, 5.0), (1, 0.25), (3, 1.0)]);
        let labels: Vec<String> = rows(&result).into_iter().map(|r| r.label).collect();
        assert_eq!(labels, ["nw=2"]);
        assert_eq!(ratio(Some(0.0), Some(1.0)), None);
    }
}
