//! What each config costs, as chart descriptions drawn by `plots`: where the time of a
//! batch goes (the loader's stages stacked, the fetch in two where a run decompressed
//! shards, the consumer's wait and the step on top), the memory it takes (every process's
//! PSS at the config's peak, stacked by kind of process, with what copy-on-access adds by
//! the end of an epoch of the whole dataset on top; reopen and copy side by side), and
//! the throughput against `num_workers` (the steady rate beside the whole-epoch rate,
//! one pair of lines per combination of the other knobs, the knee marked). All read the
//! finished run's [`RunResult`]; the throughput's knee comes from its [`Analysis`].

use loaderbench_analysis::scaling::{family_name, worker_families};
use loaderbench_analysis::{Analysis, ConfigRuns, measured_configs, mib, workers};
use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::DatasetTransfer;
use loaderbench_measure::process_memory::ProcessKind;
use loaderbench_measure::results::{EpochResult, RunResult};
use loaderbench_measure::stats;
use loaderbench_present::tables::stages;
use loaderbench_present::views::ChartId;

use super::charts::{Axis, Chart, Mark, Series, configs_axis};
use super::palette::SHADE_STEP;

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// Milliseconds per batch in each stage, stacked per config, the wait (and a step's
/// time) on top; where the run decompressed shards, the fetch is two parts: reading the
/// stored bytes and decompressing them.
pub fn stages(result: &RunResult) -> Chart {
    let measured: Vec<usize> = (0..result.configs.len())
        .filter(|&index| stages::per_batch_ms(result, index).is_some())
        .collect();
    let bars = measured
        .iter()
        .filter_map(|&index| Some((label(result, index), stages::per_batch_ms(result, index)?)))
        .collect();
    let mut chart = stacked_stages(
        "Where the time goes".to_owned(),
        bars,
        stages::shown(result),
    );
    if stages::decompressed(result) {
        let decompress = measured
            .iter()
            .map(|&index| stages::decompress_ms(result, index).unwrap_or(0.0));
        split_fetch(&mut chart, decompress.collect());
    }
    chart
}

/// Splits the fetch series (the first) of a stages chart into the part spent reading
/// and, stacked on it, the `decompress` milliseconds of each bar.
fn split_fetch(chart: &mut Chart, decompress: Vec<f64>) {
    let fetch = &mut chart.series[0];
    fetch.name = "fetch: read".to_owned();
    for (point, ms) in fetch.points.iter_mut().zip(&decompress) {
        point[1] = (point[1] - ms).max(0.0);
    }
    let points = fetch
        .points
        .iter()
        .zip(decompress)
        .map(|(point, ms)| [point[0], ms])
        .collect();
    let series = Series {
        name: "fetch: decompress".to_owned(),
        // The colour after every stage's.
        color: stages::STAGE_COUNT,
        points,
    };
    chart.series.insert(1, series);
}

/// Milliseconds per batch in each stage, stacked per epoch of each config (the median
/// of its repeats), the wait on top: the first epoch's start-up beside the later ones.
pub fn stages_per_epoch(result: &RunResult) -> Chart {
    let bars = (0..result.configs.len())
        .flat_map(|index| {
            stages::per_epoch_ms(result, index)
                .into_iter()
                .map(move |(epoch, ms)| (format!("{} · epoch {epoch}", label(result, index)), ms))
        })
        .collect();
    stacked_stages(
        "Where the time goes, per epoch".to_owned(),
        bars,
        stages::shown(result),
    )
}

fn label(result: &RunResult, index: usize) -> String {
    result.labels.get(index).cloned().unwrap_or_default()
}

/// A stacked bar of the first `shown` stages for each named group of `bars`: with a
/// step, the step stacks on the wait, so a step that waits for data reads at a glance.
fn stacked_stages(
    title: String,
    bars: Vec<(String, [f64; stages::STAGE_COUNT])>,
    shown: usize,
) -> Chart {
    let series = stages::names()
        .iter()
        .take(shown)
        .enumerate()
        .map(|(stage, name)| Series {
            name: (*name).to_owned(),
            color: stage,
            points: bars
                .iter()
                .enumerate()
                .map(|(group, (_, ms))| [(group + 1) as f64, ms[stage]])
                .collect(),
        })
        .collect();
    Chart {
        id: ChartId::Stages,
        title,
        x: configs_axis(bars.into_iter().map(|(name, _)| name).collect()),
        y: Axis::numeric("per batch", "ms"),
        mark: Mark::Stacked { width: 0.6 },
        series,
        highlights: Vec::new(),
    }
}

