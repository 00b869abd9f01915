//! The memory watch: a thread that samples the memory of every process of a config
//! while its epochs run, from outside them, the same way for every runtime. It is given
//! the config's root processes (this process for our engine, the Python script for the
//! PyTorch runtime, each rank's process for ranks) and finds the rest as their
//! descendants in /proc at every sweep, but for a preloaded Python that stands by below
//! this process ([`meter::StandingBy`]): a descendant is a worker, or a helper where its
//! command line says it is multiprocessing's resource tracker or fork server. Each sweep
//! reads every process's `/proc/PID/smaps_rollup` (PSS and private bytes). Reading
//! smaps_rollup walks the process's page tables, so it is not free (measured here: 12 ms
//! for a 700 MB Python process): the watch takes the CPU time each sweep cost its thread
//! (not the wall time, which a busy machine stretches) and waits 1/[`COST_SHARE`] times
//! as long before the next, so that sampling takes at most that share of one core (never
//! more often than every [`FASTEST_INTERVAL`], never less than every
//! [`SLOWEST_INTERVAL`]), and each epoch records how many sweeps it took and their CPU
//! time. The runner opens and
//! closes each epoch ([`MemoryWatch::begin_epoch`], [`MemoryWatch::end_epoch`]), each with
//! a sweep of its own, so the first and last samples bracket the epoch; after the last
//! batch, while workers that end with the epoch (or a DataLoader's persistent ones,
//! which end with it after the last epoch) are still there, the runtime asks for one more
//! ([`MemoryWatch::sweep`]): an epoch shorter than the interval may otherwise have no
//! sweep that saw them.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::meter;
use crate::process_memory::{EpochMemory, MemoryPoint, ProcessKind, ProcessMemory, SeriesBuilder};
use loaderbench_engine::memory;

/// The shortest time between two sweeps.
pub const FASTEST_INTERVAL: Duration = Duration::from_millis(50);
/// The longest time between two sweeps, however much they cost: an epoch's workers are
/// seen at least this often.
pub const SLOWEST_INTERVAL: Duration = Duration::from_secs(2);
/// The most of one core the sweeps may take: each sweep sets the wait before the next
/// to its own time over this share.
pub const COST_SHARE: f64 = 0.05;

/// Samples the memory of a config's processes; ends its thread when dropped.
pub struct MemoryWatch {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    roots: Vec<(u32, ProcessKind)>,
    open: Option<OpenEpoch>,
    processes: Vec<ProcessMemory>,
    interval: Duration,
    stop: bool,
}

/// The epoch being sampled.
struct OpenEpoch {
    number: usize,
    started: Instant,
    series: HashMap<u32, (ProcessKind, SeriesBuilder)>,
    /// The epoch's memory so far: the largest PSS sum of a sweep, and each kind's part at
    /// the fullest sweep (see [`EpochMemory`]).
    memory: EpochMemory,
    /// How many processes the fullest sweep so far read, and their PSS sum.
    fullest: (usize, u64),
    sweeps: usize,
    sampling: Duration,
}

impl MemoryWatch {
    /// Starts watching `roots` (each with what it is to the config) and everything below
    /// them; nothing is sampled until an epoch begins.
    pub fn start(roots: Vec<(u32, ProcessKind)>) -> MemoryWatch {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                roots,
                interval: FASTEST_INTERVAL,
                ..State::default()
            }),
            wake: Condvar::new(),
        });
        let sampler = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("memory-watch".to_owned())
            .spawn(move || sampler.sample_until_stopped())
            // Without the thread, the epochs are still sampled at their ends.
            .ok();
        MemoryWatch { shared, thread }
    }

    /// Opens epoch `epoch` with a first sweep.
    pub fn begin_epoch(&self, epoch: usize) {
        let mut state = self.shared.lock();
        state.open = Some(OpenEpoch {
            number: epoch,
            started: Instant::now(),
            series: HashMap::new(),
            memory: EpochMemory {
                peak_pss_bytes: 0,
                main_pss_bytes: 0,
                worker_pss_bytes: 0,
                rank_pss_bytes: 0,
                helper_pss_bytes: 0,
                sweeps: 0,
                sampling_s: 0.0,
            },
            fullest: (0, 0),
            sweeps: 0,
            sampling: Duration::ZERO,
        });
        state.sweep();
        self.shared.wake.notify_all();
    }

    /// Sweeps now, when an epoch is open: before processes that are about to end do.
    pub fn sweep(&self) {
        self.shared.lock().sweep();
    }

    /// Whether an epoch is open.
    pub fn is_open(&self) -> bool {
        self.shared.lock().open.is_some()
    }

    /// Closes the open epoch with a last sweep and returns the config's memory over it;
    /// `None` when no epoch was open or no process could be read.
    pub fn end_epoch(&self) -> Option<EpochMemory> {
        let mut state = self.shared.lock();
        state.sweep();
        let open = state.open.take()?;
        let mut series: Vec<(u32, (ProcessKind, SeriesBuilder))> =
            open.series.into_iter().collect();
        series.sort_unstable_by_key(|(pid, _)| *pid);
        for (pid, (kind, builder)) in series {
            let epoch = builder.finish(open.number);
            match state.processes.iter_mut().find(|p| p.pid == pid) {
                Some(process) => {
                    process.kind = kind;
                    process.epochs.push(epoch);
                }
                None => state.processes.push(ProcessMemory {
                    kind,
                    pid,
                    epochs: vec![epoch],
                }),
            }
        }
        (open.sweeps > 0 && open.memory.peak_pss_bytes > 0).then_some(EpochMemory {
            sweeps: open.sweeps,
            sampling_s: open.sampling.as_secs_f64(),
            ..open.memory
        })
    }

    /// Every process seen so far, with its epochs (main and ranks first, then by pid),
    /// taken out of the watch.
    pub fn take_processes(&self) -> Vec<ProcessMemory> {
        let mut processes = std::mem::take(&mut self.shared.lock().processes);
        processes.sort_by_key(|p| (p.kind, p.pid));
        processes
    }
}

