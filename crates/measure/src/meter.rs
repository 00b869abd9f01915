//! The interference meter: CPU counters read around each measured epoch, so every epoch
//! records how busy the machine was with anything other than this run
//! (`other_load_cores`) and how much CPU the run itself used (`own_cpu_s`). The run is
//! this process with every process below it (worker processes, the PyTorch runtime's
//! Python and its workers) and below the processes it [adopted](Adopted) (scripts a
//! shared preloaded Python forked for it); in the app, which measures in a child
//! process, the window's own drawing counts as other load. On Linux the counters come from /proc/stat and
//! /proc/<pid>/stat (clock ticks); elsewhere there are none and nothing is recorded.
//! The arithmetic is pure, over [`CpuCounters`] snapshots, so it is tested with fake
//! counters.

/// CPU counters at one instant, in seconds since boot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuCounters {
    /// Core-seconds the whole machine spent busy: user, system, interrupts and time
    /// stolen by a hypervisor; not idle and not I/O wait.
    pub machine_busy_s: f64,
    /// CPU seconds of this process and every process below it, including the children
    /// they have already reaped.
    pub own_s: f64,
    /// The counters' resolution: one clock tick.
    pub tick_s: f64,
    /// Logical cores the machine counts.
    pub cores: usize,
}

/// What the meter saw over one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interference {
    /// Average cores busy with anything but this run.
    pub other_load_cores: f64,
    /// CPU seconds the run used.
    pub own_cpu_s: f64,
    /// How far `other_load_cores` may be off from the counters' resolution alone: one
    /// tick per core for the machine, and one for the run, over the interval.
    pub resolution_cores: f64,
}

/// The interference between two readings taken `wall_s` apart.
pub fn interference(
    before: &CpuCounters,
    after: &CpuCounters,
    wall_s: f64,
) -> Option<Interference> {
    if wall_s <= 0.0 {
        return None;
    }
    let busy_s = (after.machine_busy_s - before.machine_busy_s).max(0.0);
    let own_cpu_s = (after.own_s - before.own_s).max(0.0);
    Some(Interference {
        other_load_cores: (busy_s - own_cpu_s).max(0.0) / wall_s,
        own_cpu_s,
        resolution_cores: (after.cores + 1) as f64 * after.tick_s / wall_s,
    })
}

/// A reading taken when an interval starts, to compare with the counters at its end.
pub struct Reading {
    at: std::time::Instant,
    counters: Option<CpuCounters>,
}

impl Reading {
    /// Reads the counters now.
    pub fn now() -> Reading {
        let counters = read();
        Reading {
            at: std::time::Instant::now(),
            counters,
        }
    }

    /// What the meter saw from this reading until now.
    pub fn interference_since(&self) -> Option<Interference> {
        let wall_s = self.at.elapsed().as_secs_f64();
        interference(self.counters.as_ref()?, &read()?, wall_s)
    }
}

