//! The results table's model, one per pipeline: a header and one row of cell strings per
//! config, in the classic experiment's format — `num_workers | persistent | pin` (after
//! the run's name when several saved runs are shown together), then a
//! column for each other knob whose value differs between the run's configs (worker kind,
//! batch size, transfers, runtime, start method…), then `first batch | epoch 1 | epoch 2
//! …` in seconds (medians over repeats followed by their 95% interval), `memory` (every
//! process's PSS summed at its peak, and the workers' part with them all running; the
//! main process's peak RSS for results saved before processes were sampled) when
//! `num_workers` varies, and `storage read` (a typical epoch's bytes from storage and
//! their rate) when a config is `cache: cold` or a warm one was partly cold, a cold config
//! that stayed warm and a warm one whose files were not all in the page cache marked so
//! and explained below. The Markdown exporter renders it as text and the desktop app
//! draws it as a grid.

use loaderbench_engine::plan::{Config, KNOBS_IN_CONFIG_ORDER};
use loaderbench_engine::preset::Cache;
use loaderbench_measure::results::RunResult;
use loaderbench_measure::summary::SummaryRow;

use super::{python_bool, render, with_interval};
use loaderbench_measure::stats;

/// One pipeline's table.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultsTable {
    pub header: Vec<String>,
    pub rows: Vec<TableRow>,
}

/// One config's row.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    /// The config's index in the plan, for selecting it.
    pub config_index: usize,
    /// The config's label (`nw=4 persistent …`).
    pub label: String,
    /// The cells, one per header column; times of a disturbed config end in `*`.
    pub cells: Vec<String>,
    /// Measured while other load disturbed it (in any repeat).
    pub disturbed: bool,
    /// Some epoch of it was projected from a window (its time starts with `≈`).
    pub projected: bool,
    /// Why a `cache: cold` config stayed warm.
    pub stayed_warm: Option<String>,
    /// Why a `cache: warm` config's files were not all in the page cache.
    pub partly_cold: Option<String>,
}

/// The footnote that explains a `*` after a time.
pub fn disturbed_footnote() -> String {
    format!(
        "* disturbed: measured while other programs kept more than {} cores busy",
        loaderbench_measure::disturbance::DISTURBED_LOAD_CORES
    )
}

/// The footnote that explains a `≈` before an epoch's time.
pub const PROJECTED_FOOTNOTE: &str = "≈ projected: the epoch was cut after a window of its \
     batches and projected whole (`measure: epochs` measures every epoch whole)";

impl ResultsTable {
    /// The table of `pipeline`'s configs that have results, in plan order.
    pub fn of(result: &RunResult, pipeline: &str) -> ResultsTable {
        let extra = varying_knobs(&result.configs);
        let overlaid = result.configs.iter().any(|c| c.run.is_some());
        let mut header: Vec<String> = overlaid.then(|| "run".to_owned()).into_iter().collect();
        header.extend(["num_workers", "persistent", "pin"].map(String::from));
        header.extend(extra.iter().map(|(name, _)| (*name).to_owned()));
        header.push("first batch".to_owned());
        header.extend((1..=result.epochs).map(|e| format!("epoch {e}")));
        // Memory where the configs run other processes: another worker count, runtime,
        // worker kind, start method or rank count.
        let processes_vary = result.configs.iter().any(|c| {
            let first = &result.configs[0];
            c.num_workers != first.num_workers
                || c.runtime != first.runtime
                || c.worker_kind != first.worker_kind
                || c.start_method != first.start_method
                || c.ranks != first.ranks
        });
        if processes_vary {
            header.push("memory".to_owned());
        }
        let summary = result.summary();
        let reads_shown = result.configs.iter().any(|c| c.cache == Cache::Cold)
            || summary.iter().any(|row| row.partly_cold.is_some());
        if reads_shown {
            header.push("storage read".to_owned());
        }
        let rows = summary
            .iter()
            .filter(|row| row.config.pipeline.name() == pipeline)
            .map(|row| TableRow {
                config_index: row.config_index,
                label: row.label.clone(),
                cells: overlaid
                    .then(|| row.config.run.clone().unwrap_or_default())
                    .into_iter()
                    .chain(cells(row, &extra))
                    .chain(processes_vary.then(|| memory(result, row.config_index)))
                    .chain(reads_shown.then(|| storage_read(row)))
                    .collect(),
                disturbed: row.disturbed,
                projected: row.epoch_projected.iter().any(|p| *p),
                stayed_warm: row.stayed_warm.clone(),
                partly_cold: row.partly_cold.clone(),
            })
            .collect();
        ResultsTable { header, rows }
    }

