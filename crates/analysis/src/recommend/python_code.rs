//! Python written into the snippets a recommendation hands over, whichever loader they
//! build: the user's dataset made as the run made it, and Python's literals for JSON
//! values and booleans.

use std::path::Path;

use loaderbench_engine::dataset::{DatasetKind, DatasetSpec};
use loaderbench_engine::preset::Preset;
use loaderbench_measure::results::RunResult;

/// How the user's dataset was built: its module imported from its folder, the factory
/// called with the preset's arguments, the first `samples` kept, and the collate_fn made.
pub(super) fn user_dataset_lines(spec: &DatasetSpec, samples: Option<usize>) -> String {
    let path = spec.path.clone().unwrap_or_default();
    let folder = path.parent().unwrap_or(Path::new("."));
    let module = path.file_stem().unwrap_or_default().to_string_lossy();
    let factory = spec.factory.as_deref().unwrap_or("make_dataset");
    let mut names = vec![factory];
    names.extend(spec.collate.as_deref());
    let args: Vec<String> = spec
        .args
        .iter()
        .map(|(name, value)| format!("{name}={}", python_literal(value)))
        .collect();
    let mut code = format!(
        "import sys\n\
         sys.path.insert(0, {})\n\
         from {module} import {}\n\
         dataset = {factory}({})\n",
        python_literal(&serde_json::Value::from(folder.display().to_string())),
        names.join(", "),
        args.join(", ")
    );
    if let Some(samples) = samples {
        code.push_str(&format!(
            "from torch.utils.data import Subset\n\
             # loaderbench measured the first {samples} samples; leave this out to train on all\n\
             dataset = Subset(dataset, range(min({samples}, len(dataset))))\n"
        ));
    }
    if let Some(collate) = &spec.collate {
        code.push_str(&format!("collate_fn = {collate}()\n"));
    }
    code
}

pub(super) fn python_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// A JSON value as a Python literal: JSON's strings, numbers, lists and objects read the
/// same in Python; its `true`, `false` and `null` are spelled `True`, `False`, `None`.
fn python_literal(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(b) => python_bool(*b).to_owned(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}: {}",
                        python_literal(&Value::from(k.as_str())),
                        python_literal(v)
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Value::String(_) | Value::Number(_) => value.to_string(),
    }
}

/// The opening of a snippet that builds a thread loader over the dataset the run read:
/// `import torch`, the measured intra-op threads, `import_line`, the user's dataset as
/// the run made it, and the collate function's name (the user's, else PyTorch's
/// default, imported).
pub(super) fn thread_loader_opening(
    setup: &Preset,
    intra_op_threads: Option<i32>,
    import_line: &str,
) -> (String, &'static str) {
    let user = (setup.dataset.kind == DatasetKind::Python).then_some(&setup.dataset);
    let mut code = String::from("import torch\n");
    if let Some(threads) = intra_op_threads {
        code.push_str(&format!("torch.set_num_threads({threads})\n"));
    }
    code.push_str(import_line);
    if let Some(spec) = user {
        code.push_str(&user_dataset_lines(spec, setup.samples));
    }
    let collate = match user.and_then(|spec| spec.collate.as_ref()) {
        Some(_) => "collate_fn",
        None => {
            code.push_str("from torch.utils.data import default_collate\n");
            "default_collate"
        }
    };
    (code, collate)
}

/// The DistributedSampler of one of `ranks` ranks, as the run made it (its shuffle,
/// seed and drop_last); `epochs` says who sets its epoch.
pub(super) fn distributed_sampler(
    result: &RunResult,
    ranks: usize,
    seed: u64,
    epochs: &str,
) -> String {
    format!(
        "from torch.utils.data.distributed import DistributedSampler\n\
         # in each of the {ranks} ranks, after init_process_group; {epochs}\n\
         sampler = DistributedSampler(dataset, shuffle={}, seed={seed}, drop_last={})\n",
        python_bool(result.shuffle),
        python_bool(result.drop_last)
    )
}