/// Reads the counters now; `None` where the platform has none.
pub fn read() -> Option<CpuCounters> {
    #[cfg(target_os = "linux")]
    {
        linux::read()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// CPU seconds every thread of this process has used, to the nanosecond; `None` where
/// the platform does not say.
pub fn process_cpu_s() -> Option<f64> {
    #[cfg(unix)]
    {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        Some(now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// How often [`wait_for_quiet`] samples the process's CPU time.
const QUIET_SAMPLE: std::time::Duration = std::time::Duration::from_millis(4);
/// A sample is quiet when the process used less than this share of one core over it
/// (the sampling thread itself uses far less).
const QUIET_SHARE: f64 = 0.05;
/// Quiet samples in a row that make the process quiet (24 ms: longer than a display
/// frame).
const QUIET_SAMPLES_IN_A_ROW: usize = 6;

/// Waits, at most `limit`, until this process's threads have used (almost) no CPU for
/// [`QUIET_SAMPLES_IN_A_ROW`] samples: the runner does so before every epoch, in the CLI
/// and in the app's measuring child alike, so that the previous epoch's stragglers are
/// done and both faces start each epoch from the same rest.
pub fn wait_for_quiet(limit: std::time::Duration) {
    let deadline = std::time::Instant::now() + limit;
    let Some(mut before) = process_cpu_s() else {
        return;
    };
    let mut quiet = 0;
    while std::time::Instant::now() < deadline {
        std::thread::sleep(QUIET_SAMPLE);
        let Some(now) = process_cpu_s() else {
            return;
        };
        if now - before < QUIET_SHARE * QUIET_SAMPLE.as_secs_f64() {
            quiet += 1;
            if quiet == QUIET_SAMPLES_IN_A_ROW {
                return;
            }
        } else {
            quiet = 0;
        }
        before = now;
    }
}

/// Whether this platform has the counters the meter reads.
pub fn available() -> bool {
    cfg!(target_os = "linux")
}

/// Busy clock ticks of the whole machine from the text of /proc/stat, and its cores.
pub fn parse_machine_ticks(proc_stat: &str) -> Option<(u64, usize)> {
    let mut lines = proc_stat.lines();
    let total = lines.next()?;
    let mut fields = total.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let values: Vec<u64> = fields.map(|f| f.parse().ok()).collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let busy = [0, 1, 2, 5, 6, 7]
        .iter()
        .map(|&i| values.get(i).copied().unwrap_or(0))
        .sum();
    let cores = lines
        .filter(|line| {
            line.strip_prefix("cpu")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    Some((busy, cores.max(1)))
}

/// One process from the text of /proc/<pid>/stat: its parent and the clock ticks it
/// and its reaped children used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessTicks {
    pub parent: u32,
    pub ticks: u64,
}

/// Parses /proc/<pid>/stat; the command name may hold spaces and parentheses, so the
/// fields are counted from its last `)`.
pub fn parse_process_ticks(stat: &str) -> Option<ProcessTicks> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 3.. of proc(5): state, ppid, …, utime (14), stime, cutime, cstime (17).
    let number = |field: usize| fields.get(field - 3)?.parse::<u64>().ok();
    Some(ProcessTicks {
        parent: u32::try_from(number(4)?).ok()?,
        ticks: number(14)? + number(15)? + number(16)? + number(17)?,
    })
}

/// The ticks of `roots` and every process below them, from `(pid, process)` pairs.
pub fn tree_ticks(roots: &[u32], processes: &[(u32, ProcessTicks)]) -> u64 {
    let members = forest(roots, processes);
    processes
        .iter()
        .filter(|(pid, _)| members.contains(pid))
        .map(|(_, process)| process.ticks)
        .sum()
}

/// `root` and every process below it, from `(pid, process)` pairs.
pub fn tree(root: u32, processes: &[(u32, ProcessTicks)]) -> Vec<u32> {
    let mut members = vec![root];
    let mut next = 0;
    while next < members.len() {
        let pid = members[next];
        next += 1;
        for (child, process) in processes {
            if process.parent == pid && !members.contains(child) {
                members.push(*child);
            }
        }
    }
    members
}

/// `root` and every process below it but those [standing by](StandingBy) and theirs
/// (`root` itself always): the processes of the config `root` runs.
pub fn config_tree(root: u32, processes: &[(u32, ProcessTicks)]) -> Vec<u32> {
    let standing_by = STANDING_BY.pids().clone();
    let kept: Vec<(u32, ProcessTicks)> = processes
        .iter()
        .filter(|(pid, _)| *pid == root || !standing_by.contains(pid))
        .copied()
        .collect();
    tree(root, &kept)
}

/// `roots` and every process below them, each once.
pub fn forest(roots: &[u32], processes: &[(u32, ProcessTicks)]) -> Vec<u32> {
    let mut members: Vec<u32> = roots
        .iter()
        .flat_map(|&root| tree(root, processes))
        .collect();
    members.sort_unstable();
    members.dedup();
    members
}

/// Pids listed for as long as their [`Listed`] guards are held (a pid twice where two
/// hold it).
struct PidList(std::sync::Mutex<Vec<u32>>);

impl PidList {
    const fn new() -> PidList {
        PidList(std::sync::Mutex::new(Vec::new()))
    }

    fn pids(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn list(&'static self, pid: u32) -> Listed {
        self.pids().push(pid);
        Listed { list: self, pid }
    }
}

/// A pid's place in a [`PidList`], given up when dropped.
struct Listed {
    list: &'static PidList,
    pid: u32,
}

impl Drop for Listed {
    fn drop(&mut self) {
        let mut pids = self.list.pids();
        if let Some(at) = pids.iter().position(|pid| *pid == self.pid) {
            pids.swap_remove(at);
        }
    }
}

/// The processes this run adopted.
static ADOPTED: PidList = PidList::new();

/// A process of this run that is not below this process (a script that a shared
/// preloaded Python forked for it), counted with every process below it as the run's
/// own for as long as this is held.
pub struct Adopted {
    _listed: Listed,
}

impl Adopted {
    pub fn new(pid: u32) -> Adopted {
        Adopted {
            _listed: ADOPTED.list(pid),
        }
    }
}

/// The processes of this run that belong to none of its configs.
static STANDING_BY: PidList = PidList::new();

/// A process below this one that belongs to none of the run's configs (a preloaded
/// Python, idle between the scripts it forks, each of which the config it measures
/// adopts): for as long as this is held, a config's processes ([`config_tree`]) leave it
/// and everything below it out. The run's CPU still counts it.
pub struct StandingBy {
    _listed: Listed,
}

impl StandingBy {
    pub fn new(pid: u32) -> StandingBy {
        StandingBy {
            _listed: STANDING_BY.list(pid),
        }
    }
}

/// The roots of the run's processes: this process and those it adopted.
fn run_roots() -> Vec<u32> {
    let mut roots = vec![std::process::id()];
    roots.extend(ADOPTED.pids().iter().copied());
    roots
}

/// Every process visible in /proc with its parent; none where /proc is missing.
pub fn processes() -> Vec<(u32, ProcessTicks)> {
    #[cfg(target_os = "linux")]
    {
        linux::processes()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

/// This process and every live process below it or below a process it adopted (worker
/// processes, ranks, the PyTorch runtime's Python and its workers); this process alone
/// where /proc is missing.
pub fn run_processes() -> Vec<u32> {
    #[cfg(target_os = "linux")]
    {
        forest(&run_roots(), &processes())
    }
    #[cfg(not(target_os = "linux"))]
    {
        vec![std::process::id()]
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::{
        CpuCounters, ProcessTicks, parse_machine_ticks, parse_process_ticks, run_roots, tree_ticks,
    };

    pub fn read() -> Option<CpuCounters> {
        let tick_s = 1.0 / rustix::param::clock_ticks_per_second() as f64;
        let (busy, cores) = parse_machine_ticks(&std::fs::read_to_string("/proc/stat").ok()?)?;
        let own = tree_ticks(&run_roots(), &processes());
        Some(CpuCounters {
            machine_busy_s: busy as f64 * tick_s,
            own_s: own as f64 * tick_s,
            tick_s,
            cores,
        })
    }

    /// Every process visible in /proc; one that ends while it is read is skipped.
    pub fn processes() -> Vec<(u32, ProcessTicks)> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| {
                let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                Some((pid, parse_process_ticks(&stat)?))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(machine_busy_s: f64, own_s: f64) -> CpuCounters {
        CpuCounters {
            machine_busy_s,
            own_s,
            tick_s: 0.01,
            cores: 2,
        }
    }

    #[test]
    fn other_load_is_the_machine_busy_time_the_run_did_not_use() {
        let seen = interference(&counters(100.0, 10.0), &counters(103.0, 11.0), 2.0).unwrap();
        assert!((seen.other_load_cores - 1.0).abs() < 1e-9, "{seen:?}");
        assert!((seen.own_cpu_s - 1.0).abs() < 1e-9);
        assert!((seen.resolution_cores - 0.015).abs() < 1e-9);
    }

    #[test]
    fn a_quiet_machine_has_no_other_load_even_when_ticks_round_the_other_way() {
        let seen = interference(&counters(100.0, 10.0), &counters(101.0, 11.02), 1.0).unwrap();
        assert_eq!(seen.other_load_cores, 0.0);
    }

    #[test]
    fn an_empty_interval_has_no_interference() {
        assert_eq!(
            interference(&counters(1.0, 1.0), &counters(1.0, 1.0), 0.0),
            None
        );
    }

    #[test]
    fn proc_stat_busy_ticks_leave_out_idle_and_iowait() {
        let text = "cpu  10 1 5 1000 7 2 3 4 0 0\ncpu0 5 0 2 500 3 1 1 2 0 0\ncpu1 5 1 3 500 4 1 2 2 0 0\nintr 1\n";
        assert_eq!(parse_machine_ticks(text), Some((25, 2)));
        assert_eq!(parse_machine_ticks("intr 1\n"), None);
    }

    #[test]
    fn process_stat_reads_past_a_name_with_spaces_and_parentheses() {
        let stat =
            "4242 (a (weird) name) S 17 4242 4242 0 -1 4194304 100 0 0 0 30 12 5 3 20 0 9 0 1 1 1";
        assert_eq!(
            parse_process_ticks(stat),
            Some(ProcessTicks {
                parent: 17,
                ticks: 50
            })
        );
        assert_eq!(parse_process_ticks("garbage"), None);
    }

    #[test]
    fn the_tree_counts_descendants_but_not_siblings_or_parents() {
        let process = |parent, ticks| ProcessTicks { parent, ticks };
        let processes = [
            (1, process(0, 1000)),
            (10, process(1, 7)),
            (11, process(10, 5)),
            (12, process(11, 3)),
            (20, process(1, 900)),
        ];
        assert_eq!(tree_ticks(&[10], &processes), 15);
        assert_eq!(tree_ticks(&[20], &processes), 900);
        assert_eq!(tree_ticks(&[11, 20], &processes), 908);
        // A root below another is counted once.
        assert_eq!(tree_ticks(&[10, 11], &processes), 15);
    }

    #[test]
    fn this_machine_has_counters_where_the_platform_does() {
        assert_eq!(read().is_some(), available());
        if let Some(now) = read() {
            assert!(now.own_s >= 0.0 && now.machine_busy_s > 0.0 && now.cores >= 1);
        }
    }
}
