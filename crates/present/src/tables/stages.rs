//! Where the time goes, as a table: for each config of a pipeline, the milliseconds per
//! batch in each stage the loader measures (fetch: getting samples' bytes from storage;
//! decode; collate, transform, transfer, pin, copy to the device), the consumer's wait and, with a training step, the step's time, the
//! median over the epochs that stand for a typical epoch (every epoch after the first, or
//! the first when it is the only one). Where a run read compressed shards, the part of
//! the fetch spent decompressing is a column of its own after the fetch's, within it.
//! Stage times of worker configs are spent on the workers, in parallel with each other,
//! so they can add up to more than the epoch; the wait is what the consumer felt. The CLI
//! prints it with `--stages` and the Markdown export includes it; the app charts it per
//! config or, asked, per epoch.

use std::collections::BTreeSet;

use loaderbench_measure::results::{ConfigResult, EpochResult, RunResult};
use loaderbench_measure::stats;

use super::render;

/// A stage's column name and how to read its seconds from an epoch's sums.
type Stage = (&'static str, fn(&EpochResult) -> f64);

/// The stages there are: the loader's, the wait, the training step.
pub const STAGE_COUNT: usize = 9;

/// The stage columns, in the order a batch goes through them, then the step.
const STAGES: [Stage; STAGE_COUNT] = [
    ("fetch", |e| e.stages.fetch_s),
    ("decode", |e| e.stages.read_s),
    ("collate", |e| e.stages.collate_s),
    ("transform", |e| e.stages.transform_s),
    ("transfer", |e| e.stages.transfer_s),
    ("pin", |e| e.stages.pin_s),
    ("to device", |e| e.stages.to_device_s),
    ("wait", |e| e.stages.wait_s),
    ("step", |e| e.stages.step_s),
];

/// The stage names, in the order a batch goes through them, then the wait and the step.
pub fn names() -> [&'static str; STAGE_COUNT] {
    STAGES.map(|(name, _)| name)
}

/// How many of [`names`] a run shows: the step only when it ran one.
pub fn shown(result: &RunResult) -> usize {
    if result.step.is_none() {
        STAGE_COUNT - 1
    } else {
        STAGE_COUNT
    }
}

/// True when some epoch of the run spent time decompressing (compressed shards).
pub fn decompressed(result: &RunResult) -> bool {
    let mut epochs = result.results.iter().flat_map(|r| &r.epochs);
    epochs.any(|epoch| epoch.stages.decompress_s > 0.0)
}

/// Config `index`'s milliseconds per batch spent decompressing, within its fetch, the
/// median over its typical epochs; `None` when it measured no batch.
pub fn decompress_ms(result: &RunResult, index: usize) -> Option<f64> {
    let epochs = runs(result, index).flat_map(ConfigResult::typical_epochs);
    let per_batch: Vec<f64> = epochs
        .filter(|epoch| epoch.batches > 0)
        .map(|e| e.stages.decompress_s / e.batches as f64 * 1e3)
        .collect();
    stats::median(&per_batch)
}

/// Config `index`'s milliseconds per batch in each stage of [`names`], the median over
/// its typical epochs; `None` when it measured no batch.
pub fn per_batch_ms(result: &RunResult, index: usize) -> Option<[f64; STAGE_COUNT]> {
    median_ms(runs(result, index).flat_map(ConfigResult::typical_epochs))
}

/// Config `index`'s milliseconds per batch in each stage of [`names`] for each epoch
/// it measured, by epoch number (the median over the repeats), in epoch order.
pub fn per_epoch_ms(result: &RunResult, index: usize) -> Vec<(usize, [f64; STAGE_COUNT])> {
    let numbers: BTreeSet<usize> = runs(result, index)
        .flat_map(|r| &r.epochs)
        .map(|e| e.epoch)
        .collect();
    numbers
        .into_iter()
        .filter_map(|number| {
            let epochs = runs(result, index)
                .flat_map(|r| &r.epochs)
                .filter(|e| e.epoch == number);
            Some((number, median_ms(epochs)?))
        })
        .collect()
}

/// Every repeat of config `index`.
fn runs(result: &RunResult, index: usize) -> impl Iterator<Item = &ConfigResult> {
    result
        .results
        .iter()
        .filter(move |r| r.config_index == index)
}

/// Milliseconds per batch in each stage, the median over `epochs`; `None` when none of
/// them has a batch.
fn median_ms<'a>(epochs: impl Iterator<Item = &'a EpochResult>) -> Option<[f64; STAGE_COUNT]> {
    let epochs: Vec<&EpochResult> = epochs.filter(|epoch| epoch.batches > 0).collect();
    if epochs.is_empty() {
        return None;
    }
    Some(STAGES.map(|(_, stage)| {
        let per_batch: Vec<f64> = epochs
            .iter()
            .map(|e| stage(e) / e.batches as f64 * 1e3)
            .collect();
        stats::median(&per_batch).unwrap_or(0.0)
    }))
}

