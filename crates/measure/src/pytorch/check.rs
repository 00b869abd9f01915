//! Loading a preset's Python code as a run would, measuring nothing: `validate`'s check
//! of a user's Dataset (its module, factory, `collate`, its length) and of a python
//! training step (its module and factory), which run in Python only. One script takes a
//! request with no epochs: it builds the dataset, DataLoader and step, says it is ready,
//! and ends; its errors are the ones a run would report before its first batch.

use std::sync::Arc;
use std::time::Duration;

use super::PytorchScript;
use super::job::Job;
use super::script_messages::Request;
use super::session::Session;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{Dataset, DatasetKind};
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Runtime;
use loaderbench_engine::step::StepSpec;

/// True when `plan` has Python code of the user's that only loading it in Python checks:
/// a python dataset, or a python step on a config Python runs.
pub fn has_python_code(plan: &Plan) -> bool {
    let python_step = matches!(plan.preset.step, StepSpec::Python { .. });
    plan.preset.dataset.kind == DatasetKind::Python
        || (python_step
            && plan
                .configs
                .iter()
                .any(|c| c.runtime != Runtime::Loaderbench))
}

/// What loading a preset's Python code found of the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadedDataset {
    /// Samples in the whole dataset, where it has a length.
    pub samples: Option<usize>,
    /// About how many bytes of Python objects it holds (what forked workers copy as
    /// they touch them).
    pub object_bytes: Option<u64>,
}

/// Loads `plan`'s dataset and step in Python as its first config that Python runs
/// would (with one rank), measuring nothing, and says what it found of the dataset.
/// `dataset` is our engine's view of a dataset that is not Python's own, as
/// [`PytorchScript::prepare`] takes it.
pub fn load_python_code(
    plan: &Plan,
    dataset: Option<&Arc<dyn Dataset>>,
    cancel: &CancelToken,
) -> Result<LoadedDataset> {
    let config = plan
        .configs
        .iter()
        .find(|c| c.runtime != Runtime::Loaderbench)
        .ok_or_else(|| Error::value("no config of the preset runs on Python"))?;
    let script = PytorchScript::prepare(plan, dataset)?;
    let request = Request {
        epochs: 0,
        warmup: false,
        window: None,
        ..Request::new(plan, config, script.dataset.clone())
    };
    let request = serde_json::to_string(&request)
        .map_err(|err| Error::run(format!("cannot encode the request: {err}")))?;
    let process = script.start_script(&request, cancel, plan)?;
    let session = Session::new(0, 1, process, config.runtime, 0);
    let mut job = Job::new(vec![session], &script.python);
    job.follow(
        cancel,
        Duration::from_secs_f64(plan.preset.worker_timeout_s),
        &mut |_| {},
        &mut || Ok(()),
    )?;
    let ready = job.sessions[0].ready.clone().unwrap_or_default();
    Ok(LoadedDataset {
        samples: ready.dataset_samples,
        object_bytes: ready.dataset_object_bytes,
    })
}
