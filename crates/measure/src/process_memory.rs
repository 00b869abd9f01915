//! The memory of every process of a config, as results keep it: each process (the main
//! process, each worker, each rank, and helpers such as Python's resource tracker) with
//! its kind, its pid and, per epoch, a short series of its proportional set size (PSS:
//! shared pages divided among their sharers) and its private bytes (the unique set
//! size), with their peaks over every sample taken. An epoch's [`EpochMemory`] holds the
//! config's memory: the peak over the epoch of the sum of its processes' PSS, taken one
//! sweep at a time, so what the machine really spends, shared pages counted once, and
//! what sampling cost. [`MemoryWatch`](crate::memory_watch::MemoryWatch) takes the
//! samples; this module is plain data and the arithmetic over it.

use serde::{Deserialize, Serialize};

/// The most points a process's series keeps per epoch; past it, every other point is
/// dropped and the series samples at half the rate (its peaks still cover every sample).
pub const SERIES_POINTS: usize = 64;

/// What a process is to the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessKind {
    /// The process that trains: ours for our engine, the Python script's for PyTorch.
    Main,
    /// One of the loader's worker processes.
    Worker,
    /// One training process of several (`ranks > 1`).
    Rank,
    /// A process that is neither, such as multiprocessing's resource tracker.
    Helper,
}

impl ProcessKind {
    pub fn name(self) -> &'static str {
        match self {
            ProcessKind::Main => "main",
            ProcessKind::Worker => "worker",
            ProcessKind::Rank => "rank",
            ProcessKind::Helper => "helper",
        }
    }
}

/// One sample of one process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryPoint {
    /// Seconds since the epoch began.
    pub at_s: f64,
    pub pss_bytes: u64,
    pub private_bytes: u64,
}

/// One process's memory through one epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessEpoch {
    pub epoch: usize,
    /// At most [`SERIES_POINTS`] samples, evenly thinned, first and last kept.
    pub series: Vec<MemoryPoint>,
    pub peak_pss_bytes: u64,
    pub peak_private_bytes: u64,
    pub peak_rss_bytes: u64,
}

impl ProcessEpoch {
    /// Private bytes at the first and the last sample.
    pub fn private_span(&self) -> Option<(u64, u64)> {
        Some((
            self.series.first()?.private_bytes,
            self.series.last()?.private_bytes,
        ))
    }
}

/// One process of a config, through the epochs it lived in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessMemory {
    pub kind: ProcessKind,
    pub pid: u32,
    /// The epochs it was seen in, in order.
    pub epochs: Vec<ProcessEpoch>,
}

/// The config's memory in one epoch, all its processes together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EpochMemory {
    /// The peak, over the epoch's sweeps, of the sum of every process's PSS.
    pub peak_pss_bytes: u64,
    /// Each kind of process's part, at the fullest sweep: the one that read the most
    /// processes, and of those the one with the largest sum. Their sum is at most the
    /// peak, which may come at a sweep before the workers started (where forked workers
    /// hold little of their own, forking only splits the main process's PSS among them),
    /// and a split taken there would give the workers nothing.
    pub main_pss_bytes: u64,
    pub worker_pss_bytes: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rank_pss_bytes: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub helper_pss_bytes: u64,
    /// Sweeps over the processes during the epoch.
    pub sweeps: usize,
    /// The CPU time the sweeps took, all together: what sampling cost the run.
    pub sampling_s: f64,
}

fn is_zero(bytes: &u64) -> bool {
    *bytes == 0
}

impl EpochMemory {
    /// The PSS of one kind of process at the fullest sweep.
    pub fn of_kind(&self, kind: ProcessKind) -> u64 {
        match kind {
            ProcessKind::Main => self.main_pss_bytes,
            ProcessKind::Worker => self.worker_pss_bytes,
            ProcessKind::Rank => self.rank_pss_bytes,
            ProcessKind::Helper => self.helper_pss_bytes,
        }
    }
}

/// A series being sampled: keeps at most [`SERIES_POINTS`] points by halving its rate.
#[derive(Debug, Clone, Default)]
pub struct SeriesBuilder {
    points: Vec<MemoryPoint>,
    /// Keep one sample in `stride`.
    stride: usize,
    seen: usize,
    last: Option<MemoryPoint>,
    peak_pss_bytes: u64,
    peak_private_bytes: u64,
    peak_rss_bytes: u64,
}

impl SeriesBuilder {
    pub fn push(&mut self, point: MemoryPoint, rss_bytes: u64) {
        self.stride = self.stride.max(1);
        self.peak_pss_bytes = self.peak_pss_bytes.max(point.pss_bytes);
        self.peak_private_bytes = self.peak_private_bytes.max(point.private_bytes);
        self.peak_rss_bytes = self.peak_rss_bytes.max(rss_bytes);
        if self.seen.is_multiple_of(self.stride) {
            if self.points.len() == SERIES_POINTS {
                let mut index = 0;
                self.points.retain(|_| {
                    index += 1;
                    index % 2 == 1
                });
                self.stride *= 2;
            }
            if self.seen.is_multiple_of(self.stride) {
                self.points.push(point);
            }
        }
        self.seen += 1;
        self.last = Some(point);
    }

    /// The epoch's series, its last sample kept even where the rate would drop it.
    pub fn finish(mut self, epoch: usize) -> ProcessEpoch {
        if let Some(last) = self.last
            && self.points.last() != Some(&last)
        {
            if self.points.len() == SERIES_POINTS {
                self.points.pop();
            }
            self.points.push(last);
        }
        ProcessEpoch {
            epoch,
            series: self.points,
            peak_pss_bytes: self.peak_pss_bytes,
            peak_private_bytes: self.peak_private_bytes,
            peak_rss_bytes: self.peak_rss_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(i: usize) -> MemoryPoint {
        MemoryPoint {
            at_s: i as f64,
            pss_bytes: i as u64,
            private_bytes: 2 * i as u64,
        }
    }

    #[test]
    fn a_long_series_is_thinned_evenly_with_its_ends_and_peaks_kept() {
        let mut series = SeriesBuilder::default();
        for i in 0..1000 {
            series.push(point(i), 3 * i as u64);
        }
        let epoch = series.finish(1);
        assert!(
            epoch.series.len() <= SERIES_POINTS,
            "{}",
            epoch.series.len()
        );
        assert!(
            epoch.series.len() >= SERIES_POINTS / 2,
            "{}",
            epoch.series.len()
        );
        assert_eq!(epoch.series.first(), Some(&point(0)));
        assert_eq!(epoch.series.last(), Some(&point(999)));
        let steps: Vec<f64> = epoch
            .series
            .windows(2)
            .map(|w| w[1].at_s - w[0].at_s)
            .collect();
        // Even, but for the last point kept out of turn.
        assert!(
            steps[..steps.len() - 1].windows(2).all(|w| w[0] == w[1]),
            "{steps:?}"
        );
        assert_eq!(epoch.peak_pss_bytes, 999);
        assert_eq!(epoch.peak_private_bytes, 1998);
        assert_eq!(epoch.peak_rss_bytes, 2997);
        assert_eq!(epoch.private_span(), Some((0, 1998)));
    }

    #[test]
    fn a_short_series_keeps_every_sample() {
        let mut series = SeriesBuilder::default();
        for i in 0..10 {
            series.push(point(i), 0);
        }
        let epoch = series.finish(2);
        assert_eq!(epoch.series, (0..10).map(point).collect::<Vec<_>>());
        assert_eq!(epoch.epoch, 2);
    }
}
