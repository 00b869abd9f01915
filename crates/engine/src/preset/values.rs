//! The values of the knobs that are named rather than counted (worker kind, transfers,
//! runtime, start method, cache, run order), declared once with the name presets, tables, the CSV
//! and the app use ([`named_values!`](crate::named_values::named_values)). Also
//! `intra_op_threads`, which is `auto` or a count.

use serde::{Deserialize, Serialize};

use crate::named_values::{KnobValue, named_values};

named_values! {
    /// How a worker runs: in a thread of this process, or as a process of its own (what
    /// each runtime runs for each kind, and what it refuses: `plan::worker_kinds`).
    pub enum WorkerKind {
        /// The runtime's own default: threads on our engine, the DataLoader's process
        /// workers (started by `start_method`) on the PyTorch runtime.
        Auto = "auto",
        /// A thread of the loading process; shares the dataset and the allocator. On
        /// the PyTorch runtime, torchdata.nodes' `ParallelMapper` threads.
        Thread = "thread",
        /// A fresh process of this program that opens the dataset itself (PyTorch's `spawn`).
        Spawn = "spawn",
        /// A forked child of the loading process (PyTorch's `fork`; Unix only).
        Fork = "fork",
    }
}

named_values! {
    /// How a worker process gets the dataset.
    #[derive(Default)]
    pub enum DatasetTransfer {
        /// The worker opens it itself: files are memory-mapped (pages shared with every
        /// process), and a dataset without files (the synthetic one) is mapped from an
        /// image the loading process wrote once; a forked worker uses the pages it
        /// inherited.
        #[default]
        Reopen = "reopen",
        /// The worker gets a private copy of every sample, as a pickled dataset would be.
        Copy = "copy",
    }
}

named_values! {
    /// How a worker process hands a finished batch back.
    #[derive(Default)]
    pub enum BatchTransfer {
        /// Through a ring of shared-memory segments that only this user can open.
        #[default]
        SharedMemory = "shared_memory",
        /// Serialized through the worker's pipe.
        Pipe = "pipe",
    }
}

named_values! {
    /// Which data loader measures a config.
    #[derive(Default)]
    pub enum Runtime {
        /// loaderbench's own loader on libtorch.
        #[default]
        Loaderbench = "loaderbench",
        /// The real `torch.utils.data.DataLoader`, run by the Python that setup installs.
        Pytorch = "pytorch",
        /// An SPDL pipeline (`spdl.pipeline`) over a map-style dataset, its workers threads
        /// of the same Python script as the `pytorch` runtime's.
        Spdl = "spdl",
    }
}

impl Runtime {
    /// True for the runtimes that run `python/pytorch_loader.py`: they load the user's
    /// Python code and transform with torchvision.
    pub fn runs_python(self) -> bool {
        match self {
            Runtime::Loaderbench => false,
            Runtime::Pytorch | Runtime::Spdl => true,
        }
    }
}

named_values! {
    /// How PyTorch starts its worker processes (`multiprocessing_context`, by the name
    /// Python's multiprocessing uses); only the `pytorch` runtime uses it.
    pub enum StartMethod {
        Fork = "fork",
        Spawn = "spawn",
        Forkserver = "forkserver",
    }
}

impl StartMethod {
    /// Python's default on this platform: `fork` on Linux, `spawn` elsewhere.
    pub fn platform_default() -> StartMethod {
        if cfg!(target_os = "linux") {
            StartMethod::Fork
        } else {
            StartMethod::Spawn
        }
    }
}

impl Default for StartMethod {
    fn default() -> Self {
        StartMethod::platform_default()
    }
}

named_values! {
    /// Whether each epoch finds the dataset's files in the page cache.
    #[derive(Default)]
    pub enum Cache {
        /// Loaded into the page cache before every epoch (and checked to be there), so
        /// every epoch reads from memory; Linux only, elsewhere as they come.
        #[default]
        Warm = "warm",
        /// Evicted from the page cache before every epoch (and checked to have left), so
        /// every epoch reads from storage; Linux only.
        Cold = "cold",
    }
}

named_values! {
    /// In which order a run measures its configs and repeats.
    #[derive(Default)]
    pub enum RunOrder {
        /// Round-robin: every config once, then every config again, `repeats` times, so
        /// slow drift of the machine hits every config alike.
        #[default]
        Interleaved = "interleaved",
        /// All repeats of a config, then the next config.
        Sequential = "sequential",
        /// Round-robin with the configs in a new seeded random order each round.
        Shuffled = "shuffled",
    }
}

/// libtorch's intra-op threads for the consumer (`torch.set_num_threads`): `auto` keeps
/// libtorch's default, a number sets it. Presets write `auto` or the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IntraOpThreads {
    #[default]
    Auto,
    Count(usize),
}

impl IntraOpThreads {
    /// The name presets and tables use: `auto` or the count.
    pub fn name(self) -> String {
        match self {
            IntraOpThreads::Auto => "auto".to_owned(),
            IntraOpThreads::Count(count) => count.to_string(),
        }
    }
}

impl KnobValue for IntraOpThreads {
    fn text(&self) -> String {
        self.name()
    }

    fn parse(text: &str) -> std::result::Result<Self, String> {
        match text {
            "auto" => Ok(IntraOpThreads::Auto),
            count => match count.parse::<usize>() {
                Ok(count) if count > 0 => Ok(IntraOpThreads::Count(count)),
                _ => Err(format!("`{text}` is not auto or a count of at least 1")),
            },
        }
    }
}

impl Serialize for IntraOpThreads {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            IntraOpThreads::Auto => serializer.serialize_str("auto"),
            IntraOpThreads::Count(count) => serializer.serialize_u64(*count as u64),
        }
    }
}

impl<'de> Deserialize<'de> for IntraOpThreads {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        // Untagged, because RON hands a bare word such as `auto` over by name only to
        // serde's own buffered content.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Count(u64),
            Word(String),
        }
        let invalid = |shown: &str| {
            serde::de::Error::custom(format!(
                "intra_op_threads must be `auto` or at least 1, not {shown}"
            ))
        };
        match Written::deserialize(deserializer)? {
            Written::Word(word) if word == "auto" => Ok(IntraOpThreads::Auto),
            Written::Word(word) => Err(invalid(&format!("`{word}`"))),
            Written::Count(count) => usize::try_from(count)
                .ok()
                .filter(|&count| count > 0)
                .map(IntraOpThreads::Count)
                .ok_or_else(|| invalid(&count.to_string())),
        }
    }
}