/// The kinds of process a config's memory is stacked by, bottom up, with their names.
const KINDS: [(ProcessKind, &str); 4] = [
    (ProcessKind::Main, "main"),
    (ProcessKind::Rank, "ranks"),
    (ProcessKind::Worker, "workers"),
    (ProcessKind::Helper, "helpers"),
];

/// Per config, its processes' PSS (the median over repeats), stacked by kind of process
/// as the fullest sweep found them (see `EpochMemory`), and on top what the workers' copy-on-access adds by the end of an epoch of
/// the whole dataset, in MiB. A run saved before processes were sampled shows its main
/// process's peak RSS. Configs that differ only in the dataset transfer stand side by
/// side.
pub fn memory(result: &RunResult, analysis: &Analysis) -> Chart {
    let configs = side_by_side(measured_configs(result));
    let median = |values: Vec<u64>| {
        stats::median(&values.iter().map(|&b| b as f64 / MIB).collect::<Vec<_>>())
    };
    let mut names: Vec<&str> = KINDS.iter().map(|(_, name)| *name).collect();
    names.push("to a whole epoch");
    names.push("main (peak RSS)");
    let values: Vec<Vec<Option<f64>>> = configs
        .iter()
        .map(|runs| {
            let peaks: Vec<_> = runs.runs.iter().filter_map(|r| r.memory_peak()).collect();
            let mut bars: Vec<Option<f64>> = KINDS
                .iter()
                .map(|(kind, _)| {
                    median(peaks.iter().map(|m| m.of_kind(*kind)).collect()).filter(|&v| v > 0.0)
                })
                .collect();
            let more = analysis
                .memory
                .configs
                .iter()
                .find(|c| c.config == runs.index)
                .map(|c| (c.projected_bytes - c.measured_bytes) as f64 / MIB)
                .filter(|&v| v > 0.0);
            bars.push(more);
            let unsampled = peaks.is_empty();
            bars.push(
                median(runs.runs.iter().filter_map(|r| r.peak_rss_bytes).collect())
                    .filter(|_| unsampled),
            );
            bars
        })
        .collect();
    let present: Vec<usize> = (0..names.len())
        .filter(|&s| values.iter().any(|bars| bars[s].is_some()))
        .collect();
    let series = present
        .iter()
        .map(|&s| Series {
            name: names[s].to_owned(),
            color: s,
            points: values
                .iter()
                .enumerate()
                .map(|(group, bars)| [(group + 1) as f64, bars[s].unwrap_or(0.0)])
                .collect(),
        })
        .collect();
    Chart {
        id: ChartId::Memory,
        title: "Memory".to_owned(),
        x: configs_axis(configs.iter().map(|r| r.label.to_owned()).collect()),
        y: Axis::numeric("memory (PSS)", "MiB"),
        mark: Mark::Stacked { width: 0.6 },
        series,
        highlights: Vec::new(),
    }
}

/// One line per config whose processes were sampled, for under the memory chart: what it
/// measured, its parts, and its projection for an epoch of the whole dataset where
/// copy-on-access makes that more.
pub fn memory_lines(analysis: &Analysis) -> Vec<String> {
    analysis
        .memory
        .configs
        .iter()
        .map(|c| {
            let mut line = format!("{}: {}", c.label, mib(c.measured_bytes));
            if c.worker_bytes > 0 {
                line.push_str(&format!(
                    " (main {}, workers {})",
                    mib(c.main_bytes),
                    mib(c.worker_bytes)
                ));
            }
            if let Some(growth) = c.worker_growth_bytes {
                line.push_str(&format!("; each worker grew {} in an epoch", mib(growth)));
            }
            if c.projected_bytes > c.measured_bytes {
                line.push_str(&format!(
                    "; {} at the end of an epoch of the whole dataset",
                    mib(c.projected_bytes)
                ));
            }
            if !c.fits {
                line.push_str(" — over the memory limit");
            }
            line
        })
        .collect()
}

