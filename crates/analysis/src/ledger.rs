//! The start-up ledger: per config, what starting costs — worker start-up, first-batch
//! latency, the steady time per batch, and the restart cost every epoch pays when
//! workers do not persist (the first batch of a later epoch beyond a steady batch) —
//! and the break-even of persistent workers over the epochs a user plans to train.

use loaderbench_engine::seconds;
use serde::{Deserialize, Serialize};

use loaderbench_measure::stats;

use super::{ConfigRuns, steady_batch_s};

/// What starting costs one config; medians over repeats (and epochs where stated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerRow {
    pub config: usize,
    pub label: String,
    /// One worker's start-up, over every start-up measured; `None` without workers.
    pub worker_startup_s: Option<f64>,
    /// The first epoch's first-batch latency.
    pub first_batch_s: Option<f64>,
    /// Seconds per batch after the first, over every epoch.
    pub steady_batch_s: Option<f64>,
    /// What each later epoch spends before its first batch beyond a steady batch: the
    /// price of restarting workers that do not persist, plus refilling the prefetch
    /// pipeline, which every epoch pays (so persistent configs show it too).
    pub restart_cost_s: Option<f64>,
}

/// What persistent workers save for one non-persistent config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakEven {
    pub config: usize,
    pub label: String,
    /// The persistent twin it was measured against; `None` when the saving is
    /// estimated from the restart cost.
    pub persistent_config: Option<usize>,
    pub saved_per_epoch_s: f64,
    pub planned_epochs: usize,
    /// Over the planned epochs: every epoch after the first saves once.
    pub saved_total_s: f64,
    pub sentence: String,
}

/// The ledger row of one config.
pub fn row(runs: &ConfigRuns<'_>) -> LedgerRow {
    let startups: Vec<f64> = runs
        .epochs()
        .flat_map(|e| &e.worker_startups)
        .map(|s| s.seconds)
        .collect();
    let first_batches: Vec<f64> = runs.first_epochs().map(|e| e.first_batch_s).collect();
    let steady: Vec<f64> = runs.epochs().filter_map(steady_batch_s).collect();
    let restarts: Vec<f64> = runs
        .runs
        .iter()
        .flat_map(|r| r.epochs.iter().skip(1))
        .filter_map(|e| steady_batch_s(e).map(|batch| (e.first_batch_s - batch).max(0.0)))
        .collect();
    LedgerRow {
        config: runs.index,
        label: runs.label.to_owned(),
        worker_startup_s: stats::median(&startups),
        first_batch_s: stats::median(&first_batches),
        steady_batch_s: stats::median(&steady),
        restart_cost_s: stats::median(&restarts),
    }
}

