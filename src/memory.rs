//! Process memory: the resident set size now and its peak since the last reset, read
//! from /proc on Linux (where the peak can be reset, so each config gets its own) and
//! from getrusage elsewhere on Unix. `None` where neither exists.

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
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_follows_an_allocation() {
        if !cfg!(target_os = "linux") {
            return;
        }
        assert!(reset_peak_rss());
        let before = peak_rss_bytes().unwrap();
        let block = vec![1u8; 64 << 20];
        std::hint::black_box(&block);
        let after = peak_rss_bytes().unwrap();
        assert!(after >= before + (60 << 20), "{before} -> {after}");
        assert!(rss_bytes().unwrap() > 0);
    }
}
