//! The PyTorch runtime: configs with `runtime: pytorch` are measured by the real
//! `torch.utils.data.DataLoader`, and those with `runtime: spdl` by an SPDL pipeline, in
//! the same script. [`PytorchScript::prepare`] writes the script shipped in
//! the binary (`python/pytorch_loader.py`, with the training steps of
//! `python/pytorch_steps.py`, the tar-shard reading of `python/pytorch_shards.py`, the
//! Python-object estimate of `python/pytorch_objects.py`, the torchdata.nodes thread
//! workers of `python/pytorch_nodes.py` and the SPDL pipeline of
//! `python/spdl_pipeline.py` beside it) and, for the synthetic dataset, the very
//! bytes our loader reads (as an IDX pair) to a private temporary folder;
//! [`PytorchScript::measure`] runs one config (one repeat) as a Python child process and
//! turns the JSON lines it streams into the same batches, worker start-ups and epochs
//! that our loader produces, ending in a [`ConfigResult`]. With ranks, it runs the script
//! once per rank as a torch.distributed job (see [`job`]). Cancelling or failing kills
//! every script's process group, so PyTorch's worker processes go with it. [`check`]
//! loads a preset's Python code without measuring, for `validate`.

mod check;
mod folder;
mod idx_file;
mod image_list;
mod job;
#[cfg(unix)]
mod preloaded;
mod python_process;
mod script_messages;
mod session;
mod shard_list;
#[cfg(unix)]
mod shared_preloaded;

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::disturbance;
use crate::rank_merge::RanksSummary;
use crate::results::{BatchRecord, ConfigResult, EpochResult, PythonEnvironment};
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, Dataset, DatasetKind};
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::loader::WorkerStartup;
use loaderbench_engine::plan::Plan;

pub use check::{LoadedDataset, has_python_code, load_python_code};
pub use idx_file::write_idx;
pub use image_list::write_image_list;
#[cfg(unix)]
pub use preloaded::PRELOAD_VAR;
pub use python_process::{PYTHON_VAR, python_path};
pub use script_messages::{DatasetRequest, Message, Request, UserFrame, Versions};
#[cfg(unix)]
pub use shared_preloaded::{SHARED_VAR, SharedPreloadedPython};

use folder::ScratchFolder;
use job::Job;
use python_process::PythonProcess;
use session::Session;

/// The Python that runs `plan`'s scripts: the preset's, else [`python_path`].
fn plan_python(plan: &Plan) -> PathBuf {
    plan.preset.python.clone().unwrap_or_else(python_path)
}

/// How long a process waits for the preloaded Python it shares to import torch
/// (seconds here; a cold disk can take a minute).
pub const IMPORT_LIMIT: Duration = Duration::from_secs(120);

/// A preloaded Python for the loaderbench processes that will measure `plan` (a tune's
/// or a resolve's rounds, a sweep and its rounds) to share, where its configs run Python
/// and preloading is wanted, waited for until it has imported torch (at most `limit`):
/// seconds of CPU that the meter counts as the run's own, so configs measured beside
/// them are slowed unseen (our engine's sweep took 4 to 6 times as long under
/// `--recommend`). Sharing only saves time: where it cannot start, or does not serve,
/// each run starts its own and reports what stops it.
#[cfg(unix)]
pub fn share_preloaded(plan: &Plan, limit: Duration) -> Option<Arc<SharedPreloadedPython>> {
    if !plan
        .configs
        .iter()
        .any(|config| config.runtime.runs_python())
    {
        return None;
    }
    let started = SharedPreloadedPython::start(&plan_python(plan))
        .ok()
        .flatten()?;
    started.wait_serving(limit);
    Some(Arc::new(started))
}

/// Where there is no preloaded Python (outside Unix), there is none to share: this type
/// has no values.
#[cfg(not(unix))]
pub enum SharedPreloadedPython {}

#[cfg(not(unix))]
impl SharedPreloadedPython {
    pub fn share_with(&self, _command: &mut std::process::Command) {
        match *self {}
    }

    pub fn wait_serving(&self, _limit: Duration) -> bool {
        match *self {}
    }
}

#[cfg(not(unix))]
pub fn share_preloaded(_plan: &Plan, _limit: Duration) -> Option<Arc<SharedPreloadedPython>> {
    None
}

/// The knobs the script takes: the names in its `KNOBS = (...)`.
#[cfg(test)]
fn script_knobs() -> Vec<&'static str> {
    let Some((_, rest)) = folder::SCRIPT.split_once("\nKNOBS = (") else {
        return Vec::new();
    };
    let names = rest.split_once(')').map_or("", |(names, _)| names);
    names
        .split(',')
        .map(|name| name.trim().trim_matches('"'))
        .filter(|name| !name.is_empty())
        .collect()
}

/// What a measurement reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum PytorchEvent {
    WorkerReady(WorkerStartup),
    /// A batch reached the device; `epoch` is 0 for the warm-up epoch.
    Batch {
        epoch: usize,
        batch: BatchRecord,
    },
    Epoch(Box<EpochResult>),
    /// Something the user should know; the measurement goes on.
    Note(String),
}

