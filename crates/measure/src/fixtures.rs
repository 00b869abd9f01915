//! Recorded-style results built by hand, so each test states the numbers it is about;
//! built for this crate's tests and, with the `fixtures` feature, for the tests of the
//! layers above.

use crate::results::{BatchRecord, ConfigResult, EpochResult, RunResult, RunStatus};
use loaderbench_engine::loader::{StageTimes, WorkerStartup};
use loaderbench_engine::machine::Machine;
use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::{
    BatchTransfer, Cache, DatasetTransfer, IntraOpThreads, Runtime, StartMethod, WorkerKind,
};
use loaderbench_engine::step::StepSpec;
use loaderbench_engine::transform::PipelineSpec;

pub fn config(num_workers: usize, persistent: bool) -> Config {
    Config {
        pipeline: PipelineSpec::Light,
        transform_at: Default::default(),
        batch_size: 64,
        num_workers,
        worker_kind: WorkerKind::Thread,
        persistent_workers: persistent,
        prefetch_factor: 2,
        pin_memory: false,
        in_order: true,
        device: "cpu".parse().expect("cpu is a device"),
        dataset_transfer: DatasetTransfer::Reopen,
        batch_transfer: BatchTransfer::SharedMemory,
        runtime: Runtime::Loaderbench,
        start_method: StartMethod::platform_default(),
        intra_op_threads: IntraOpThreads::Auto,
        ranks: 1,
        cache: Cache::Warm,
        copy: 0,
        run: None,
    }
}

/// [`config`] measured by the PyTorch runtime (its other knobs as there), not persistent.
pub fn pytorch_config(num_workers: usize) -> Config {
    Config {
        runtime: Runtime::Pytorch,
        ..config(num_workers, false)
    }
}

/// An epoch of `batches` batches of 64 samples: the first arrives after
/// `first_batch_s`, the rest every `batch_s`, each after waiting `wait_s`.
pub fn epoch(number: usize, first_batch_s: f64, batch_s: f64, batches: usize) -> EpochResult {
    epoch_with_wait(number, first_batch_s, batch_s, batches, 0.0)
}

/// Two alike epochs, numbered 1 and 2, as [`epoch`] makes them.
pub fn two_epochs(first_batch_s: f64, batch_s: f64, batches: usize) -> Vec<EpochResult> {
    vec![
        epoch(1, first_batch_s, batch_s, batches),
        epoch(2, first_batch_s, batch_s, batches),
    ]
}

pub fn epoch_with_wait(
    number: usize,
    first_batch_s: f64,
    batch_s: f64,
    batches: usize,
    wait_s: f64,
) -> EpochResult {
    let timeline = (0..batches)
        .map(|index| BatchRecord {
            index,
            at_s: first_batch_s + index as f64 * batch_s,
            samples: 64,
            stages: StageTimes {
                wait_s: if index == 0 { first_batch_s } else { wait_s },
                ..StageTimes::default()
            },
        })
        .collect();
    let seconds = first_batch_s + (batches - 1) as f64 * batch_s;
    EpochResult::from_batches(number, seconds, timeline, Vec::new())
}

/// One repeat of config `index` with the given epochs.
pub fn run(index: usize, config: Config, epochs: Vec<EpochResult>) -> ConfigResult {
    ConfigResult {
        config_index: index,
        repeat: 0,
        label: String::new(),
        config,
        warmup: None,
        epochs,
        pin_memory_effective: false,
        intra_op_threads: 1,
        other_load_cores: Some(0.0),
        disturbed: false,
        rss_before_bytes: Some(100 << 20),
        peak_rss_bytes: Some(200 << 20),
        ..ConfigResult::default()
    }
}

/// Adds start-ups of `seconds` for each worker to every epoch.
pub fn with_startups(mut run: ConfigResult, epochs: &[usize], seconds: f64) -> ConfigResult {
    for epoch in &mut run.epochs {
        if epochs.contains(&epoch.epoch) {
            epoch.worker_startups = (0..run.config.num_workers)
                .map(|worker| WorkerStartup { worker, seconds })
                .collect();
        }
    }
    run
}

/// A finished run of `configs`, each measured once with the epochs `epochs` gives it.
pub fn each_once(configs: Vec<Config>, epochs: impl Fn() -> Vec<EpochResult>) -> RunResult {
    let runs = (0..configs.len())
        .map(|i| run(i, configs[i].clone(), epochs()))
        .collect();
    result(configs, runs)
}

/// A finished run of `configs` with `results`, labels `nw=N[ persistent]`.
pub fn result(configs: Vec<Config>, results: Vec<ConfigResult>) -> RunResult {
    let labels = configs
        .iter()
        .map(|c| {
            let mut label = format!("nw={}", c.num_workers);
            if c.persistent_workers {
                label.push_str(" persistent");
            }
            label
        })
        .collect();
    let epochs = results.iter().map(|r| r.epochs.len()).max().unwrap_or(0);
    let mut repeats_seen = vec![0; configs.len()];
    let results = results
        .into_iter()
        .map(|mut r| {
            r.repeat = repeats_seen[r.config_index];
            repeats_seen[r.config_index] += 1;
            r
        })
        .collect();
    RunResult {
        preset: "test".to_owned(),
        dataset: "synthetic".to_owned(),
        epochs,
        repeats: 1,
        started_unix_s: 0,
        machine: Machine {
            cpu_model: "test cpu".to_owned(),
            logical_cores: 8,
            os: "test os".to_owned(),
            total_memory_bytes: None,
            available_memory_bytes: None,
            libtorch: "2".to_owned(),
            tch: "0.26".to_owned(),
            loaderbench: "0.1".to_owned(),
            default_intra_op_threads: 8,
            cuda_devices: 0,
        },
        configs,
        labels,
        warnings: Vec::new(),
        results,
        status: RunStatus::Finished,
        step: StepSpec::None,
        planned_epochs: 50,
        shuffle: true,
        drop_last: false,
        setup: None,
        tune: None,
    }
}
