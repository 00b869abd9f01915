//! The machine a result was measured on: CPU, cores, OS, the libtorch and crate
//! versions, the intra-op thread default and CUDA devices. Recorded with every run,
//! because loader figures only mean something next to the machine that produced them.

use serde::{Deserialize, Serialize};

use crate::device;

/// Where and with what a run was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub logical_cores: usize,
    pub os: String,
    pub total_memory_bytes: Option<u64>,
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
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
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