impl Drop for MemoryWatch {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn sample_until_stopped(&self) {
        let mut state = self.lock();
        while !state.stop {
            let interval = state.interval;
            state = self
                .wake
                .wait_timeout(state, interval)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
            if !state.stop {
                state.sweep();
            }
        }
    }
}

impl State {
    /// Reads every process of the config once, when an epoch is open.
    fn sweep(&mut self) {
        let Some(open) = self.open.as_mut() else {
            return;
        };
        let began = thread_cpu();
        let at_s = open.started.elapsed().as_secs_f64();
        let table = meter::processes();
        let mut sums: HashMap<ProcessKind, u64> = HashMap::new();
        let mut read = 0;
        for &(root, root_kind) in &self.roots {
            for pid in meter::config_tree(root, &table) {
                let Some(usage) = memory::process_memory(pid) else {
                    continue;
                };
                let (Some(pss_bytes), Some(private_bytes)) = (usage.pss_bytes, usage.private_bytes)
                else {
                    continue;
                };
                let kind = if pid == root {
                    root_kind
                } else {
                    let parent = table.iter().find(|(p, _)| *p == pid).map(|(_, t)| t.parent);
                    descendant_kind(pid, parent == Some(root))
                };
                *sums.entry(kind).or_default() += pss_bytes;
                read += 1;
                let point = MemoryPoint {
                    at_s,
                    pss_bytes,
                    private_bytes,
                };
                let (seen_as, series) = open
                    .series
                    .entry(pid)
                    .or_insert((kind, SeriesBuilder::default()));
                *seen_as = kind;
                series.push(point, usage.rss_bytes);
            }
        }
        let total: u64 = sums.values().sum();
        open.memory.peak_pss_bytes = open.memory.peak_pss_bytes.max(total);
        if (read, total) > open.fullest {
            open.fullest = (read, total);
            let of = |kind| sums.get(&kind).copied().unwrap_or(0);
            open.memory = EpochMemory {
                main_pss_bytes: of(ProcessKind::Main),
                worker_pss_bytes: of(ProcessKind::Worker),
                rank_pss_bytes: of(ProcessKind::Rank),
                helper_pss_bytes: of(ProcessKind::Helper),
                ..open.memory
            };
        }
        let took = thread_cpu().saturating_sub(began);
        open.sweeps += 1;
        open.sampling += took;
        self.interval = took
            .div_f64(COST_SHARE)
            .clamp(FASTEST_INTERVAL, SLOWEST_INTERVAL);
    }
}

/// The CPU time this thread has used (the wall clock where the platform has no such
/// clock).
fn thread_cpu() -> Duration {
    #[cfg(unix)]
    {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
    }
    #[cfg(not(unix))]
    {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed()
    }
}

