//! The knob table: every sweep knob of a benchmark, defined once. Everything a knob is
//! anywhere comes from its entry here: its list in a [`Preset`](crate::preset::Preset)
//! (with the default a preset leaves out), its optional value in an extra config
//! ([`ConfigPoint`](crate::preset::ConfigPoint)), its value in a
//! [`Config`](crate::plan::Config) (with the default older results load with), the
//! label tables and the app call it, its part of a config's label, its column in tables
//! and the CSV, its field in the app's setup panel, the `DataLoader(...)` keyword it is
//! in a recommendation's snippet, and the value the pytorch runtime's script receives
//! under its name.
//!
//! [`knob_table!`] hands the table to a module's own macro (`knob_table!(each_knob {
//! extra tokens })`), which generates that module's part: `preset` makes the preset's
//! and the extra config's fields and the panel's walk over them; `plan::knobs` makes the
//! config's fields and the [`Knob`](crate::plan::Knob) records. Names in the entries
//! resolve where the table is expanded.
//!
//! Entries are in the order configs, results and the JSON hold their knobs; a config's
//! label names the classic knobs (`num_workers`, `persistent_workers`, `pin_memory`)
//! first, then the others in this order, and tables show their columns in this order
//! too. `grid` is the order the sweep expands them in (the first varies slowest), which
//! is also the CSV's and the preset snippet's.
//!
//! Adding a knob is an entry here (and its place in `grid`), its behaviour (the loader,
//! the runner or the checks that read it), and, when the pytorch runtime takes it
//! (`reference` is set), its name in `KNOBS` of `python/reference_loader.py`. A value
//! type new to the table also needs [`KnobValue`](crate::preset::KnobValue), which every
//! `named_values!` enum has.
//!
//! Each entry: the field's doc, `field: Type` (`=> ConfigType` when a config holds it
//! in another type than the preset's lists), then
//! - `presets`: the list a preset that leaves the knob out gets;
//! - `config`: attributes of the config's field (its serde default for older results);
//! - `label`: what tables and the app call it;
//! - `value`: a config's value as a preset writes it (the CSV's cell);
//! - `tag`: its part of a config's label, given the config that holds the values most
//!   configs share;
//! - `column`: its column in tables ([`Column`](crate::plan::Column));
//! - `python`: the `DataLoader` keyword and how a config's value prints in Python, if
//!   PyTorch's DataLoader takes it ([`Python`](crate::plan::Python));
//! - `reference`: the value the reference script gets for it, if the pytorch runtime
//!   takes it.

