//! The charts, described once as plain data: a title, two axes with their units, and
//! named series of points, drawn as bars or lines (first batch, epoch times, the rank
//! spread of ranked configs, the timeline). A config's series is named with its marks:
//! `* disturbed`, `≈ projected` (some epoch projected from a window of its batches). The live plots (`plots`) draw these
//! descriptions, and the tests read them, so what a chart shows is decided here only.

use loaderbench_measure::stats;
use loaderbench_present::views::ChartId;

use super::live::{Phase, RunData};

/// How a chart draws its series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mark {
    /// Bars grouped around each integer x; `width` is one bar's width in x units.
    Bars {
        width: f64,
    },
    /// One bar at each integer x, the series stacked on each other in their order.
    Stacked {
        width: f64,
    },
    Lines,
}

/// One axis: what it measures, in which unit, and names for integer positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub label: &'static str,
    pub unit: &'static str,
    /// Names shown at integer positions (`epoch 1`) instead of the numbers.
    pub category: Option<&'static str>,
    /// Names for positions 1, 2, … (config labels); they take the place of `category`.
    pub names: Vec<String>,
}

impl Axis {
    /// A plain numeric axis: `label` in `unit`, its positions shown as numbers.
    pub const fn numeric(label: &'static str, unit: &'static str) -> Axis {
        Axis {
            label,
            unit,
            category: None,
            names: Vec::new(),
        }
    }

    /// The label with its unit, as the axis shows it.
    pub fn title(&self) -> String {
        if self.unit.is_empty() {
            self.label.to_owned()
        } else {
            format!("{} ({})", self.label, self.unit)
        }
    }
}

/// One named series; `color` indexes the palette, so a config keeps its colour across
/// charts.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub color: usize,
    pub points: Vec<[f64; 2]>,
}

/// A chart, ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub id: ChartId,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub mark: Mark,
    pub series: Vec<Series>,
    /// Points drawn as large markers over the series (a knee).
    pub highlights: Vec<Series>,
}

const SECONDS: Axis = Axis::numeric("seconds", "s");

const EPOCH: Axis = Axis {
    label: "epoch",
    unit: "",
    category: Some("epoch"),
    names: Vec::new(),
};

/// First-batch latency: one bar per config in each epoch's group.
pub fn first_batch(data: &RunData) -> Chart {
    Chart {
        id: ChartId::FirstBatch,
        title: "First-batch latency".to_owned(),
        x: EPOCH,
        y: SECONDS,
        mark: grouped_bars(shown(data, &data.first_batch_s).len()),
        series: per_config(data, &data.first_batch_s, true),
        highlights: Vec::new(),
    }
}

/// Epoch times: one line per config across epochs, or grouped bars for two epochs or
/// fewer, where a line says little; the epoch in progress as a marker at its time so far.
pub fn epoch_times(data: &RunData) -> Chart {
    let bars = data.epochs <= 2;
    Chart {
        id: ChartId::EpochTimes,
        title: "Epoch time".to_owned(),
        x: EPOCH,
        y: SECONDS,
        mark: if bars {
            grouped_bars(shown(data, &data.epoch_s).len())
        } else {
            Mark::Lines
        },
        series: per_config(data, &data.epoch_s, bars),
        highlights: running_epoch(data, bars).into_iter().collect(),
    }
}

/// The epoch being measured, drawn as a marker at its time so far where its bar (or
/// point) will stand, so a long epoch shows on the chart before it ends.
fn running_epoch(data: &RunData, bars: bool) -> Option<Series> {
    let running = data.running?;
    let label = data.labels.get(running.config)?;
    let offset = match (bars, grouped_bars(data.labels.len())) {
        (true, Mark::Bars { width }) => {
            (running.config as f64 - (data.labels.len() as f64 - 1.0) / 2.0) * width
        }
        _ => 0.0,
    };
    Some(Series {
        name: format!(
            "{label}: epoch {} running, {:.1} s so far ({} batches)",
            running.epoch, running.elapsed_s, running.batches
        ),
        color: data.color_of(running.config),
        points: vec![[running.epoch as f64 + offset, running.elapsed_s]],
    })
}

