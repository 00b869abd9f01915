//! Process memory: the resident set size now and its peak since the last reset, read
//! from /proc on Linux (where the peak can be reset, so each config gets its own) and
//! from getrusage elsewhere on Unix. `None` where neither exists. Any process (a worker,
//! a rank, the PyTorch runtime's Python) is read from `/proc/PID/smaps_rollup` with its
//! proportional set size (shared pages divided among their sharers) and its private
//! pages (the unique set size: what ending the process would free). Also the memory the
//! machine has available, which the checks of what a dataset may take compare with.

/// Resets the peak resident set size so the next reading covers only what follows.
/// Returns whether the platform supports it.
pub fn reset_peak_rss() -> bool {
    // Writing 5 to clear_refs resets VmHWM (Linux 4.0+).
    cfg!(target_os = "linux") && std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Peak resident set size of this process, in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM:")
        .map(|kib| kib * 1024)
        .or_else(rusage_peak_bytes)
}

/// Current resident set size of this process, in bytes.
pub fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|kib| kib * 1024)
}

fn status_kib(field: &str) -> Option<u64> {
    field_kib(&std::fs::read_to_string("/proc/self/status").ok()?, field)
}

/// Memory of another process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessMemory {
    pub rss_bytes: u64,
    /// Proportional set size: shared pages divided among their sharers (Linux only).
    pub pss_bytes: Option<u64>,
    /// Pages no other process maps, clean and dirty: the unique set size (Linux only).
    pub private_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
}

/// The memory of process `pid`, from `/proc/PID/smaps_rollup` and `/proc/PID/status`
/// (Linux); `None` elsewhere or once the process is gone.
pub fn process_memory(pid: u32) -> Option<ProcessMemory> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_bytes = field_kib(&status, "VmRSS:")? * 1024;
    let rollup_bytes = |field| {
        rollup
            .as_deref()
            .and_then(|text| field_kib(text, field))
            .map(|kib| kib * 1024)
    };
    let private_bytes = rollup_bytes("Private_Clean:")
        .zip(rollup_bytes("Private_Dirty:"))
        .map(|(clean, dirty)| clean + dirty);
    Some(ProcessMemory {
        rss_bytes,
        pss_bytes: rollup_bytes("Pss:"),
        private_bytes,
        peak_rss_bytes: field_kib(&status, "VmHWM:").map(|kib| kib * 1024),
    })
}

/// The value of a `Name:   123 kB` line.
fn field_kib(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[cfg(unix)]
fn rusage_peak_bytes() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    let max = u64::try_from(usage.ru_maxrss).ok()?;
    // macOS reports bytes, the other Unixes KiB.
    Some(if cfg!(target_os = "macos") {
        max
    } else {
        max * 1024
    })
}

#[cfg(not(unix))]
fn rusage_peak_bytes() -> Option<u64> {
    None
}

/// The memory the kernel could give without swapping (`MemAvailable`), if it can be
/// read.
pub fn available_memory_bytes() -> Option<u64> {
    let memory = sysinfo::RefreshKind::nothing()
        .with_memory(sysinfo::MemoryRefreshKind::nothing().with_ram());
    let system = sysinfo::System::new_with_specifics(memory).ok()?;
    Some(system.available_memory()).filter(|&bytes| bytes > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_follows_an_allocation() {
        if !cfg!(target_os = "linux") {
            return;
        }
        // The peak is the whole process's: another test's thread that allocates and frees
        // between the reset and the first reading raises it beyond what the block adds.
        // Such a spike is seldom twice in a row; a peak that does not follow is never.
        let rose = |_| {
            assert!(reset_peak_rss());
            let before = peak_rss_bytes().unwrap();
            let block = vec![1u8; 64 << 20];
            std::hint::black_box(&block);
            let after = peak_rss_bytes().unwrap();
            (after >= before + (60 << 20), format!("{before} -> {after}"))
        };
        let tries: Vec<(bool, String)> = (0..3).map(rose).collect();
        assert!(tries.iter().any(|(rose, _)| *rose), "{tries:?}");
        assert!(rss_bytes().unwrap() > 0);
        let block = vec![1u8; 64 << 20];
        std::hint::black_box(&block);
        let own = process_memory(std::process::id()).unwrap();
        assert!(own.rss_bytes > 0 && own.pss_bytes.unwrap() > 0, "{own:?}");
        // The block is written by this process alone: its pages are private.
        assert!(own.private_bytes.unwrap() >= 60 << 20, "{own:?}");
    }
}