/// The run's preloaded Python, once the first measurement has asked for it.
enum Preload {
    NotStarted,
    #[cfg(unix)]
    Serving(Arc<preloaded::PreloadedPython>),
    /// It ended (or this system has none): scripts are started directly.
    Unavailable,
}

/// The script and the dataset's files, ready for any number of configs of one plan.
pub struct PytorchScript {
    /// Ended before the folder it runs in is removed.
    preload: RefCell<Preload>,
    /// The preloaded Python the caller offered, tried first.
    offered: Option<Arc<SharedPreloadedPython>>,
    folder: ScratchFolder,
    python: PathBuf,
    dataset: DatasetRequest,
    /// Batches delivered in every config measured so far: before the run's first, a
    /// failing user dataset is bad input; after it, a failed run.
    batches: Cell<usize>,
}

impl PytorchScript {
    /// Writes the script and, for the synthetic dataset, `dataset`'s samples as IDX, for
    /// an image folder the list of its files (`dataset` is our engine's view of the
    /// plan's dataset; a python one has none).
    pub fn prepare(plan: &Plan, dataset: Option<&Arc<dyn Dataset>>) -> Result<PytorchScript> {
        let folder = ScratchFolder::with_scripts()?;
        let spec = &plan.preset.dataset;
        let path = || {
            spec.path
                .clone()
                .ok_or_else(|| Error::value("dataset.path: this dataset needs a path"))
        };
        let dataset = match spec.kind {
            DatasetKind::Synthetic => {
                let dataset = dataset.ok_or_else(|| {
                    Error::run("the synthetic dataset was not generated before the run")
                })?;
                let (images, labels) = write_idx(dataset.as_ref(), folder.path())?;
                DatasetRequest::Idx { images, labels }
            }
            DatasetKind::Idx => {
                let (images, labels) = dataset::idx_files(&path()?, spec.labels.as_deref())?;
                DatasetRequest::Idx { images, labels }
            }
            DatasetKind::Npy => DatasetRequest::Npy {
                path: path()?,
                labels: spec.labels.clone(),
            },
            DatasetKind::ImageFolder => {
                let files = dataset
                    .and_then(|d| d.labelled_files())
                    .ok_or_else(|| Error::run("the image folder was not listed before the run"))?;
                let list = folder.path().join("images.list");
                image_list::write_image_list(&files, &list)?;
                DatasetRequest::ImageFolder {
                    root: path()?,
                    list,
                    channels: spec.channels,
                    image_size: spec.image_size,
                }
            }
            DatasetKind::Python => user_dataset(spec)?,
            DatasetKind::Shards => shard_list::shards_request(spec, plan.preset.samples, dataset)?,
        };
        Ok(PytorchScript {
            preload: RefCell::new(Preload::NotStarted),
            offered: None,
            folder,
            python: plan_python(plan),
            dataset,
            batches: Cell::new(0),
        })
    }

    /// Offers `preloaded` to fork the scripts from, where it runs this plan's Python.
    pub fn offer(&mut self, preloaded: Option<Arc<SharedPreloadedPython>>) {
        self.offered = preloaded;
    }