/// The stall before each batch of the latest repeat of `config`, one line per epoch.
pub fn timeline(data: &RunData, config: usize) -> Chart {
    let label = data.labels.get(config).map_or("", String::as_str);
    let series = data
        .wait_s
        .get(config)
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, waits)| !waits.is_empty())
        .map(|(epoch, waits)| Series {
            name: format!("epoch {}", epoch + 1),
            color: epoch,
            points: waits
                .iter()
                .enumerate()
                .map(|(batch, wait)| [batch as f64, *wait])
                .collect(),
        })
        .collect();
    Chart {
        id: ChartId::Timeline,
        title: format!("Wait for each batch — {label}"),
        x: Axis::numeric("batch", ""),
        y: Axis::numeric("wait", "s"),
        mark: Mark::Lines,
        series,
        highlights: Vec::new(),
    }
}

/// The spread between ranks: for each config with several ranks, its fastest and its
/// slowest rank's epoch side by side (each the median over the measured epochs of every
/// repeat so far); `None` while no such config has finished.
pub fn rank_spread(data: &RunData) -> Option<Chart> {
    let results = &data.result.as_ref()?.results;
    let mut names = Vec::new();
    let mut values = Vec::new();
    for (config, label) in data.labels.iter().enumerate() {
        let epochs = results
            .iter()
            .filter(|r| r.config_index == config)
            .flat_map(|r| &r.epochs)
            .filter(|e| !e.ranks.is_empty());
        let (fastest, slowest): (Vec<f64>, Vec<f64>) = epochs
            .map(|e| {
                let seconds = e.ranks.iter().map(|r| r.seconds);
                let slowest = seconds.clone().fold(f64::NEG_INFINITY, f64::max);
                (seconds.fold(f64::INFINITY, f64::min), slowest)
            })
            .unzip();
        if !fastest.is_empty() {
            names.push(label.clone());
            values.push(vec![stats::median(&fastest), stats::median(&slowest)]);
        }
    }
    if names.is_empty() {
        return None;
    }
    let (mark, series) = grouped(&["fastest rank", "slowest rank"], &values, 1.0);
    Some(Chart {
        id: ChartId::RankSpread,
        title: "Rank spread: the fastest and the slowest rank's epoch".to_owned(),
        x: configs_axis(names),
        y: SECONDS,
        mark,
        series,
        highlights: Vec::new(),
    })
}

/// An axis of configs, named by their labels.
pub fn configs_axis(labels: Vec<String>) -> Axis {
    Axis {
        label: "config",
        unit: "",
        category: Some("config"),
        names: labels,
    }
}

/// Bars for `values[group][series]` at groups 1, 2, …, named by `series_names`. A series
/// with no value in any group (the workers' memory of a run with thread workers) is
/// left out, so the legend lists only what has bars and the others share the group;
/// each keeps its colour.
pub fn grouped(
    series_names: &[&str],
    values: &[Vec<Option<f64>>],
    scale: f64,
) -> (Mark, Vec<Series>) {
    let present: Vec<(usize, &str)> = series_names
        .iter()
        .enumerate()
        .filter(|&(index, _)| {
            values
                .iter()
                .any(|row| row.get(index).copied().flatten().is_some())
        })
        .map(|(index, name)| (index, *name))
        .collect();
    let count = present.len();
    let mark = grouped_bars(count);
    let Mark::Bars { width } = mark else {
        return (mark, Vec::new());
    };
    let series = present
        .into_iter()
        .enumerate()
        .map(|(slot, (index, name))| {
            let offset = (slot as f64 - (count as f64 - 1.0) / 2.0) * width;
            Series {
                name: name.to_owned(),
                color: index,
                points: values
                    .iter()
                    .enumerate()
                    .filter_map(|(group, row)| {
                        row.get(index)
                            .copied()
                            .flatten()
                            .map(|v| [(group + 1) as f64 + offset, v * scale])
                    })
                    .collect(),
            }
        })
        .collect();
    (mark, series)
}

/// Bars that fill 80% of each group, whatever the number of configs.
pub fn grouped_bars(configs: usize) -> Mark {
    Mark::Bars {
        width: 0.8 / configs.max(1) as f64,
    }
}

/// The configs a chart of `values` shows: every one while the run measures (each keeps
/// its place as its epochs come), those with a value once it has ended (a wide tune
/// leaves most of its space unmeasured, and their names stood in the legend with no bar).
fn shown(data: &RunData, values: &[Vec<Vec<f64>>]) -> Vec<usize> {
    let measured = |config: usize| {
        let epochs = values.get(config).map_or(&[][..], Vec::as_slice);
        epochs.iter().any(|repeats| !repeats.is_empty())
    };
    let running = data.phase == Phase::Running;
    (0..data.labels.len())
        .filter(|&config| running || measured(config))
        .collect()
}