/// Samples per second against `num_workers`, a steady and a whole-epoch line per family
/// of configs that differ only in `num_workers` (the two in one hue, whole-epoch the
/// lighter), the knee of the scaling curve marked on the whole-epoch line.
pub fn throughput(result: &RunResult, analysis: &Analysis) -> Chart {
    let configs = measured_configs(result);
    let families = worker_families(&configs);
    let mut series = Vec::new();
    let mut highlights = Vec::new();
    for (index, mut members) in families.into_iter().enumerate() {
        members.sort_by_key(|runs| runs.config.num_workers);
        let family = family_name(members[0].label);
        let rate = |read: fn(&EpochResult) -> f64| -> Vec<[f64; 2]> {
            members
                .iter()
                .filter_map(|runs| {
                    let rates: Vec<f64> = runs.typical_epochs().map(read).collect();
                    Some([runs.config.num_workers as f64, stats::median(&rates)?])
                })
                .collect()
        };
        let whole = rate(|e| e.throughput);
        series.push(Series {
            name: format!("{family} steady"),
            color: index,
            points: rate(|e| e.steady_throughput),
        });
        let knee = analysis
            .scaling
            .iter()
            .find(|curve| {
                let has = |config| members.iter().any(|runs| runs.index == config);
                curve.points.iter().any(|p| has(p.config))
            })
            .and_then(|curve| curve.knee_workers)
            .and_then(|workers| whole.iter().find(|p| p[0] == workers as f64));
        if let Some(point) = knee {
            highlights.push(Series {
                name: format!("{family} knee: {}", workers(point[0] as usize)),
                color: SHADE_STEP + index,
                points: vec![*point],
            });
        }
        series.push(Series {
            name: format!("{family} whole epoch"),
            color: SHADE_STEP + index,
            points: whole,
        });
    }
    Chart {
        id: ChartId::Throughput,
        title: "Throughput".to_owned(),
        x: Axis::numeric("num_workers", ""),
        y: Axis::numeric("throughput", "samples/s"),
        mark: Mark::Lines,
        series,
        highlights,
    }
}