/// What a process below a root is: a helper where its command line names
/// multiprocessing's resource tracker, or its fork server (the fork server's own
/// children, which show its command line, are the workers it forks), else a worker. Read
/// at every sweep: a process forked to become a helper shows its parent's command line
/// until it execs.
fn descendant_kind(pid: u32, parent_is_root: bool) -> ProcessKind {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmdline = String::from_utf8_lossy(&cmdline);
    let tracker = ["resource_tracker", "semaphore_tracker"]
        .iter()
        .any(|name| cmdline.contains(name));
    if tracker || (parent_is_root && cmdline.contains("forkserver")) {
        ProcessKind::Helper
    } else {
        ProcessKind::Worker
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that holds `mib` MiB of its own pages until its stdin closes.
    fn holding_child(mib: usize) -> std::process::Child {
        std::process::Command::new("python3")
            .args([
                "-c",
                &format!("import sys; block = bytearray({mib} << 20); sys.stdin.read()"),
            ])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs")
    }

    #[test]
    fn an_epoch_sees_this_process_and_a_child_with_its_private_pages() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let mut child = holding_child(96);
        let watch = MemoryWatch::start(vec![(std::process::id(), ProcessKind::Main)]);
        // Until the child has its block.
        let deadline = Instant::now() + Duration::from_secs(20);
        while memory::process_memory(child.id())
            .and_then(|m| m.private_bytes)
            .is_none_or(|b| b < 90 << 20)
        {
            assert!(Instant::now() < deadline, "the child never held its block");
            std::thread::sleep(Duration::from_millis(20));
        }
        watch.begin_epoch(1);
        std::thread::sleep(Duration::from_millis(300));
        let epoch = watch.end_epoch().expect("the epoch was sampled");
        drop(child.stdin.take());
        child.wait().unwrap();
        assert!(epoch.sweeps >= 3, "{epoch:?}");
        assert!(epoch.worker_pss_bytes >= 90 << 20, "{epoch:?}");
        assert!(epoch.main_pss_bytes > 0, "{epoch:?}");
        // At most: the other tests' children come and go below this process as well.
        assert!(
            epoch.main_pss_bytes + epoch.worker_pss_bytes + epoch.helper_pss_bytes
                <= epoch.peak_pss_bytes,
            "{epoch:?}"
        );
        let processes = watch.take_processes();
        assert_eq!(processes[0].kind, ProcessKind::Main);
        let child_trace = processes
            .iter()
            .find(|p| p.pid == child.id())
            .expect("the child was seen");
        assert_eq!(child_trace.kind, ProcessKind::Worker);
        assert!(child_trace.epochs[0].peak_private_bytes >= 90 << 20);
        assert!(child_trace.epochs[0].series.len() >= 3);
    }

    /// A main process that holds 160 MiB, then frees most of it and starts a worker: the
    /// peak is at the sweeps before, and the parts are those of the sweeps with both.
    #[test]
    fn the_parts_are_those_of_the_sweep_with_the_workers_where_the_peak_came_before() {
        if !cfg!(target_os = "linux") {
            return;
        }
        use std::io::{BufRead, BufReader, Write};
        let script = "import sys, subprocess\n\
            block = bytearray(160 << 20)\n\
            print('holding', flush=True)\n\
            sys.stdin.readline()\n\
            del block\n\
            worker = subprocess.Popen([sys.executable, '-c', \
              'import sys; b = bytearray(24 << 20); print(1, flush=True); sys.stdin.read()'], \
              stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n\
            worker.stdout.readline()\n\
            print('started', flush=True)\n\
            sys.stdin.readline()\n\
            worker.stdin.close()\n\
            worker.wait()\n";
        let mut main = std::process::Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut stdin = main.stdin.take().unwrap();
        let mut lines = BufReader::new(main.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "holding");
        let watch = MemoryWatch::start(vec![(main.id(), ProcessKind::Main)]);
        watch.begin_epoch(1);
        std::thread::sleep(Duration::from_millis(200));
        writeln!(stdin).unwrap();
        assert_eq!(lines.next().unwrap().unwrap(), "started");
        std::thread::sleep(Duration::from_millis(200));
        let epoch = watch.end_epoch().expect("the epoch was sampled");
        writeln!(stdin).unwrap();
        main.wait().unwrap();
        assert!(epoch.peak_pss_bytes >= 160 << 20, "{epoch:?}");
        assert!(epoch.worker_pss_bytes >= 20 << 20, "{epoch:?}");
        assert!(epoch.main_pss_bytes < 100 << 20, "{epoch:?}");
        assert!(
            epoch.main_pss_bytes + epoch.worker_pss_bytes < epoch.peak_pss_bytes,
            "{epoch:?}"
        );
    }

    #[test]
    fn nothing_is_sampled_outside_an_epoch() {
        let watch = MemoryWatch::start(vec![(std::process::id(), ProcessKind::Main)]);
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(watch.end_epoch(), None);
        assert!(watch.take_processes().is_empty());
    }
}
