//! The machine a result was measured on: CPU, cores, OS, the libtorch and crate
//! versions, the intra-op thread default and CUDA devices. Recorded with every run,
//! because loader figures only mean something next to the machine that produced them.
//! Linux reads the CPU model and memory from /proc as it always has; elsewhere (or
//! without /proc) the sysinfo crate gives them, so macOS and Windows record the real
//! machine too.

use serde::{Deserialize, Serialize};
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

use crate::device;

/// Where and with what a run was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub logical_cores: usize,
    pub os: String,
    pub total_memory_bytes: Option<u64>,
    /// Memory the kernel could give programs without swapping (`MemAvailable`) when the
    /// machine was read: the default memory limit of a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_memory_bytes: Option<u64>,
    pub libtorch: String,
    pub tch: String,
    pub loaderbench: String,
    /// libtorch's intra-op threads when nothing has changed them.
    pub default_intra_op_threads: i32,
    pub cuda_devices: usize,
}

impl Machine {
    /// Reads this machine's description.
    pub fn current() -> Machine {
        Machine {
            cpu_model: cpu_model(),
            logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            os: os_name(),
            total_memory_bytes: total_memory_bytes(),
            available_memory_bytes: crate::memory::available_memory_bytes(),
            libtorch: env!("LOADERBENCH_LIBTORCH_VERSION").to_owned(),
            tch: env!("LOADERBENCH_TCH_VERSION").to_owned(),
            loaderbench: env!("CARGO_PKG_VERSION").to_owned(),
            default_intra_op_threads: crate::loader::default_intra_op_threads(),
            cuda_devices: device::cuda_device_count(),
        }
    }

    /// One line for tables and logs.
    pub fn summary(&self) -> String {
        let device = match self.cuda_devices {
            0 => "no CUDA".to_owned(),
            n => format!("{n} CUDA device(s)"),
        };
        format!(
            "{} · {} logical cores · {} · libtorch {} · tch {} · loaderbench {} · {device}",
            self.cpu_model, self.logical_cores, self.os, self.libtorch, self.tch, self.loaderbench
        )
    }
}

fn cpu_model() -> String {
    proc_cpu_model()
        .or_else(sysinfo_cpu_model)
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

fn proc_cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, model)| model.trim().to_owned())
}

/// The first CPU's brand string, as the platform reports it.
fn sysinfo_cpu_model() -> Option<String> {
    let cpus = RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing());
    let system = System::new_with_specifics(cpus).ok()?;
    let brand = system.cpus().first()?.brand().trim().to_owned();
    (!brand.is_empty()).then_some(brand)
}

fn os_name() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|release| {
            release
                .lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|name| name.trim_matches('"').to_owned())
        });
    pretty.unwrap_or_else(|| std::env::consts::OS.to_owned())
}

fn total_memory_bytes() -> Option<u64> {
    proc_total_memory_bytes().or_else(sysinfo_total_memory_bytes)
}

fn proc_total_memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line["MemTotal:".len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

fn sysinfo_total_memory_bytes() -> Option<u64> {
    let memory = RefreshKind::nothing().with_memory(MemoryRefreshKind::nothing().with_ram());
    let system = System::new_with_specifics(memory).ok()?;
    Some(system.total_memory()).filter(|&bytes| bytes > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_the_real_cpu_and_memory() {
        let machine = Machine::current();
        assert_ne!(machine.cpu_model, std::env::consts::ARCH);
        assert!(!machine.cpu_model.is_empty());
        assert!(machine.total_memory_bytes.unwrap() > 256 << 20);
        let available = machine.available_memory_bytes.unwrap();
        assert!(available > 0 && available <= machine.total_memory_bytes.unwrap());
    }

    /// Where /proc exists, sysinfo (what other platforms use) must agree with it.
    #[test]
    fn sysinfo_agrees_with_proc() {
        if let Some(model) = proc_cpu_model() {
            assert_eq!(sysinfo_cpu_model(), Some(model));
        }
        assert!(sysinfo_cpu_model().is_some());
        let sysinfo = sysinfo_total_memory_bytes().unwrap();
        if let Some(proc) = proc_total_memory_bytes() {
            assert_eq!(sysinfo, proc);
        }
    }
}