/// The configs in plan order, except that each is followed by those that differ from it
/// only in the dataset transfer (reopen beside copy).
fn side_by_side(configs: Vec<ConfigRuns<'_>>) -> Vec<ConfigRuns<'_>> {
    let key = |runs: &ConfigRuns<'_>| Config {
        dataset_transfer: DatasetTransfer::default(),
        ..runs.config.clone()
    };
    let mut left: Vec<Option<ConfigRuns<'_>>> = configs.into_iter().map(Some).collect();
    let mut ordered = Vec::new();
    for index in 0..left.len() {
        let Some(first) = left[index].take() else {
            continue;
        };
        let family = key(&first);
        ordered.push(first);
        for later in left.iter_mut().skip(index + 1) {
            if later.as_ref().is_some_and(|runs| key(runs) == family) {
                ordered.extend(later.take());
            }
        }
    }
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, epoch, epoch_with_wait, result, run};
    use loaderbench_measure::process_memory::EpochMemory;

    /// nw=0, nw=2 and nw=4 threads (the last slower), then nw=2 copying its dataset.
    fn finished() -> RunResult {
        let mut copy = config(2, false);
        copy.dataset_transfer = DatasetTransfer::Copy;
        let configs = vec![config(0, false), config(2, false), config(4, false), copy];
        let results = configs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let batch = [0.4, 0.2, 0.19, 0.3][i];
                let mut r = run(
                    i,
                    c.clone(),
                    vec![
                        epoch(1, 0.5, batch, 11),
                        epoch_with_wait(2, 0.5, batch, 11, 0.01),
                    ],
                );
                r.epochs[1].stages.read_s = 0.011 * (i + 1) as f64;
                r.peak_rss_bytes = Some((100 + 10 * i as u64) << 20);
                let main = (100 + 10 * i as u64) << 20;
                let workers = (20 * c.num_workers as u64) << 20;
                for epoch in &mut r.epochs {
                    epoch.memory = Some(EpochMemory {
                        peak_pss_bytes: main + workers,
                        main_pss_bytes: main,
                        worker_pss_bytes: workers,
                        rank_pss_bytes: 0,
                        helper_pss_bytes: 0,
                        sweeps: 3,
                        sampling_s: 0.01,
                    });
                }
                r
            })
            .collect();
        result(configs, results)
    }

    #[test]
    fn stages_stack_per_config_with_the_wait_on_top() {
        let chart = stages(&finished());
        assert_eq!(chart.title, "Where the time goes");
        assert_eq!(chart.mark, Mark::Stacked { width: 0.6 });
        assert_eq!(chart.x.names.len(), 4);
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names[..2], ["fetch", "decode"]);
        assert_eq!(names.last(), Some(&"wait"));
        // 11 ms over 11 batches of the second epoch; config 2 read twice as long.
        assert!((chart.series[1].points[0][1] - 1.0).abs() < 1e-9);
        assert!((chart.series[1].points[1][1] - 2.0).abs() < 1e-9);
        // The wait: the first batch's 500 ms and ten of 10 ms, over 11 batches.
        let wait = chart.series[7].points[0][1];
        assert!((wait - 600.0 / 11.0).abs() < 1e-9, "{wait}");
    }

    #[test]
    fn decompressing_splits_the_fetch_in_two_stacked_parts() {
        let mut run = finished();
        assert_eq!(stages(&run).series[0].name, "fetch");
        for result in &mut run.results {
            for epoch in &mut result.epochs {
                epoch.stages.fetch_s = 0.033;
                epoch.stages.decompress_s = 0.022;
            }
        }
        let chart = stages(&run);
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names[..3], ["fetch: read", "fetch: decompress", "decode"]);
        // Over 11 batches: 3 ms of fetch, 2 of them decompressing.
        assert!((chart.series[0].points[0][1] - 1.0).abs() < 1e-9);
        assert!((chart.series[1].points[0][1] - 2.0).abs() < 1e-9);
    }

    #[test]
    fn with_a_step_the_step_stacks_on_the_wait() {
        let mut run = finished();
        for result in &mut run.results {
            for epoch in &mut result.epochs {
                epoch.stages.step_s = 0.004 * epoch.batches as f64;
            }
        }
        assert_eq!(stages(&run).series.len(), 8, "no step, no step series");
        run.step = loaderbench_engine::step::StepSpec::Fixed(4.0);
        let chart = stages(&run);
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names[7..], ["wait", "step"]);
        assert!((chart.series[8].points[0][1] - 4.0).abs() < 1e-9);
    }

    #[test]
    fn stages_per_epoch_stack_each_epoch_of_each_config() {
        let chart = stages_per_epoch(&finished());
        assert_eq!(chart.title, "Where the time goes, per epoch");
        assert_eq!(chart.x.names.len(), 8, "two epochs of four configs");
        assert_eq!(chart.x.names[0], "nw=0 · epoch 1");
        assert_eq!(chart.x.names[3], "nw=2 · epoch 2");
        let read = &chart.series[1].points;
        assert_eq!(read.len(), 8);
        assert_eq!(read[0], [1.0, 0.0], "nothing read in the first epoch");
        assert!((read[3][1] - 2.0).abs() < 1e-9, "22 ms over 11 batches");
        // The first epoch's wait is its first batch's 500 ms, over 11 batches.
        let wait = chart.series[7].points[0][1];
        assert!((wait - 500.0 / 11.0).abs() < 1e-9, "{wait}");
    }

    #[test]
    fn memory_stacks_each_kind_of_process_with_reopen_beside_copy() {
        let result = finished();
        let chart = memory(&result, &Analysis::of(&result));
        assert_eq!(chart.title, "Memory");
        assert_eq!(chart.mark, Mark::Stacked { width: 0.6 });
        assert_eq!(chart.x.names, ["nw=0", "nw=2", "nw=2", "nw=4"]);
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["main", "workers"],
            "no ranks, helpers or growth here"
        );
        let main: Vec<f64> = chart.series[0].points.iter().map(|p| p[1]).collect();
        assert_eq!(main, [100.0, 110.0, 130.0, 120.0], "copy beside reopen");
        let workers: Vec<f64> = chart.series[1].points.iter().map(|p| p[1]).collect();
        assert_eq!(workers, [0.0, 40.0, 40.0, 80.0], "20 MiB a worker");
        let lines = memory_lines(&Analysis::of(&result));
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], "nw=0: 100.0 MiB", "no workers, no parts");
        assert_eq!(
            lines[1],
            "nw=2: 150.0 MiB (main 110.0 MiB, workers 40.0 MiB)"
        );
    }

    #[test]
    fn memory_saved_before_processes_were_sampled_shows_the_main_peak_rss() {
        let mut result = finished();
        for run in &mut result.results {
            for epoch in &mut run.epochs {
                epoch.memory = None;
            }
        }
        let chart = memory(&result, &Analysis::of(&result));
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["main (peak RSS)"]);
        assert_eq!(chart.series[0].points[0], [1.0, 100.0]);
        assert!(memory_lines(&Analysis::of(&result)).is_empty());
    }

    #[test]
    fn throughput_pairs_steady_and_whole_epoch_lines_per_family() {
        let result = finished();
        let chart = throughput(&result, &Analysis::of(&result));
        assert_eq!(chart.title, "Throughput");
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names.len(), 4, "two families: {names:?}");
        assert_eq!(names[0], "num_workers steady");
        assert_eq!(names[1], "num_workers whole epoch");
        let whole = &chart.series[1].points;
        assert_eq!(
            whole.iter().map(|p| p[0]).collect::<Vec<_>>(),
            [0.0, 2.0, 4.0]
        );
        // 704 samples in 0.5 + 10 × 0.2 s.
        assert!((whole[1][1] - 704.0 / 2.5).abs() < 1e-9);
        let steady = &chart.series[0].points;
        assert!(steady[1][1] > whole[1][1], "the first batch left out");
        assert_eq!(chart.highlights.len(), 1);
        assert_eq!(chart.highlights[0].points, vec![whole[1]]);
    }
}
