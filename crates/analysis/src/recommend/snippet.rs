//! The code a recommendation hands over, for the runtime that measured the config: for
//! PyTorch, the `DataLoader(...)` that was measured, with how the user's dataset was
//! built (over a DistributedSampler with several ranks), or for its thread workers the
//! torchdata.nodes graph (`nodes_snippet`); for loaderbench's engine, the preset lines
//! that make it measure exactly that config.

use std::path::Path;

use serde::Serialize;

use loaderbench_engine::dataset::{DatasetKind, DatasetSpec};
use loaderbench_engine::plan::{Config, KNOBS, KNOBS_IN_CONFIG_ORDER};
use loaderbench_engine::preset::{Runtime, WorkerKind};
use loaderbench_measure::results::RunResult;

use super::nodes_snippet::nodes_snippet;

/// The code that sets `config` up, for the runtime that measured it.
pub fn snippet(result: &RunResult, config: &Config, intra_op_threads: Option<i32>) -> String {
    match config.runtime {
        Runtime::Pytorch if config.worker_kind == WorkerKind::Thread && config.num_workers > 0 => {
            nodes_snippet(result, config, intra_op_threads)
        }
        Runtime::Pytorch => pytorch_snippet(result, config, intra_op_threads),
        Runtime::Loaderbench => preset_lines(result, config),
    }
}

/// The DataLoader the pytorch runtime measured, as code: for the user's own dataset,
/// how it was built (the factory call with its arguments, the samples the run kept, the
/// collate_fn); then `DataLoader(dataset, batch_size=256, num_workers=4, …)` with every
/// argument that differs from DataLoader's defaults: each knob that is a DataLoader
/// argument (in the knob table's order, only those PyTorch accepts for that many
/// workers), the worker timeout, the collate_fn, and how samples are drawn, seeded as the
/// run was (over each rank's DistributedSampler with several ranks). Pasted, it yields
/// the batches that were measured.
fn pytorch_snippet(result: &RunResult, config: &Config, intra_op_threads: Option<i32>) -> String {
    let setup = result.setup.clone().unwrap_or_default();
    let ranked = config.ranks > 1;
    let user = (setup.dataset.kind == DatasetKind::Python).then_some(&setup.dataset);
    let mut code = String::from(
        "import torch
",
    );
    if let Some(threads) = intra_op_threads {
        code.push_str(&format!("torch.set_num_threads({threads})\n"));
    }
    code.push_str(
        "from torch.utils.data import DataLoader
",
    );
    if let Some(spec) = user {
        code.push_str(&user_dataset_lines(spec, setup.samples));
    }
    let mut args = vec!["dataset".to_owned()];
    args.extend(KNOBS_IN_CONFIG_ORDER.iter().filter_map(|knob| {
        let python = knob.python.as_ref()?;
        Some(format!("{}={}", python.keyword, (python.value)(config)?))
    }));
    if config.num_workers > 0 && setup.worker_timeout_s > 0.0 {
        args.push(format!("timeout={}", setup.worker_timeout_s));
    }
    if user.is_some_and(|spec| spec.collate.is_some()) {
        args.push("collate_fn=collate_fn".to_owned());
    }
    if ranked {
        code.push_str(&format!(
            "from torch.utils.data.distributed import DistributedSampler\n\
             # in each of the {} ranks, after init_process_group; call \
             sampler.set_epoch(epoch) before every epoch\n\
             sampler = DistributedSampler(dataset, shuffle={}, seed={}, drop_last={})\n",
            config.ranks,
            python_bool(result.shuffle),
            setup.seed,
            python_bool(result.drop_last)
        ));
        args.push("sampler=sampler".to_owned());
    } else {
        args.push(format!("shuffle={}", python_bool(result.shuffle)));
        if result.shuffle {
            code.push_str(&format!(
                "generator = torch.Generator()\n\
                 generator.manual_seed({})  # the run's seed: the order that was measured\n",
                setup.seed
            ));
            args.push("generator=generator".to_owned());
        }
    }
    if result.drop_last {
        args.push("drop_last=True".to_owned());
    }
    code.push_str(&format!("loader = DataLoader({})\n", args.join(", ")));
    code.push_str(&format!(
        "torch.manual_seed({})  # as measured: the same random transforms",
        setup.seed
    ));
    code
}

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

/// The preset lines that measure exactly `config` on loaderbench's engine: every knob
/// of the registry, one value each.
fn preset_lines(result: &RunResult, config: &Config) -> String {
    let mut lines = vec![
        format!("shuffle: {},", result.shuffle),
        format!("drop_last: {},", result.drop_last),
    ];
    for knob in &KNOBS {
        let value = match knob.field {
            // Presets write these as RON values, not as the names tables show.
            "pipeline" => ron(&config.pipeline),
            "device" => format!("\"{}\"", config.device),
            _ => (knob.value)(config),
        };
        lines.push(format!("{}: [{value}],", knob.field));
    }
    lines.join("\n")
}

/// A knob value the way a preset spells it.
fn ron<T: Serialize>(value: &T) -> String {
    // Knob values are plain enums and structs of numbers and strings, which RON always
    // serializes.
    ron::to_string(value).expect("a knob value serializes to RON")
}