    /// The aligned Markdown text.
    pub fn markdown(&self) -> String {
        let cells: Vec<Vec<String>> = self.rows.iter().map(|row| row.cells.clone()).collect();
        let mut text = render(&self.header, &cells);
        if self.rows.iter().any(|row| row.disturbed) {
            // A blank line first, so Markdown does not read the note as part of the table.
            text.push('\n');
            text.push_str(&disturbed_footnote());
            text.push('\n');
        }
        if self.rows.iter().any(|row| row.projected) {
            text.push('\n');
            text.push_str(PROJECTED_FOOTNOTE);
            text.push('\n');
        }
        for row in &self.rows {
            if let Some(why) = &row.stayed_warm {
                text.push_str(&format!("\nstayed warm: {}: {why}\n", row.label));
            }
            if let Some(why) = &row.partly_cold {
                text.push_str(&format!("\npartly cold: {}: {why}\n", row.label));
            }
        }
        text
    }
}

/// A typical epoch's bytes read from storage and their rate: `41.2 MB at 120.5 MB/s`,
/// `none` where everything came from the page cache; a cold config that stayed warm,
/// and a warm one whose files were not all in the page cache, say so.
fn storage_read(row: &SummaryRow) -> String {
    let read = match (row.read_bytes, row.read_mb_s) {
        (Some(bytes), _) if bytes <= 0.0 => "none".to_owned(),
        (Some(bytes), Some(rate)) => format!("{} at {rate:.1} MB/s", amount(bytes)),
        (Some(bytes), None) => amount(bytes),
        _ => "-".to_owned(),
    };
    match (&row.stayed_warm, &row.partly_cold) {
        (Some(_), _) => format!("{read} (stayed warm)"),
        (None, Some(_)) => format!("{read} (partly cold)"),
        (None, None) => read,
    }
}

/// Bytes as `41.2 MB`, or `64 kB` below a megabyte (which `0.0 MB` would hide).
fn amount(bytes: f64) -> String {
    if bytes < 1e6 {
        format!("{:.0} kB", bytes / 1e3)
    } else {
        format!("{:.1} MB", bytes / 1e6)
    }
}

fn cells(row: &SummaryRow, extra: &[KnobColumn]) -> Vec<String> {
    let c = &row.config;
    let pin = match (c.pin_memory, row.pin_memory_effective) {
        (true, false) => "True (no-op)".to_owned(),
        (pin, _) => python_bool(pin),
    };
    let mut line = vec![
        c.num_workers.to_string(),
        python_bool(c.persistent_workers),
        pin,
    ];
    line.extend(extra.iter().map(|(_, value)| value(c)));
    let mark = if row.disturbed { "*" } else { "" };
    line.push(with_interval(row.first_batch_s, row.first_batch_interval_s) + mark);
    line.extend(
        row.epoch_s
            .iter()
            .zip(&row.epoch_interval_s)
            .zip(&row.epoch_projected)
            .map(|((s, interval), projected)| {
                let about = if *projected { "≈" } else { "" };
                format!("{about}{}{mark}", with_interval(*s, *interval))
            }),
    );
    line
}