/// For every non-persistent config whose workers could persist: the saving of its persistent twin
/// where one was measured (the difference of their typical epochs), else the restart
/// cost it paid.
pub fn break_even(
    configs: &[ConfigRuns<'_>],
    ledger: &[LedgerRow],
    planned_epochs: usize,
) -> Vec<BreakEven> {
    configs
        .iter()
        .filter(|runs| runs.config.can_persist() && !runs.config.persistent_workers)
        .filter_map(|runs| {
            let twin = configs.iter().find(|other| {
                other.config.persistent_workers
                    && *other.config
                        == loaderbench_engine::plan::Config {
                            persistent_workers: true,
                            ..runs.config.clone()
                        }
            });
            let (persistent_config, saved) = match twin {
                Some(twin) => {
                    let own = runs.estimate()?.epoch_s.median;
                    let theirs = twin.estimate()?.epoch_s.median;
                    (Some(twin.index), own - theirs)
                }
                None => {
                    let row = ledger.iter().find(|r| r.config == runs.index)?;
                    (None, row.restart_cost_s?)
                }
            };
            let restarts = planned_epochs.saturating_sub(1);
            let total = saved * restarts as f64;
            let against = match twin {
                Some(twin) => format!("measured against {}", twin.label),
                None => "estimated from its restart cost, an upper bound".to_owned(),
            };
            let sentence = if saved > 0.0 {
                format!(
                    "Persistent workers save {} s per epoch for {} ({against}); over \
                     {planned_epochs} epochs that is {}",
                    seconds(saved),
                    runs.label,
                    super::duration(total)
                )
            } else if saved < 0.0 {
                format!(
                    "Persistent workers save nothing for {} ({against}, they were {} s \
                     per epoch slower)",
                    runs.label,
                    seconds(-saved)
                )
            } else {
                // A restart cost of nothing: later epochs start as fast as a steady batch.
                format!(
                    "Persistent workers save nothing for {} ({against})",
                    runs.label
                )
            };
            Some(BreakEven {
                config: runs.index,
                label: runs.label.to_owned(),
                persistent_config,
                saved_per_epoch_s: saved,
                planned_epochs,
                saved_total_s: total,
                sentence,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::Analysis;
    use loaderbench_measure::fixtures::{
        config, each_once, epoch, result, run, two_epochs, with_startups,
    };

    #[test]
    fn restarting_workers_costs_their_first_batch_every_epoch() {
        // nw=2 restarts: every epoch's first batch takes 0.5 s against 0.1 s steady.
        let restarting = with_startups(
            run(0, config(2, false), two_epochs(0.5, 0.1, 11)),
            &[1, 2],
            0.3,
        );
        let persistent = with_startups(
            run(
                1,
                config(2, true),
                vec![epoch(1, 0.5, 0.1, 11), epoch(2, 0.1, 0.1, 11)],
            ),
            &[1],
            0.3,
        );
        let r = result(
            vec![config(2, false), config(2, true)],
            vec![restarting, persistent],
        );
        let analysis = Analysis::of(&r);
        let row = &analysis.ledger[0];
        assert_eq!(row.worker_startup_s, Some(0.3));
        assert_eq!(row.first_batch_s, Some(0.5));
        assert!((row.steady_batch_s.unwrap() - 0.1).abs() < 1e-9);
        assert!((row.restart_cost_s.unwrap() - 0.4).abs() < 1e-9);
        assert!(analysis.ledger[1].restart_cost_s.unwrap().abs() < 1e-9);

        let saving = &analysis.break_even[0];
        assert_eq!(saving.persistent_config, Some(1));
        assert!((saving.saved_per_epoch_s - 0.4).abs() < 1e-9);
        // 49 epochs after the first, 0.4 s each: 19.6 s.
        assert!((saving.saved_total_s - 19.6).abs() < 1e-9);
        assert_eq!(
            saving.sentence,
            "Persistent workers save 0.40 s per epoch for nw=2 (measured against nw=2 \
             persistent); over 50 epochs that is 19.6 s"
        );
    }

    #[test]
    fn without_a_persistent_twin_the_saving_is_the_restart_cost() {
        let restarting = run(
            0,
            config(4, false),
            vec![
                epoch(1, 1.0, 0.1, 11),
                epoch(2, 1.1, 0.1, 11),
                epoch(3, 0.9, 0.1, 11),
            ],
        );
        let mut r = result(vec![config(4, false)], vec![restarting]);
        r.planned_epochs = 101;
        let saving = &Analysis::of(&r).break_even[0];
        assert_eq!(saving.persistent_config, None);
        assert!((saving.saved_per_epoch_s - 0.9).abs() < 1e-9);
        assert!((saving.saved_total_s - 90.0).abs() < 1e-9);
        assert!(saving.sentence.contains("estimated from its restart cost"));
        assert!(saving.sentence.ends_with("over 101 epochs that is 90.0 s"));
        // Later epochs that start as fast as a steady batch: nothing saved, said so, not
        // "-0.00 s per epoch slower".
        let steady = run(
            0,
            config(4, false),
            vec![epoch(1, 0.1, 0.1, 11), epoch(2, 0.1, 0.1, 11)],
        );
        let r = result(vec![config(4, false)], vec![steady]);
        let saving = &Analysis::of(&r).break_even[0];
        assert_eq!(
            saving.sentence,
            "Persistent workers save nothing for nw=4 (estimated from its restart cost, an \
             upper bound)"
        );
    }

    /// Threads that the runtime starts every epoch cannot persist: SPDL's pipeline
    /// threads and torchdata.nodes' (the plan refuses them persistent), so no saving is
    /// offered for them, however much their restart costs.
    #[test]
    fn threads_that_cannot_persist_are_offered_no_saving() {
        use loaderbench_engine::plan::Config;
        use loaderbench_engine::preset::{Runtime, WorkerKind};
        let spdl = Config {
            runtime: Runtime::Spdl,
            ..config(2, false)
        };
        let nodes = Config {
            runtime: Runtime::Pytorch,
            worker_kind: WorkerKind::Thread,
            ..config(2, false)
        };
        let configs = vec![spdl, nodes, config(2, false)];
        let analysis = Analysis::of(&each_once(configs, || two_epochs(0.5, 0.1, 11)));
        let offered: Vec<usize> = analysis.break_even.iter().map(|b| b.config).collect();
        assert_eq!(offered, [2], "{:?}", analysis.break_even);
    }
}