/// Hands the knob table to `$each`, after `$each`'s own tokens in braces.
macro_rules! knob_table {
    ($each:ident { $($extra:tt)* }) => { $each! { { $($extra)* }
    knobs: [
        /// The transform pipeline.
        pipeline: PipelineSpec {
            presets: [PipelineSpec::Light],
            config: [],
            label: "pipeline",
            value: |c| c.pipeline.name().to_owned(),
            tag: |c, common| (c.pipeline != common.pipeline).then(|| c.pipeline.name().to_owned()),
            // Tables are drawn one per pipeline.
            column: Column::None,
            python: None,
            reference: Some(|c| json(&c.pipeline.ops())),
        },
        /// Where our engine runs the pipeline: on whole batches, or per sample.
        transform_at: TransformAt {
            presets: [TransformAt::Batch],
            config: [
                /// The pytorch runtime always works per sample, so its configs
                /// keep the default.
                #[serde(default)]
            ],
            label: "transform at",
            value: |c| c.transform_at.name().to_owned(),
            tag: |c, common| {
                let differs = c.transform_at != common.transform_at;
                differs.then(|| format!("per {}", c.transform_at.name()))
                    .filter(|_| c.runtime == Runtime::Loaderbench)
            },
            // Only our engine has the choice: a column when its configs differ.
            column: Column::Where(
                |c| match c.runtime {
                    Runtime::Loaderbench => c.transform_at.name().to_owned(),
                    Runtime::Pytorch => "-".to_owned(),
                },
                |configs| {
                    let ours = |c: &&Config| c.runtime == Runtime::Loaderbench;
                    let mut ours = configs.iter().filter(ours);
                    ours.next()
                        .is_some_and(|first| ours.any(|c| c.transform_at != first.transform_at))
                },
            ),
            python: None,
            reference: None,
        },
        /// Samples per batch.
        batch_size: usize {
            presets: [64],
            config: [],
            label: "batch size",
            value: |c| c.batch_size.to_string(),
            tag: |c, common| {
                (c.batch_size != common.batch_size).then(|| format!("bs={}", c.batch_size))
            },
            column: Column::WhereVaries(|c| c.batch_size.to_string()),
            python: Some(Python {
                keyword: "batch_size",
                value: |c| Some(c.batch_size.to_string()),
            }),
            reference: Some(|c| json(&c.batch_size)),
        },
        /// Worker threads or processes; 0 loads in the consumer itself.
        num_workers: usize {
            presets: [0],
            config: [],
            label: "num_workers",
            value: |c| c.num_workers.to_string(),
            tag: |c, _| Some(format!("nw={}", c.num_workers)),
            column: Column::Classic,
            python: Some(Python {
                keyword: "num_workers",
                value: |c| Some(c.num_workers.to_string()),
            }),
            reference: Some(|c| json(&c.num_workers)),
        },
        /// How a worker runs: a thread, or a spawned or forked process.
        worker_kind: WorkerKind {
            presets: [WorkerKind::Thread],
            config: [],
            label: "worker kind",
            value: |c| c.worker_kind.name().to_owned(),
            tag: |c, common| {
                (c.worker_kind != common.worker_kind).then(|| c.worker_kind.name().to_owned())
            },
            column: Column::WhereVaries(|c| c.worker_kind.name().to_owned()),
            python: None,
            reference: None,
        },
        /// Workers live from one epoch to the next instead of restarting.
        persistent_workers: bool {
            presets: [false],
            config: [],
            label: "persistent",
            value: |c| c.persistent_workers.to_string(),
            tag: |c, _| c.persistent_workers.then(|| "persistent".to_owned()),
            column: Column::Classic,
            python: Some(Python {
                keyword: "persistent_workers",
                value: |c| (c.num_workers > 0).then(|| python_bool(c.persistent_workers)),
            }),
            reference: Some(|c| json(&c.persistent_workers)),
        },
        /// Batches each worker works on ahead.
        prefetch_factor: usize {
            presets: [2],
            config: [],
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
            reference: Some(|c| json(&c.prefetch_factor)),
        },
        /// Batches are copied to page-locked memory (a no-op without CUDA).
        pin_memory: bool {
            presets: [false],
            config: [],
            label: "pin memory",
            value: |c| c.pin_memory.to_string(),
            tag: |c, _| c.pin_memory.then(|| "pin".to_owned()),
            column: Column::Classic,
            python: Some(Python {
                keyword: "pin_memory",
                value: |c| Some(python_bool(c.pin_memory)),
            }),
            reference: Some(|c| json(&c.pin_memory)),
        },
        /// Batches come in sampler order, rather than as workers finish them.
        in_order: bool {
            presets: [true],
            config: [],
            label: "in order",
            value: |c| c.in_order.to_string(),
            tag: |c, _| (!c.in_order).then(|| "unordered".to_owned()),
            column: Column::WhereVaries(|c| python_bool(c.in_order)),
            python: Some(Python {
                keyword: "in_order",
                value: |c| (c.num_workers > 0 && !c.in_order).then(|| python_bool(c.in_order)),
            }),
            reference: Some(|c| json(&c.in_order)),
        },
        /// Where batches go: `cpu`, `cuda` or `cuda:N`.
        device: String => DeviceSpec {
            presets: ["cpu".to_owned()],
            config: [],
            label: "device",
            value: |c| c.device.to_string(),
            tag: |c, common| (c.device != common.device).then(|| c.device.to_string()),
            column: Column::WhereVaries(|c| c.device.to_string()),
            python: None,
            reference: Some(|c| json(&c.device.to_string())),
        },
        /// How worker processes get the dataset (ignored by thread workers).
        dataset_transfer: DatasetTransfer {
            presets: [DatasetTransfer::Reopen],
            config: [#[serde(default)]],
            label: "dataset transfer",
            value: |c| c.dataset_transfer.name().to_owned(),
            tag: |c, common| {
                let differs = c.dataset_transfer != common.dataset_transfer;
                differs.then(|| format!("dataset={}", c.dataset_transfer.name()))
            },
            column: Column::WhereVaries(|c| c.dataset_transfer.name().to_owned()),
            python: None,
            reference: None,
        },
        /// How worker processes hand batches back (ignored by thread workers).
        batch_transfer: BatchTransfer {
            presets: [BatchTransfer::SharedMemory],
            config: [#[serde(default)]],
            label: "batch transfer",
            value: |c| c.batch_transfer.name().to_owned(),
            tag: |c, common| {
                let differs = c.batch_transfer != common.batch_transfer;
                differs.then(|| format!("batches={}", c.batch_transfer.name()))
            },
            column: Column::WhereVaries(|c| c.batch_transfer.name().to_owned()),
            python: None,
            reference: None,
        },
        /// Which data loader measures: loaderbench's engine or PyTorch's DataLoader.
        runtime: Runtime {
            presets: [Runtime::Loaderbench],
            config: [
                /// Results from before the runtime knob existed were measured by
                /// loaderbench.
                #[serde(default)]
            ],
            label: "runtime",
            value: |c| c.runtime.name().to_owned(),
            tag: |c, common| {
                (c.runtime != common.runtime).then(|| "pytorch".to_owned())
                    .filter(|_| c.runtime == Runtime::Pytorch)
            },
            column: Column::WhereVaries(|c| c.runtime.name().to_owned()),
            // It picks the runtime that runs the script.
            python: None,
            reference: None,
        },
        /// How PyTorch starts its worker processes (only the pytorch runtime).
        start_method: StartMethod {
            presets: [StartMethod::platform_default()],
            config: [
                /// Only the `pytorch` runtime with workers uses it; elsewhere it
                /// is the platform's default, so configs that differ only there
                /// collapse into one.
                #[serde(default)]
            ],
            label: "start method",
            value: |c| c.start_method.name().to_owned(),
            tag: |c, common| {
                (c.start_method != common.start_method).then(|| c.start_method.name().to_owned())
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
            reference: Some(|c| json(&c.start_method)),
        },
        /// libtorch intra-op threads of the consumer: `auto` (libtorch's default)
        /// or a count.
        intra_op_threads: IntraOpThreads {
            presets: [IntraOpThreads::Auto],
            config: [#[serde(default)]],
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
            reference: Some(|c| match rank_threads(c.intra_op_threads, c.ranks) {
                IntraOpThreads::Auto => serde_json::Value::Null,
                IntraOpThreads::Count(count) => json(&count),
            }),
        },
        /// Training processes per machine, each loading its shard of every epoch
        /// (DistributedSampler semantics) with its own workers.
        ranks: usize {
            presets: [1],
            config: [#[serde(default = "one_rank")]],
            label: "ranks",
            value: |c| c.ranks.to_string(),
            tag: |c, common| (c.ranks != common.ranks).then(|| format!("ranks={}", c.ranks)),
            column: Column::WhereVaries(|c| c.ranks.to_string()),
            // A DistributedSampler per rank, which the snippet sets up.
            python: None,
            // The runtime starts one script per rank and tells each its rank.
            reference: None,
        },
        /// Whether each epoch finds the dataset's files in the page cache (`warm`), or
        /// they are evicted before every epoch so that it reads from storage (`cold`).
        cache: Cache {
            presets: [Cache::Warm],
            config: [
                /// Results from before the knob existed were measured warm.
                #[serde(default)]
            ],
            label: "cache",
            value: |c| c.cache.name().to_owned(),
            // A cold measurement always says so; warm is what a run is unless told.
            tag: |c, _| (c.cache == Cache::Cold).then(|| "cold".to_owned()),
            column: Column::WhereVaries(|c| c.cache.name().to_owned()),
            // Not a DataLoader argument: where the data lives.
            python: None,
            // A cold script waits before each epoch until this process has evicted.
            reference: Some(|c| json(&c.cache)),
        },
    ]
    grid: [
        runtime,
        start_method,
        pipeline,
        cache,
        transform_at,
        batch_size,
        device,
        worker_kind,
        dataset_transfer,
        batch_transfer,
        persistent_workers,
        pin_memory,
        prefetch_factor,
        in_order,
        intra_op_threads,
        ranks,
        num_workers,
    ]
    } };
}

pub(crate) use knob_table;
