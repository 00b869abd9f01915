//! The knob table's records, one per knob, in config order (see the table's own docs
//! in [`super`]).

use super::{Column, Knob, Python, json, python_bool, rank_threads};
use crate::plan::{Config, worker_kinds};
use crate::preset::{Cache, IntraOpThreads, Runtime};

/// The transform pipeline.
pub(super) const PIPELINE: Knob = Knob {
    field: "pipeline",
    label: "pipeline",
    value: |c| c.pipeline.name().to_owned(),
    tag: |c, common| (c.pipeline != common.pipeline).then(|| c.pipeline.name().to_owned()),
    // Tables are drawn one per pipeline.
    column: Column::None,
    python: None,
    script_value: Some(|c| json(&c.pipeline.ops())),
};

/// Where our engine runs the pipeline: on whole batches, or per sample.
pub(super) const TRANSFORM_AT: Knob = Knob {
    field: "transform_at",
    label: "transform at",
    value: |c| c.transform_at.name().to_owned(),
    tag: |c, common| {
        let differs = c.transform_at != common.transform_at;
        differs
            .then(|| format!("per {}", c.transform_at.name()))
            .filter(|_| c.runtime == Runtime::Loaderbench)
    },
    // Only our engine has the choice: a column when its configs differ.
    column: Column::Where(
        |c| match c.runtime {
            Runtime::Loaderbench => c.transform_at.name().to_owned(),
            Runtime::Pytorch | Runtime::Spdl => "-".to_owned(),
        },
        |configs| {
            let ours = |c: &&Config| c.runtime == Runtime::Loaderbench;
            let mut ours = configs.iter().filter(ours);
            ours.next()
                .is_some_and(|first| ours.any(|c| c.transform_at != first.transform_at))
        },
    ),
    python: None,
    script_value: None,
};

/// Samples per batch.
pub(super) const BATCH_SIZE: Knob = Knob {
    field: "batch_size",
    label: "batch size",
    value: |c| c.batch_size.to_string(),
    tag: |c, common| (c.batch_size != common.batch_size).then(|| format!("bs={}", c.batch_size)),
    column: Column::WhereVaries(|c| c.batch_size.to_string()),
    python: Some(Python {
        keyword: "batch_size",
        value: |c| Some(c.batch_size.to_string()),
    }),
    script_value: Some(|c| json(&c.batch_size)),
};

/// Worker threads or processes; 0 loads in the consumer itself.
pub(super) const NUM_WORKERS: Knob = Knob {
    field: "num_workers",
    label: "num_workers",
    value: |c| c.num_workers.to_string(),
    tag: |c, _| Some(format!("nw={}", c.num_workers)),
    column: Column::Classic,
    python: Some(Python {
        keyword: "num_workers",
        value: |c| Some(c.num_workers.to_string()),
    }),
    script_value: Some(|c| json(&c.num_workers)),
};

/// How a worker runs: the runtime's default, a thread, or a spawned or forked process.
pub(super) const WORKER_KIND: Knob = Knob {
    field: "worker_kind",
    label: "worker kind",
    value: |c| c.worker_kind.name().to_owned(),
    // Each runtime's default kind compares as one, so mixing runtimes names no kind;
    // without workers there is no kind to name (`nw=0 thread` read as a kind of loop).
    tag: |c, common| {
        let differs = worker_kinds::label_kind(c) != worker_kinds::label_kind(common);
        (differs && c.uses_knob("worker_kind")).then(|| c.worker_kind.name().to_owned())
    },
    // A column where configs with workers differ in it; a config without shows none.
    column: Column::Where(
        |c| {
            let kind = c.uses_knob("worker_kind").then(|| c.worker_kind.name());
            kind.unwrap_or("-").to_owned()
        },
        |configs| {
            let mut kinds = configs
                .iter()
                .filter(|c| c.uses_knob("worker_kind"))
                .map(|c| c.worker_kind);
            kinds
                .next()
                .is_some_and(|first| kinds.any(|kind| kind != first))
        },
    ),
    // Not a DataLoader argument: `thread` builds a torchdata.nodes graph instead.
    python: None,
    // The script builds DataLoader's workers or torchdata.nodes' threads by it.
    script_value: Some(|c| json(&c.worker_kind)),
};