/// Config `index`'s memory, the median over repeats: every process's PSS summed at its
/// peak, with the workers' part at the sweep that read the most processes (`1022.3 MiB (workers 542.4 MiB)`); the main process's
/// peak RSS (`210.5 MiB RSS`) where processes were not sampled; a dash when neither was.
fn memory(result: &RunResult, index: usize) -> String {
    let runs = || result.results.iter().filter(|r| r.config_index == index);
    let median = |bytes: Vec<u64>| {
        let bytes: Vec<f64> = bytes.into_iter().map(|b| b as f64).collect();
        stats::median(&bytes).map(|b| format!("{:.1} MiB", b / (1024.0 * 1024.0)))
    };
    let peaks: Vec<_> = runs().filter_map(|r| r.memory_peak()).collect();
    if let Some(total) = median(peaks.iter().map(|m| m.peak_pss_bytes).collect()) {
        return match median(peaks.iter().map(|m| m.worker_pss_bytes).collect()) {
            Some(workers) if peaks.iter().any(|m| m.worker_pss_bytes > 0) => {
                format!("{total} (workers {workers})")
            }
            _ => total,
        };
    }
    median(runs().filter_map(|r| r.peak_rss_bytes).collect())
        .map_or_else(|| "-".to_owned(), |peak| format!("{peak} RSS"))
}

