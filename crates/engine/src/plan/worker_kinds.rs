//! Worker kinds on each runtime: what a config's `worker_kind` becomes once its runtime
//! and `num_workers` are known ([`settled`]), and the knobs a runtime and kind cannot
//! honour, each refused in one line that names the knob and the runtime ([`check`],
//! [`check_dataset`]). Our engine runs every kind, `auto` being its threads. The PyTorch
//! runtime runs DataLoader's own process workers for `auto` (started by `start_method`),
//! `fork` and `spawn` (started that way), and torchdata.nodes' `ParallelMapper` threads
//! for `thread`; without workers every kind there is DataLoader's main-process loop.
//! The SPDL runtime's workers are threads (`auto` is `thread`; what else it refuses is
//! `spdl_knobs`'s). Our engine's process transfers are refused on both Python runtimes
//! here.

use super::Config;
use crate::dataset::DatasetKind;
use crate::error::FieldError;
use crate::preset::{BatchTransfer, DatasetTransfer, Runtime, StartMethod, WorkerKind};

/// A refusal of the preset field `name`.
fn field(name: &str, problem: impl std::fmt::Display) -> FieldError {
    FieldError::new(None, name, problem.to_string())
}

/// The kind `config` runs: `auto` is thread on our engine; on the PyTorch runtime every
/// kind without workers is `auto` (DataLoader's main-process loop), so configs that
/// differ only there collapse into one.
pub(super) fn settled(config: &Config) -> WorkerKind {
    match config.runtime {
        Runtime::Loaderbench if config.worker_kind == WorkerKind::Auto => WorkerKind::Thread,
        Runtime::Pytorch if config.num_workers == 0 => WorkerKind::Auto,
        // SPDL's workers are threads; without workers it is DataLoader's loop.
        Runtime::Spdl if config.worker_kind == WorkerKind::Auto || config.num_workers == 0 => {
            WorkerKind::Thread
        }
        _ => config.worker_kind,
    }
}

/// The start method a PyTorch config's process kind asks for (`worker_kind: spawn` is
/// DataLoader's workers started with spawn), used where the preset gives none.
pub(super) fn start_method_of_kind(config: &Config) -> Option<StartMethod> {
    if config.runtime != Runtime::Pytorch || config.num_workers == 0 {
        return None;
    }
    match config.worker_kind {
        WorkerKind::Fork => Some(StartMethod::Fork),
        WorkerKind::Spawn => Some(StartMethod::Spawn),
        _ => None,
    }
}

/// The kind a settled config of `runtime` has when the preset leaves the knob out.
fn runtime_default(runtime: Runtime) -> WorkerKind {
    match runtime {
        Runtime::Loaderbench => WorkerKind::Thread,
        Runtime::Pytorch => WorkerKind::Auto,
        Runtime::Spdl => WorkerKind::Thread,
    }
}

/// A settled `config`'s kind as labels tell kinds apart: `None` for its runtime's
/// default (thread on our engine, `auto` on the PyTorch runtime), so that configs of
/// both runtimes at their defaults name no kind, as before `auto` existed.
pub(super) fn label_kind(config: &Config) -> Option<WorkerKind> {
    (config.worker_kind != runtime_default(config.runtime)).then_some(config.worker_kind)
}

/// The worker kind of the plan's common config (whose runtime is `runtime`): the most
/// common of the configs' [`label_kind`]s, the runtimes' defaults on a tie.
pub(super) fn common_kind(configs: &[Config], runtime: Runtime) -> WorkerKind {
    let kinds: Vec<Option<WorkerKind>> = configs.iter().map(label_kind).collect();
    let count = |kind: &Option<WorkerKind>| kinds.iter().filter(|k| *k == kind).count();
    let most = kinds
        .iter()
        .max_by_key(|kind| (count(kind), kind.is_none()));
    most.copied().flatten().unwrap_or(runtime_default(runtime))
}

/// Refuses what a settled `config`'s runtime and worker kind cannot honour.
pub(super) fn check(config: &Config) -> Result<(), FieldError> {
    if !config.runtime.runs_python() {
        return Ok(());
    }
    let runtime = config.runtime.name();
    if config.dataset_transfer != DatasetTransfer::default() {
        let value = config.dataset_transfer.name();
        return Err(engine_only("dataset_transfer", value, runtime));
    }
    if config.batch_transfer != BatchTransfer::default() {
        let value = config.batch_transfer.name();
        return Err(engine_only("batch_transfer", value, runtime));
    }
    if config.runtime != Runtime::Pytorch {
        return Ok(());
    }
    match config.worker_kind {
        WorkerKind::Fork | WorkerKind::Spawn if config.uses_start_method() => {
            let kind = config.worker_kind.name();
            let method = config.start_method.name();
            if method != kind {
                return Err(field(
                    "start_method",
                    format!(
                        "{method} disagrees with worker_kind: {kind} on the pytorch runtime, \
                         whose DataLoader starts its workers with {kind}; give one of the \
                         two, or worker_kind: auto to let start_method pick"
                    ),
                ));
            }
        }
        WorkerKind::Thread if config.num_workers > 0 && config.persistent_workers => {
            return Err(field(
                "persistent_workers",
                "true does not apply to worker_kind: thread on the pytorch runtime \
                 (torchdata.nodes' ParallelMapper starts its threads every epoch); leave \
                 it false, or use worker_kind: auto for DataLoader's process workers",
            ));
        }
        _ => {}
    }
    Ok(())
}