/// Workers live from one epoch to the next instead of restarting.
pub(super) const PERSISTENT_WORKERS: Knob = Knob {
    field: "persistent_workers",
    label: "persistent",
    value: |c| c.persistent_workers.to_string(),
    // Without workers nothing persists, whatever the preset's first value says.
    tag: |c, _| (c.persistent_workers && c.num_workers > 0).then(|| "persistent".to_owned()),
    column: Column::Classic,
    python: Some(Python {
        keyword: "persistent_workers",
        value: |c| (c.num_workers > 0).then(|| python_bool(c.persistent_workers)),
    }),
    script_value: Some(|c| json(&c.persistent_workers)),
};

/// Batches each worker works on ahead.
pub(super) const PREFETCH_FACTOR: Knob = Knob {
    field: "prefetch_factor",
    label: "prefetch",
    value: |c| c.prefetch_factor.to_string(),
    tag: |c, common| {
        let differs = c.prefetch_factor != common.prefetch_factor;
        differs.then(|| format!("prefetch={}", c.prefetch_factor))
    },
    column: Column::WhereVaries(|c| c.prefetch_factor.to_string()),
    // PyTorch refuses a prefetch factor without workers.
    python: Some(Python {
        keyword: "prefetch_factor",
        value: |c| (c.num_workers > 0).then(|| c.prefetch_factor.to_string()),
    }),
    script_value: Some(|c| json(&c.prefetch_factor)),
};

/// Batches are copied to page-locked memory (a no-op without CUDA).
pub(super) const PIN_MEMORY: Knob = Knob {
    field: "pin_memory",
    label: "pin memory",
    value: |c| c.pin_memory.to_string(),
    tag: |c, _| c.pin_memory.then(|| "pin".to_owned()),
    column: Column::Classic,
    python: Some(Python {
        keyword: "pin_memory",
        value: |c| Some(python_bool(c.pin_memory)),
    }),
    script_value: Some(|c| json(&c.pin_memory)),
};

/// Batches come in sampler order, rather than as workers finish them.
pub(super) const IN_ORDER: Knob = Knob {
    field: "in_order",
    label: "in order",
    value: |c| c.in_order.to_string(),
    tag: |c, _| (!c.in_order && c.num_workers > 0).then(|| "unordered".to_owned()),
    column: Column::WhereVaries(|c| python_bool(c.in_order)),
    python: Some(Python {
        keyword: "in_order",
        value: |c| (c.num_workers > 0 && !c.in_order).then(|| python_bool(c.in_order)),
    }),
    script_value: Some(|c| json(&c.in_order)),
};

/// Where batches go: `cpu`, `cuda` or `cuda:N`.
pub(super) const DEVICE: Knob = Knob {
    field: "device",
    label: "device",
    value: |c| c.device.to_string(),
    tag: |c, common| (c.device != common.device).then(|| c.device.to_string()),
    column: Column::WhereVaries(|c| c.device.to_string()),
    python: None,
    script_value: Some(|c| json(&c.device.to_string())),
};

/// How worker processes get the dataset (ignored by thread workers).
pub(super) const DATASET_TRANSFER: Knob = Knob {
    field: "dataset_transfer",
    label: "dataset transfer",
    value: |c| c.dataset_transfer.name().to_owned(),
    tag: |c, common| {
        let differs = c.dataset_transfer != common.dataset_transfer;
        differs.then(|| format!("dataset={}", c.dataset_transfer.name()))
    },
    column: Column::WhereVaries(|c| c.dataset_transfer.name().to_owned()),
    python: None,
    script_value: None,
};

/// How worker processes hand batches back (ignored by thread workers).
pub(super) const BATCH_TRANSFER: Knob = Knob {
    field: "batch_transfer",
    label: "batch transfer",
    value: |c| c.batch_transfer.name().to_owned(),
    tag: |c, common| {
        let differs = c.batch_transfer != common.batch_transfer;
        differs.then(|| format!("batches={}", c.batch_transfer.name()))
    },
    column: Column::WhereVaries(|c| c.batch_transfer.name().to_owned()),
    python: None,
    script_value: None,
};