/// One series per config shown with a point per measured epoch (the median of the
/// repeats); grouped bars shift each config within its epoch's group.
fn per_config(data: &RunData, values: &[Vec<Vec<f64>>], grouped: bool) -> Vec<Series> {
    let shown = shown(data, values);
    let width = match grouped_bars(shown.len()) {
        Mark::Bars { width } => width,
        Mark::Stacked { .. } | Mark::Lines => 0.0,
    };
    shown
        .iter()
        .enumerate()
        .map(|(slot, &config)| {
            let offset = if grouped {
                (slot as f64 - (shown.len() as f64 - 1.0) / 2.0) * width
            } else {
                0.0
            };
            let mut name = data.labels[config].clone();
            if data.is_disturbed(config) {
                name.push_str(" * disturbed");
            }
            if data.is_projected(config) {
                name.push_str(" ≈ projected");
            }
            Series {
                name,
                color: data.color_of(config),
                points: values
                    .get(config)
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
                    .enumerate()
                    .filter_map(|(epoch, repeats)| {
                        stats::median(repeats).map(|s| [(epoch + 1) as f64 + offset, s])
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::results::ConfigResult;

    fn data() -> RunData {
        let mut data = RunData::new(vec!["nw=0".into(), "nw=2".into()], 2, 1, false);
        data.first_batch_s[0][0] = vec![0.1];
        data.first_batch_s[1][0] = vec![0.3, 0.2, 0.4];
        data.epoch_s[1][1] = vec![2.0];
        data.wait_s[1][0] = vec![0.5, 0.0];
        data
    }

    #[test]
    fn first_batch_groups_configs_around_each_epoch() {
        let chart = first_batch(&data());
        assert_eq!(chart.mark, Mark::Bars { width: 0.4 });
        assert_eq!(chart.series[0].name, "nw=0");
        assert_eq!(chart.series[0].points, vec![[0.8, 0.1]]);
        assert_eq!(chart.series[1].points, vec![[1.2, 0.3]]);
        assert_eq!(chart.y.title(), "seconds (s)");
    }

    /// The epoch-times legend of a run of nw=0 and nw=2 where nw=2 measured one epoch,
    /// changed by `mark` first.
    fn legend_with(mark: impl FnOnce(&mut ConfigResult)) -> Vec<String> {
        use loaderbench_measure::fixtures::{config, epoch, result, run};
        let mut data = data();
        let mut nw2 = run(1, config(2, false), vec![epoch(1, 0.1, 0.1, 3)]);
        mark(&mut nw2);
        data.result = Some(result(vec![config(0, false), config(2, false)], vec![nw2]));
        let chart = epoch_times(&data);
        chart.series.into_iter().map(|s| s.name).collect()
    }

    /// While the run measures, every config has its place; once it has ended, a config
    /// never measured (a tune's) is not in the chart, nor its legend.
    #[test]
    fn an_ended_run_charts_only_the_configs_it_measured() {
        let mut data = RunData::new(
            vec!["nw=0".into(), "nw=1".into(), "nw=2".into()],
            2,
            1,
            false,
        );
        data.first_batch_s[0][0] = vec![0.1];
        data.first_batch_s[2][0] = vec![0.3];
        let names = |data: &RunData| -> Vec<String> {
            first_batch(data)
                .series
                .into_iter()
                .map(|s| s.name)
                .collect()
        };
        assert_eq!(names(&data), ["nw=0", "nw=1", "nw=2"]);
        data.phase = Phase::Finished;
        assert_eq!(names(&data), ["nw=0", "nw=2"]);
        let chart = first_batch(&data);
        assert_eq!(chart.mark, grouped_bars(2));
        // The two bars share the group, each keeping its colour.
        let x: Vec<f64> = chart.series.iter().map(|s| s.points[0][0]).collect();
        assert!(
            (x[0] - 0.8).abs() < 1e-9 && (x[1] - 1.2).abs() < 1e-9,
            "{x:?}"
        );
        assert_eq!(chart.series[1].color, data.color_of(2));
    }

    #[test]
    fn a_disturbed_config_is_named_so_in_the_legend() {
        let legend = legend_with(|nw2| nw2.disturbed = true);
        assert_eq!(legend[..2], ["nw=0", "nw=2 * disturbed"]);
    }

    #[test]
    fn a_config_with_projected_epochs_is_named_so_in_the_legend() {
        use loaderbench_measure::window::Projection;
        let legend = legend_with(|cut| {
            cut.epochs[0].projected = Some(Projection {
                measured_batches: 30,
                measured_s: 3.5,
                window_batches: 20,
                steady_batch_s: 0.1,
                plus_minus_s: 0.2,
                end_s: 0.01,
            });
        });
        assert_eq!(legend[..2], ["nw=0", "nw=2 ≈ projected"]);
    }

    #[test]
    fn the_running_epoch_is_a_marker_at_its_time_so_far() {
        use loaderbench_measure::Event;
        use loaderbench_measure::results::BatchRecord;
        let mut data = data();
        assert!(epoch_times(&data).highlights.is_empty());
        let batch = |index, at_s| BatchRecord {
            index,
            at_s,
            samples: 64,
            stages: Default::default(),
        };
        data.apply(Event::Batch {
            config: 1,
            repeat: 0,
            epoch: 2,
            batch: batch(6, 3.3),
        });
        let marker = &epoch_times(&data).highlights[0];
        assert_eq!(
            marker.points,
            vec![[2.2, 3.3]],
            "where nw=2's epoch-2 bar goes"
        );
        assert!(
            marker
                .name
                .starts_with("nw=2: epoch 2 running, 3.3 s so far (7 batches)")
        );
        data.apply(Event::Batch {
            config: 1,
            repeat: 0,
            epoch: 0,
            batch: batch(0, 0.5),
        });
        assert!(epoch_times(&data).highlights.is_empty(), "not the warm-up");
    }

    #[test]
    fn epoch_times_are_lines_beyond_two_epochs() {
        assert!(matches!(epoch_times(&data()).mark, Mark::Bars { .. }));
        let mut many = RunData::new(vec!["nw=0".into()], 3, 1, false);
        many.epoch_s[0][2] = vec![1.5];
        let chart = epoch_times(&many);
        assert_eq!(chart.mark, Mark::Lines);
        assert_eq!(chart.series[0].points, vec![[3.0, 1.5]]);
    }

    #[test]
    fn rank_spread_shows_ranked_configs_fastest_and_slowest_rank() {
        use loaderbench_measure::fixtures::{config, epoch, result, run};
        use loaderbench_measure::results::RankEpoch;
        let mut data = data();
        assert_eq!(rank_spread(&data), None, "no result yet");
        let ranked_epoch = |number, seconds: [f64; 2]| {
            let mut ranked = epoch(number, 0.1, seconds[1], 3);
            ranked.ranks = seconds
                .iter()
                .enumerate()
                .map(|(rank, &seconds)| RankEpoch {
                    rank,
                    seconds,
                    first_batch_s: 0.1,
                    stall_s: 0.0,
                    samples: 3,
                    started_unix_s: 0.0,
                    finished_unix_s: seconds,
                })
                .collect();
            ranked
        };
        let plain = run(0, config(0, false), vec![epoch(1, 0.1, 1.0, 3)]);
        let mut two_ranks = config(2, false);
        two_ranks.ranks = 2;
        let epochs = vec![ranked_epoch(1, [1.0, 1.5]), ranked_epoch(2, [2.0, 2.5])];
        let ranked = run(1, two_ranks.clone(), epochs);
        data.result = Some(result(
            vec![config(0, false), two_ranks],
            vec![plain, ranked],
        ));
        let chart = rank_spread(&data).expect("a ranked config");
        assert_eq!(chart.x.names, ["nw=2"], "only ranked configs");
        assert_eq!(chart.series[0].name, "fastest rank");
        assert_eq!(chart.series[0].points, vec![[0.8, 1.5]]);
        assert_eq!(chart.series[1].points, vec![[1.2, 2.0]]);
    }

    #[test]
    fn timeline_has_one_line_per_epoch_with_batches() {
        let chart = timeline(&data(), 1);
        assert_eq!(chart.series.len(), 1);
        assert_eq!(chart.series[0].name, "epoch 1");
        assert_eq!(chart.series[0].points, vec![[0.0, 0.5], [1.0, 0.0]]);
        assert!(chart.title.contains("nw=2"));
    }
}