/// Refuses thread workers on the PyTorch runtime for a dataset that is not map-style:
/// torchdata.nodes maps the sampler's indices through `__getitem__`. (A user's python
/// dataset that turns out iterable is refused by the script, which finds out.) Refuses
/// our engine's `copy` transfer for a dataset of image files: it hands each worker every
/// sample decoded, as a pickled in-memory dataset arrives, while a pickled image folder
/// or set of shards is its list of files, which `reopen` gives a worker; measured, copy
/// made every epoch after the first decode nothing (6× as fast as threads on a JPEG
/// folder), and the recommendation named it.
pub(super) fn check_dataset(kind: DatasetKind, configs: &[Config]) -> Result<(), FieldError> {
    let copies = |c: &Config| {
        c.runtime == Runtime::Loaderbench
            && c.dataset_transfer == DatasetTransfer::Copy
            && matches!(c.worker_kind, WorkerKind::Fork | WorkerKind::Spawn)
            && c.num_workers > 0
    };
    let files = match kind {
        DatasetKind::ImageFolder => Some("an image folder pickles as its list of files"),
        DatasetKind::Shards => Some("tar shards pickle as their index"),
        _ => None,
    };
    if let Some(files) = files
        && configs.iter().any(copies)
    {
        return Err(field(
            "dataset_transfer",
            format!(
                "copy hands each worker process every sample decoded, as a pickled \
                 in-memory dataset arrives; {files}, which reopen gives a worker (with copy \
                 no epoch after the first would decode an image); use reopen"
            ),
        ));
    }
    let threads = |c: &Config| {
        c.runtime == Runtime::Pytorch && c.worker_kind == WorkerKind::Thread && c.num_workers > 0
    };
    if kind == DatasetKind::Shards && configs.iter().any(threads) {
        return Err(field(
            "worker_kind",
            "thread on the pytorch runtime maps a sampler's indices through a map-style \
             dataset (torchdata.nodes), and shards are read as a stream; use worker_kind: \
             auto for DataLoader's process workers",
        ));
    }
    Ok(())
}