/// The aligned Markdown table of `pipeline`'s configs, in milliseconds per batch; empty
/// when none of them measured an epoch.
pub fn table(result: &RunResult, pipeline: &str) -> String {
    let mut header = vec!["config".to_owned()];
    let shown = shown(result);
    header.extend(names().iter().take(shown).map(|name| format!("{name} ms")));
    let decompressed = decompressed(result);
    if decompressed {
        header.insert(2, "of it decompress ms".to_owned());
    }
    let rows: Vec<Vec<String>> = (0..result.configs.len())
        .filter(|&index| result.configs[index].pipeline.name() == pipeline)
        .filter_map(|index| {
            let stages = per_batch_ms(result, index)?;
            let label = result.labels.get(index).cloned().unwrap_or_default();
            let mut row = vec![label];
            row.extend(stages.iter().take(shown).map(|ms| format!("{ms:.2}")));
            if decompressed {
                let ms = decompress_ms(result, index).unwrap_or(0.0);
                row.insert(2, format!("{ms:.2}"));
            }
            Some(row)
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    render(&header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, epoch, result, run};

    #[test]
    fn each_stage_is_milliseconds_per_batch_of_a_typical_epoch() {
        let mut first = epoch(1, 0.5, 0.1, 4);
        first.stages.transform_s = 4.0;
        let mut later = epoch(2, 0.1, 0.1, 4);
        later.stages.read_s = 0.004;
        later.stages.transform_s = 0.02;
        later.stages.wait_s = 0.008;
        let configs = vec![config(0, false), config(2, false)];
        let results = vec![run(0, configs[0].clone(), vec![first, later])];
        let text = table(&result(configs, results), "light");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            3,
            "a header, a rule and the measured config: {text}"
        );
        assert!(
            lines[0].starts_with("| config | fetch ms | decode ms | collate ms | transform ms")
        );
        let cells: Vec<&str> = lines[2].split('|').map(str::trim).collect();
        // The first epoch (a 1 s-per-batch transform) is left out.
        assert_eq!(
            &cells[1..10],
            [
                "nw=0", "0.00", "1.00", "0.00", "5.00", "0.00", "0.00", "0.00", "2.00"
            ]
        );
    }

    #[test]
    fn with_a_step_the_table_has_its_column_last() {
        let mut epoch = epoch(1, 0.1, 0.1, 4);
        epoch.stages.step_s = 0.02;
        let configs = vec![config(0, false)];
        let results = vec![run(0, configs[0].clone(), vec![epoch])];
        let mut run = result(configs, results);
        assert!(!table(&run, "light").contains("step ms"));
        run.step = loaderbench_engine::step::StepSpec::Fixed(5.0);
        let text = table(&run, "light");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].trim_end().ends_with("| wait ms | step ms |"),
            "{text}"
        );
        assert!(lines[2].trim_end().ends_with("| 5.00    |"), "{text}");
    }

    #[test]
    fn decompression_is_a_column_within_the_fetch_only_where_a_run_decompressed() {
        let mut epoch = epoch(1, 0.1, 0.1, 4);
        epoch.stages.fetch_s = 0.02;
        let configs = vec![config(0, false)];
        let mut run = result(
            configs.clone(),
            vec![run(0, configs[0].clone(), vec![epoch])],
        );
        assert!(!table(&run, "light").contains("decompress"));
        run.results[0].epochs[0].stages.decompress_s = 0.012;
        let text = table(&run, "light");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("| config | fetch ms | of it decompress ms | decode ms |"),
            "{text}"
        );
        let cells: Vec<&str> = lines[2].split('|').map(str::trim).collect();
        assert_eq!(&cells[1..5], ["nw=0", "5.00", "3.00", "0.00"]);
    }

    #[test]
    fn per_epoch_each_epoch_is_the_median_of_its_repeats() {
        let repeat = |transform_s: f64| {
            let mut first = epoch(1, 0.5, 0.1, 4);
            first.stages.transform_s = transform_s;
            let mut later = epoch(2, 0.1, 0.1, 4);
            later.stages.read_s = 0.004;
            run(0, config(0, false), vec![first, later])
        };
        let configs = vec![config(0, false), config(2, false)];
        let runs = vec![repeat(4.0), repeat(2.0), repeat(3.0)];
        let result = result(configs, runs);
        let epochs = per_epoch_ms(&result, 0);
        assert_eq!(epochs.len(), 2);
        assert_eq!(epochs[0].0, 1);
        assert_eq!(epochs[0].1[3], 750.0, "the median 3 s over 4 batches");
        assert_eq!(epochs[1].0, 2);
        assert_eq!(epochs[1].1[1], 1.0);
        assert!(per_epoch_ms(&result, 1).is_empty(), "never measured");
    }
}