    /// The Python that runs the script.
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// Measures config `index` of `plan` once with PyTorch's DataLoader: one script, or
    /// one per rank, each joining the job's process group through a file store. The
    /// scripts wait before each epoch, and `before_epoch` (the page cache made cold or
    /// warm) runs then.
    pub fn measure(
        &self,
        plan: &Plan,
        index: usize,
        repeat: usize,
        cancel: &CancelToken,
        report: &mut dyn FnMut(PytorchEvent),
        before_epoch: &mut dyn FnMut() -> Result<()>,
    ) -> Result<ConfigResult> {
        let config = &plan.configs[index];
        let world = config.ranks;
        let store = self.folder.path().join(format!("store-{index}-{repeat}"));
        let sessions = (0..world)
            .map(|rank| {
                let request =
                    Request::new(plan, config, self.dataset.clone()).for_rank(rank, world, &store);
                let request = serde_json::to_string(&request)
                    .map_err(|err| Error::run(format!("cannot encode the request: {err}")))?;
                let process = self.start_script(&request, cancel, plan)?;
                let runtime = config.runtime;
                Ok(Session::new(
                    rank,
                    world,
                    process,
                    runtime,
                    self.batches.get(),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut job = Job::new(sessions, &self.python);
        let followed = job.follow(
            cancel,
            Duration::from_secs_f64(plan.preset.worker_timeout_s),
            report,
            before_epoch,
        );
        // Every rank delivers its own batches; any of them counts as the run's first.
        let delivered = job.sessions.iter().map(|s| s.batches).max();
        self.batches.set(delivered.unwrap_or(self.batches.get()));
        followed?;
        let ready = job.sessions[0].ready.clone().unwrap_or_default();
        let versions = ready.versions;
        let summary = summary(&job.sessions);
        let processes = job.processes();
        // Every rank's process tree is ours, so each rank's meter saw the whole job.
        let verdict = disturbance::judge(&job.sessions[0].interference);
        let (warmup, epochs): (Vec<_>, Vec<_>) = job.epochs.into_iter().partition(|e| e.epoch == 0);
        Ok(ConfigResult {
            config_index: index,
            repeat,
            label: plan.label(index),
            config: config.clone(),
            other_load_cores: verdict.other_load_cores,
            disturbed: verdict.disturbed,
            warmup: warmup.into_iter().next(),
            epochs,
            pin_memory_effective: summary.pin_memory_effective,
            intra_op_threads: summary.intra_op_threads,
            rss_before_bytes: summary.rss_before_bytes,
            peak_rss_bytes: summary.peak_rss_bytes,
            python: versions.map(|v| PythonEnvironment {
                executable: self.python.clone(),
                python: v.python,
                torch: v.torch,
                torchvision: v.torchvision,
                spdl: v.spdl,
            }),
            dataset_samples: ready.dataset_samples,
            dataset_object_bytes: ready.dataset_object_bytes,
            processes,
            // The runner marks the page cache it had and times the whole config.
            ..ConfigResult::default()
        })
    }

    /// A script process with `request`: forked by the run's preloaded Python (started
    /// by the first call, which waits while it imports torch) where there is one, else
    /// started afresh.
    fn start_script(
        &self,
        request: &str,
        cancel: &CancelToken,
        plan: &Plan,
    ) -> Result<PythonProcess> {
        #[cfg(unix)]
        if let Some(preloaded) = self.preloaded(cancel, plan)? {
            let temp = self.folder.python_temp();
            if let Some(process) = PythonProcess::fork(&preloaded, &temp, request)? {
                return Ok(process);
            }
            *self.preload.borrow_mut() = Preload::Unavailable;
        }
        PythonProcess::start(
            &self.python,
            &self.folder.script(),
            &self.folder.python_temp(),
            request,
        )
    }

    /// The run's preloaded Python: the shared one this process was offered, else one
    /// started by the first call, where it is wanted.
    #[cfg(unix)]
    fn preloaded(
        &self,
        cancel: &CancelToken,
        plan: &Plan,
    ) -> Result<Option<Arc<preloaded::PreloadedPython>>> {
        if matches!(*self.preload.borrow(), Preload::NotStarted) {
            let limit = job::startup_limit(Duration::from_secs_f64(plan.preset.worker_timeout_s));
            let started = if preloaded::wanted() {
                self.find_preloaded(cancel, limit)?
            } else {
                None
            };
            *self.preload.borrow_mut() = match started {
                Some(preloaded) => Preload::Serving(Arc::new(preloaded)),
                None => Preload::Unavailable,
            };
        }
        Ok(match &*self.preload.borrow() {
            Preload::Serving(preloaded) => Some(preloaded.clone()),
            _ => None,
        })
    }

    /// The preloaded Python to fork this run's scripts from: a shared one it was
    /// offered (here, else in this process's environment) that runs its Python, else
    /// one of its own.
    #[cfg(unix)]
    fn find_preloaded(
        &self,
        cancel: &CancelToken,
        limit: Duration,
    ) -> Result<Option<preloaded::PreloadedPython>> {
        let offered = self
            .offered
            .as_ref()
            .and_then(|s| s.socket_for(&self.python));
        if let Some(socket) = offered.or_else(|| shared_preloaded::offered(&self.python)) {
            let shared = preloaded::PreloadedPython::connect(&socket, &self.python, cancel, limit)?;
            if shared.is_some() {
                return Ok(shared);
            }
        }
        preloaded::PreloadedPython::start(
            &self.python,
            &self.folder.script(),
            &self.folder.python_temp(),
            cancel,
            limit,
        )
    }
}

/// What the scripts used, all ranks together (memory summed).
fn summary(sessions: &[Session]) -> RanksSummary {
    let ranks = sessions.iter().map(|session| {
        let ready = session.ready.clone().unwrap_or_default();
        RanksSummary {
            pin_memory_effective: ready.pin_memory_effective,
            intra_op_threads: ready.intra_op_threads,
            rss_before_bytes: ready.rss_bytes,
            peak_rss_bytes: session.peak_rss_bytes(),
        }
    });
    // `measure` starts at least one script: a config has at least one rank.
    RanksSummary::total(ranks.collect()).expect("a job has at least one rank")
}

/// The request for a user's python dataset, once its module is known to exist.
fn user_dataset(spec: &dataset::DatasetSpec) -> Result<DatasetRequest> {
    dataset::python_dataset::check(spec)?;
    let (Some(path), Some(factory)) = (&spec.path, &spec.factory) else {
        return Err(Error::value(
            "dataset: a python dataset needs a path and a factory",
        ));
    };
    if !path.is_file() {
        return Err(Error::file(path, "no such file"));
    }
    Ok(DatasetRequest::Python {
        path: path.clone(),
        factory: factory.clone(),
        args: spec.args.clone(),
        collate: spec.collate.clone(),
    })
}