type KnobColumn = (&'static str, fn(&Config) -> String);

/// Knobs beyond the classic three whose column the configs need (mostly: whose value
/// differs between them), in the knob table's order, and `copy` where copies are shown.
fn varying_knobs(configs: &[Config]) -> Vec<KnobColumn> {
    let copy: KnobColumn = ("copy", |c| c.copy.to_string());
    KNOBS_IN_CONFIG_ORDER
        .iter()
        .filter_map(|knob| Some((knob.label, knob.column.of(configs)?)))
        .chain(
            configs
                .iter()
                .any(|c| c.copy != configs[0].copy)
                .then_some(copy),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_engine::preset::{Runtime, StartMethod, WorkerKind};
    use loaderbench_measure::fixtures::{config, each_once, epoch, result, run, two_epochs};

    #[test]
    fn a_classic_sweep_has_the_classic_columns() {
        let configs = vec![config(0, false), config(2, true)];
        let results = vec![
            run(0, configs[0].clone(), vec![epoch(1, 0.004, 0.1, 3)]),
            run(1, configs[1].clone(), vec![epoch(1, 0.25, 0.1, 3)]),
        ];
        let table = ResultsTable::of(&result(configs, results), "light");
        assert_eq!(
            table.header,
            [
                "num_workers",
                "persistent",
                "pin",
                "first batch",
                "epoch 1",
                "memory"
            ]
        );
        assert_eq!(table.rows[1].config_index, 1);
        assert_eq!(
            table.rows[0].cells,
            ["0", "False", "False", "0.0040", "0.20", "200.0 MiB RSS"]
        );
        assert!(
            table
                .markdown()
                .starts_with("| num_workers | persistent | pin   | first batch | epoch 1 | memory")
        );
    }

    #[test]
    fn the_memory_column_sums_every_process_and_shows_the_workers_part() {
        let configs = vec![config(0, false), config(2, false)];
        let mut workers = run(1, configs[1].clone(), vec![epoch(1, 0.25, 0.1, 3)]);
        let sampled = |total: u64, workers: u64| loaderbench_measure::process_memory::EpochMemory {
            peak_pss_bytes: total << 20,
            main_pss_bytes: (total - workers) << 20,
            worker_pss_bytes: workers << 20,
            rank_pss_bytes: 0,
            helper_pss_bytes: 0,
            sweeps: 4,
            sampling_s: 0.01,
        };
        workers.epochs[0].memory = Some(sampled(300, 120));
        let results = vec![run(0, configs[0].clone(), vec![]), workers];
        let table = ResultsTable::of(&result(configs, results), "light");
        assert_eq!(table.header.last().map(String::as_str), Some("memory"));
        assert_eq!(
            table.rows[1].cells.last().map(String::as_str),
            Some("300.0 MiB (workers 120.0 MiB)")
        );
        // Not sampled (saved before it was): the main process's peak RSS, said so.
        assert_eq!(
            table.rows[0].cells.last().map(String::as_str),
            Some("200.0 MiB RSS")
        );
        let same = vec![config(2, false), config(2, true)];
        let plain = ResultsTable::of(&result(same.clone(), vec![]), "light");
        assert!(
            !plain.header.contains(&"memory".to_owned()),
            "workers alike"
        );
        // Two workers each, on our engine's threads and in DataLoader's processes.
        let mut runtimes = same;
        runtimes[1].persistent_workers = false;
        runtimes[1].runtime = Runtime::Pytorch;
        let table = ResultsTable::of(&result(runtimes, vec![]), "light");
        assert_eq!(table.header.last().map(String::as_str), Some("memory"));
    }

    #[test]
    fn overlaid_runs_lead_each_row_with_the_run() {
        let configs = vec![config(0, false), config(2, true)];
        let results = |configs: &[Config]| {
            vec![
                run(0, configs[0].clone(), vec![epoch(1, 0.004, 0.1, 3)]),
                run(1, configs[1].clone(), vec![epoch(1, 0.25, 0.1, 3)]),
            ]
        };
        let one = result(configs.clone(), results(&configs));
        let merged = crate::overlay::overlay(vec![
            ("laptop".to_owned(), one.clone()),
            ("server".to_owned(), one),
        ])
        .unwrap();
        let table = ResultsTable::of(&merged, "light");
        assert_eq!(table.header[..2], ["run", "num_workers"]);
        let runs: Vec<&str> = table.rows.iter().map(|r| r.cells[0].as_str()).collect();
        assert_eq!(runs, ["laptop", "laptop", "server", "server"]);
    }

    #[test]
    fn knobs_that_vary_get_columns_and_repeats_get_intervals() {
        let mut spawned = config(2, false);
        spawned.worker_kind = WorkerKind::Spawn;
        spawned.pin_memory = true;
        let mut pytorch = config(2, false);
        pytorch.runtime = Runtime::Pytorch;
        pytorch.worker_kind = WorkerKind::Auto;
        pytorch.start_method = StartMethod::Forkserver;
        let configs = vec![config(2, false), spawned, pytorch];
        let results = (0..3)
            .flat_map(|index| {
                let config = configs[index].clone();
                [0.2, 0.3, 0.4]
                    .map(|first| run(index, config.clone(), vec![epoch(1, first, 0.1, 3)]))
            })
            .collect();
        let mut result = result(configs, results);
        result.repeats = 3;
        let table = ResultsTable::of(&result, "light");
        assert_eq!(
            table.header,
            [
                "num_workers",
                "persistent",
                "pin",
                "worker kind",
                "runtime",
                "start method",
                "first batch",
                "epoch 1",
                "memory"
            ]
        );
        let row = &table.rows[1].cells;
        assert_eq!(
            &row[..6],
            ["2", "False", "True (no-op)", "spawn", "loaderbench", "-"]
        );
        assert!(
            row[6].starts_with("0.30 [") && row[6].ends_with(']'),
            "{row:?}"
        );
        assert_eq!(&table.rows[2].cells[4..6], ["pytorch", "forkserver"]);
    }

    /// A config without workers has no worker kind: it neither makes the column nor
    /// shows a kind in it.
    #[test]
    fn a_config_without_workers_shows_no_worker_kind() {
        let table = |configs: Vec<Config>| {
            let measured = each_once(configs, || vec![epoch(1, 0.2, 0.1, 3)]);
            ResultsTable::of(&measured, "light")
        };
        let mut unused = config(0, false);
        unused.worker_kind = WorkerKind::Spawn;
        let threads = table(vec![unused.clone(), config(2, false), config(4, false)]);
        assert!(
            !threads.header.iter().any(|h| h == "worker kind"),
            "{:?}",
            threads.header
        );
        let mut spawned = config(2, false);
        spawned.worker_kind = WorkerKind::Spawn;
        let kinds = table(vec![unused, config(2, false), spawned]);
        let column = kinds
            .header
            .iter()
            .position(|h| h == "worker kind")
            .unwrap();
        let cells: Vec<&str> = kinds
            .rows
            .iter()
            .map(|r| r.cells[column].as_str())
            .collect();
        assert_eq!(cells, ["-", "thread", "spawn"]);
    }

    #[test]
    fn a_cold_config_shows_its_storage_reads_and_one_that_stayed_warm_says_why() {
        let cold = loaderbench_engine::plan::Config {
            cache: Cache::Cold,
            ..config(2, false)
        };
        let configs = vec![config(2, false), cold.clone(), cold.clone(), cold];
        let read = |index: usize, bytes: u64| {
            let mut epochs = two_epochs(0.25, 0.1, 3);
            for e in &mut epochs {
                e.record_reads(Some(bytes));
            }
            run(index, configs[index].clone(), epochs)
        };
        let mut stayed = read(2, 0);
        stayed.stayed_warm = Some("/dev/shm/a.png: on tmpfs".to_owned());
        stayed.label = "nw=2 cold".to_owned();
        let results = vec![read(0, 0), read(1, 9_000_000), stayed, read(3, 64_000)];
        let table = ResultsTable::of(&result(configs, results), "light");
        assert_eq!(table.header[3], "cache");
        assert_eq!(
            table.header.last().map(String::as_str),
            Some("storage read")
        );
        let last = |row: usize| table.rows[row].cells.last().cloned().unwrap();
        assert_eq!(last(0), "none");
        assert_eq!(last(1), "9.0 MB at 20.0 MB/s");
        assert_eq!(last(2), "none (stayed warm)");
        assert_eq!(last(3), "64 kB at 0.1 MB/s");
        assert!(
            table
                .markdown()
                .ends_with("\nstayed warm: nw=2 cold: /dev/shm/a.png: on tmpfs\n")
        );
    }

    #[test]
    fn a_warm_config_whose_files_were_not_all_in_shows_its_reads_and_says_why() {
        let configs = vec![config(0, false), config(2, false)];
        let read = |index: usize, bytes: u64| {
            let mut epochs = vec![epoch(1, 0.25, 0.1, 3)];
            epochs[0].record_reads(Some(bytes));
            run(index, configs[index].clone(), epochs)
        };
        let all_warm = ResultsTable::of(&result(configs.clone(), vec![read(0, 0)]), "light");
        assert_ne!(all_warm.header.last().unwrap(), "storage read");
        let mut partly = read(1, 9_000_000);
        partly.partly_cold = Some("12.0 GB of the dataset's files …".to_owned());
        partly.label = "nw=2".to_owned();
        let table = ResultsTable::of(&result(configs.clone(), vec![read(0, 0), partly]), "light");
        assert_eq!(table.header.last().unwrap(), "storage read");
        assert_eq!(table.rows[0].cells.last().unwrap(), "none");
        assert_eq!(
            table.rows[1].cells.last().unwrap(),
            "9.0 MB at 20.0 MB/s (partly cold)"
        );
        assert!(
            table
                .markdown()
                .ends_with("\npartly cold: nw=2: 12.0 GB of the dataset's files …\n"),
            "{}",
            table.markdown()
        );
    }

    #[test]
    fn a_disturbed_config_has_its_times_marked_and_explained() {
        let configs = vec![config(0, false), config(2, false)];
        let mut busy = run(1, configs[1].clone(), vec![epoch(1, 0.25, 0.1, 3)]);
        busy.disturbed = true;
        let results = vec![
            run(0, configs[0].clone(), vec![epoch(1, 0.25, 0.1, 3)]),
            busy,
        ];
        let table = ResultsTable::of(&result(configs, results), "light");
        assert_eq!(&table.rows[0].cells[3..5], ["0.25", "0.45"]);
        assert_eq!(&table.rows[1].cells[3..5], ["0.25*", "0.45*"]);
        let text = table.markdown();
        assert!(text.trim_end().ends_with(&disturbed_footnote()), "{text}");
    }
}
