//! Ranks merged into one result: what a config's processes came to together
//! ([`RanksSummary`]), one epoch of all ranks as the slowest rank's figures with every
//! rank's own kept ([`merge`]).
//! Plain data and pure functions that both multi-process runtimes share: our ranks
//! coordinator and the PyTorch runtime's torch.distributed ranks.

use serde::{Deserialize, Serialize};

use crate::results::{EpochResult, RankEpoch};

/// What a config's processes came to, for its result: one rank's or all ranks' together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RanksSummary {
    pub pin_memory_effective: bool,
    pub intra_op_threads: i32,
    pub rss_before_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
}

impl RanksSummary {
    /// All ranks together: memory summed.
    pub fn total(ranks: Vec<RanksSummary>) -> Option<RanksSummary> {
        let sum = |values: Vec<Option<u64>>| values.into_iter().sum::<Option<u64>>();
        let first = ranks.first()?.clone();
        Some(RanksSummary {
            rss_before_bytes: sum(ranks.iter().map(|r| r.rss_before_bytes).collect()),
            peak_rss_bytes: sum(ranks.iter().map(|r| r.peak_rss_bytes).collect()),
            ..first
        })
    }
}

/// One epoch of all ranks: the slowest rank's figures, samples and throughput summed
/// over the ranks, and each rank's own. Each rank's epoch comes with when it left the
/// barrier and when it ended the epoch (Unix seconds). The PyTorch runtime's ranks are
/// merged here too.
pub fn merge(epoch: usize, finished: Vec<(EpochResult, f64, f64)>) -> EpochResult {
    let ranks: Vec<RankEpoch> = finished
        .iter()
        .enumerate()
        .map(
            |(rank, (result, started_unix_s, finished_unix_s))| RankEpoch {
                rank,
                seconds: result.seconds,
                first_batch_s: result.first_batch_s,
                stall_s: result.stages.wait_s,
                samples: result.samples,
                started_unix_s: *started_unix_s,
                finished_unix_s: *finished_unix_s,
            },
        )
        .collect();
    let samples = finished.iter().map(|(r, ..)| r.samples).sum();
    let steady_throughput = finished.iter().map(|(r, ..)| r.steady_throughput).sum();
    let mut slowest = finished
        .into_iter()
        .map(|(result, ..)| result)
        .max_by(|a, b| a.seconds.total_cmp(&b.seconds))
        .unwrap_or_else(|| EpochResult::from_batches(epoch, 0.0, Vec::new(), Vec::new()));
    slowest.epoch = epoch;
    slowest.samples = samples;
    slowest.throughput = if slowest.seconds > 0.0 {
        samples as f64 / slowest.seconds
    } else {
        0.0
    };
    slowest.steady_throughput = steady_throughput;
    slowest.ranks = ranks;
    slowest
}
