//! Bytes read from storage in an epoch: the `read_bytes` of /proc/<pid>/io (what a
//! process made the kernel fetch from a block device, page faults of its memory maps
//! included; nothing for the page cache or tmpfs) for this process and every live
//! process below it, read just before an epoch's clock starts and just after it stops.
//! Linux adds a reaped child's counts to its parent's, so a worker that starts and ends
//! inside the epoch is counted through its parent, and one that was alive at the start
//! but reaped since would be counted twice: [`ReadCounters::read_since`] takes its count
//! at the start off. Linux only; elsewhere nothing is recorded.

use std::collections::BTreeMap;

/// Each process's `read_bytes` at one instant, by pid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadCounters(pub BTreeMap<u32, u64>);

impl ReadCounters {
    /// The counters of this process and every live process below it; `None` where the
    /// kernel keeps none.
    pub fn now() -> Option<ReadCounters> {
        let mut counters = BTreeMap::new();
        for pid in crate::meter::run_processes() {
            let io = std::fs::read_to_string(format!("/proc/{pid}/io"));
            match io.ok().as_deref().and_then(parse_read_bytes) {
                Some(bytes) => {
                    counters.insert(pid, bytes);
                }
                // A process that ended while it was read is counted through its parent.
                None if pid != std::process::id() => {}
                None => return None,
            }
        }
        Some(ReadCounters(counters))
    }

    /// Bytes the processes read from storage between `self` and `later`: what each
    /// process at `later` read since `self` (all of it when it is new), less the count
    /// at `self` of each process gone by `later`, whose whole count its parent took.
    pub fn read_since(&self, later: &ReadCounters) -> u64 {
        let grown: i128 = later
            .0
            .iter()
            .map(|(pid, &now)| {
                let before = self.0.get(pid).copied().unwrap_or(0);
                // A pid reused by a new process reads lower: all of it is new.
                i128::from(if now >= before { now - before } else { now })
            })
            .sum();
        let reaped: i128 = self
            .0
            .iter()
            .filter(|(pid, _)| !later.0.contains_key(pid))
            .map(|(_, &before)| i128::from(before))
            .sum();
        u64::try_from((grown - reaped).max(0)).unwrap_or(u64::MAX)
    }
}

/// The `read_bytes` line of /proc/<pid>/io.
pub fn parse_read_bytes(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|line| line.strip_prefix("read_bytes:"))
        .and_then(|value| value.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(pairs: &[(u32, u64)]) -> ReadCounters {
        ReadCounters(pairs.iter().copied().collect())
    }

    #[test]
    fn read_bytes_comes_from_its_line() {
        let io = "rchar: 100\nwchar: 5\nsyscr: 3\nsyscw: 1\nread_bytes: 8192\nwrite_bytes: 0\n";
        assert_eq!(parse_read_bytes(io), Some(8192));
        assert_eq!(parse_read_bytes("rchar: 1\n"), None);
    }

    #[test]
    fn live_processes_count_what_they_read_and_new_ones_all_of_it() {
        let before = counters(&[(1, 100), (2, 50)]);
        let after = counters(&[(1, 130), (2, 70), (3, 40)]);
        assert_eq!(before.read_since(&after), 30 + 20 + 40);
    }

    #[test]
    fn a_reaped_worker_counts_once_through_its_parent() {
        // Worker 2 read 50 before the epoch and 20 in it, then was reaped: its parent's
        // count grew by its own 10 and the worker's whole 70.
        let before = counters(&[(1, 100), (2, 50)]);
        let after = counters(&[(1, 180)]);
        assert_eq!(before.read_since(&after), 10 + 20);
    }

    #[test]
    fn this_process_has_counters_on_linux() {
        let now = ReadCounters::now();
        assert_eq!(now.is_some(), cfg!(target_os = "linux"));
        if let Some(now) = now {
            assert!(now.0.contains_key(&std::process::id()));
            assert_eq!(now.read_since(&now), 0);
        }
    }
}