/// The refusal of one of our engine's process-worker knobs on the PyTorch runtime.
fn engine_only(knob: &str, value: &str, runtime: &str) -> FieldError {
    field(
        knob,
        format!(
            "{value} does not apply to the {runtime} runtime (it is how our engine's worker \
             processes work); leave {knob} out there"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use crate::plan::test_plans::{plan, refusal};
    use crate::preset::StartMethod;

    #[test]
    fn auto_is_thread_on_our_engine_and_stays_auto_on_pytorch() {
        let ours = plan(&[("num_workers", "[0, 2]")]).unwrap();
        assert!(
            ours.configs
                .iter()
                .all(|c| c.worker_kind == WorkerKind::Thread)
        );
        let pytorch = plan(&[("runtime", "[pytorch]"), ("num_workers", "[2]")]).unwrap();
        assert_eq!(pytorch.configs[0].worker_kind, WorkerKind::Auto);
        assert!(pytorch.configs[0].uses_start_method());
    }

    #[test]
    fn labels_name_a_kind_only_where_it_is_not_its_runtimes_default() {
        let labels = |plan: Plan| -> Vec<String> { plan.labels() };
        let mixed = plan(&[
            ("runtime", "[loaderbench, pytorch]"),
            ("num_workers", "[2]"),
        ]);
        assert_eq!(labels(mixed.unwrap()), ["nw=2", "nw=2 pytorch"]);
        let pytorch = plan(&[
            ("runtime", "[pytorch]"),
            ("worker_kind", "[auto, thread]"),
            ("num_workers", "[2]"),
        ]);
        assert_eq!(labels(pytorch.unwrap()), ["nw=2", "nw=2 thread"]);
    }

    #[test]
    fn every_kind_without_workers_on_pytorch_is_one_config() {
        let plan = plan(&[
            ("runtime", "[pytorch]"),
            ("worker_kind", "[auto, thread, fork, spawn]"),
            ("num_workers", "[0]"),
        ])
        .unwrap();
        assert_eq!(plan.configs.len(), 1);
        assert_eq!(plan.configs[0].worker_kind, WorkerKind::Auto);
    }

    #[test]
    fn threads_on_pytorch_have_no_start_method() {
        let plan = plan(&[
            ("runtime", "[pytorch]"),
            ("worker_kind", "[thread]"),
            ("start_method", "[fork, spawn]"),
            ("num_workers", "[2]"),
        ])
        .unwrap();
        assert_eq!(plan.configs.len(), 1, "the start methods collapse");
        assert!(!plan.configs[0].uses_start_method());
        assert!(!plan.configs[0].forks_workers());
    }

    #[test]
    fn fork_and_spawn_on_pytorch_are_dataloader_workers_started_that_way() {
        let plan = plan(&[
            ("runtime", "[pytorch]"),
            ("worker_kind", "[spawn]"),
            ("start_method", "[spawn]"),
            ("num_workers", "[2]"),
        ])
        .unwrap();
        assert_eq!(plan.configs[0].start_method, StartMethod::Spawn);
        // Without a start method of its own, the preset's kind picks it.
        for kind in [StartMethod::Fork, StartMethod::Spawn] {
            let alone = self::plan(&[
                ("runtime", "[pytorch]"),
                ("worker_kind", &format!("[{}]", kind.name())),
                ("num_workers", "[2]"),
            ])
            .unwrap();
            assert_eq!(alone.configs[0].start_method, kind);
        }
        let refused = refusal(&[
            ("runtime", "[pytorch]"),
            ("worker_kind", "[spawn]"),
            ("start_method", "[forkserver]"),
            ("num_workers", "[2]"),
        ]);
        assert!(
            refused.starts_with("field `start_method`: forkserver disagrees with worker_kind: spawn on the pytorch runtime"),
            "{refused}"
        );
    }

    #[test]
    fn persistent_threads_on_pytorch_are_refused_naming_the_knob_and_runtime() {
        let refused = refusal(&[
            ("runtime", "[pytorch]"),
            ("worker_kind", "[thread]"),
            ("persistent_workers", "[true]"),
            ("num_workers", "[2]"),
        ]);
        assert!(
            refused.starts_with("field `persistent_workers`: true does not apply to worker_kind: thread on the pytorch runtime"),
            "{refused}"
        );
        assert!(!refused.contains('\n'));
        // Our engine's threads persist.
        plan(&[
            ("worker_kind", "[thread]"),
            ("persistent_workers", "[true]"),
            ("num_workers", "[2]"),
        ])
        .unwrap();
    }

    #[test]
    fn our_engines_transfers_are_refused_on_pytorch() {
        let refused = refusal(&[("runtime", "[pytorch]"), ("dataset_transfer", "[copy]")]);
        assert!(
            refused.starts_with(
                "field `dataset_transfer`: copy does not apply to the pytorch runtime"
            ),
            "{refused}"
        );
        let refused = refusal(&[("runtime", "[pytorch]"), ("batch_transfer", "[pipe]")]);
        assert!(
            refused.starts_with("field `batch_transfer`: pipe"),
            "{refused}"
        );
    }

    /// Copied into fork workers, a JPEG folder's epochs after the first decoded nothing:
    /// 0.015 s against threads' 0.083 s, and the recommendation named it.
    #[test]
    fn copy_is_refused_for_a_dataset_of_image_files_and_kept_for_one_in_memory() {
        let copied = |kind: &str, path: &str| {
            plan(&[
                ("worker_kind", "[fork, spawn]"),
                ("num_workers", "[2]"),
                ("dataset_transfer", "[reopen, copy]"),
                ("dataset.kind", kind),
                ("dataset.path", path),
            ])
            .map(|plan| plan.configs.len())
            .map_err(|err| err.to_string())
        };
        for (kind, path, what) in [
            (
                "image_folder",
                "images",
                "an image folder pickles as its list of files",
            ),
            ("shards", "s-{0..1}.tar", "tar shards pickle as their index"),
        ] {
            let refused = copied(kind, path).unwrap_err();
            assert!(
                refused.starts_with("field `dataset_transfer`: copy hands each worker process")
                    && refused.contains(what),
                "{refused}"
            );
        }
        assert_eq!(copied("synthetic", "").unwrap(), 4);
    }

    #[test]
    fn threads_on_pytorch_refuse_shards() {
        let refused = refusal(&[
            ("runtime", "[pytorch]"),
            ("worker_kind", "[thread]"),
            ("num_workers", "[2]"),
            ("dataset.kind", "shards"),
            ("dataset.path", "s-{0..1}.tar"),
        ]);
        assert!(
            refused.starts_with("field `worker_kind`: thread on the pytorch runtime"),
            "{refused}"
        );
    }
}