/// Which data loader measures: loaderbench's engine, PyTorch's DataLoader or SPDL.
pub(super) const RUNTIME: Knob = Knob {
    field: "runtime",
    label: "runtime",
    value: |c| c.runtime.name().to_owned(),
    // Our engine is never named (`Plan::common_config` makes it the common runtime
    // wherever the plan has several).
    tag: |c, common| {
        (c.runtime != common.runtime && c.runtime != Runtime::Loaderbench)
            .then(|| c.runtime.name().to_owned())
    },
    column: Column::WhereVaries(|c| c.runtime.name().to_owned()),
    python: None,
    // The script builds a DataLoader or an SPDL pipeline by it.
    script_value: Some(|c| json(&c.runtime.name())),
};

/// How PyTorch starts its worker processes (only the pytorch runtime).
pub(super) const START_METHOD: Knob = Knob {
    field: "start_method",
    label: "start method",
    value: |c| c.start_method.name().to_owned(),
    tag: |c, common| {
        (c.start_method != common.start_method)
            .then(|| c.start_method.name().to_owned())
            .filter(|_| c.uses_start_method())
    },
    column: Column::WhereVaries(|c| {
        if c.uses_start_method() {
            c.start_method.name().to_owned()
        } else {
            "-".to_owned()
        }
    }),
    // PyTorch refuses a multiprocessing context without workers.
    python: Some(Python {
        keyword: "multiprocessing_context",
        value: |c| (c.num_workers > 0).then(|| format!("\"{}\"", c.start_method.name())),
    }),
    script_value: Some(|c| json(&c.start_method)),
};

/// libtorch intra-op threads of the consumer: `auto` (libtorch's default)
/// or a count.
pub(super) const INTRA_OP_THREADS: Knob = Knob {
    field: "intra_op_threads",
    label: "intra-op threads",
    value: |c| c.intra_op_threads.name(),
    tag: |c, common| {
        let differs = c.intra_op_threads != common.intra_op_threads;
        differs.then(|| format!("threads={}", c.intra_op_threads.name()))
    },
    column: Column::WhereVaries(|c| c.intra_op_threads.name()),
    // `torch.set_num_threads`, which the snippet writes from what was measured.
    python: None,
    // The script's `torch.set_num_threads`; null keeps PyTorch's default.
    script_value: Some(|c| match rank_threads(c.intra_op_threads, c.ranks) {
        IntraOpThreads::Auto => serde_json::Value::Null,
        IntraOpThreads::Count(count) => json(&count),
    }),
};

/// Training processes per machine, each loading its shard of every epoch
/// (DistributedSampler semantics) with its own workers.
pub(super) const RANKS: Knob = Knob {
    field: "ranks",
    label: "ranks",
    value: |c| c.ranks.to_string(),
    tag: |c, common| (c.ranks != common.ranks).then(|| format!("ranks={}", c.ranks)),
    column: Column::WhereVaries(|c| c.ranks.to_string()),
    // A DistributedSampler per rank, which the snippet sets up.
    python: None,
    // The runtime starts one script per rank and tells each its rank.
    script_value: None,
};

/// Whether each epoch finds the dataset's files in the page cache (`warm`), or
/// they are evicted before every epoch so that it reads from storage (`cold`).
pub(super) const CACHE: Knob = Knob {
    field: "cache",
    label: "cache",
    value: |c| c.cache.name().to_owned(),
    // A cold measurement always says so; warm is what a run is unless told.
    tag: |c, _| (c.cache == Cache::Cold).then(|| "cold".to_owned()),
    column: Column::WhereVaries(|c| c.cache.name().to_owned()),
    // Not a DataLoader argument: where the data lives.
    python: None,
    // A cold script waits before each epoch until this process has evicted.
    script_value: Some(|c| json(&c.cache)),
};
