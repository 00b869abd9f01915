//! The code a recommendation hands over, for the runtime that measured the config: a
//! `DataLoader(...)` call for PyTorch (over a DistributedSampler with several ranks), or
//! the preset lines that make loaderbench's engine measure exactly that config.

use serde::Serialize;

use loaderbench_engine::plan::{Config, KNOBS, KNOBS_IN_CONFIG_ORDER};
use loaderbench_engine::preset::Runtime;
use loaderbench_measure::results::RunResult;

/// The code that sets `config` up, for the runtime that measured it.
pub fn snippet(result: &RunResult, config: &Config, intra_op_threads: Option<i32>) -> String {
    match config.runtime {
        Runtime::Pytorch => pytorch_snippet(result, config, intra_op_threads),
        Runtime::Loaderbench => preset_lines(result, config),
    }
}

/// `DataLoader(dataset, batch_size=256, num_workers=4, …, shuffle=True)`: each knob that
/// is a DataLoader argument (in the knob table's order, only those PyTorch accepts for
/// that many workers), then how samples are drawn; with several ranks, over each rank's
/// DistributedSampler, as the pytorch runtime measured it.
fn pytorch_snippet(result: &RunResult, config: &Config, intra_op_threads: Option<i32>) -> String {
    let python_bool = |b: bool| if b { "True" } else { "False" };
    let ranked = config.ranks > 1;
    let mut args = vec!["dataset".to_owned()];
    args.extend(KNOBS_IN_CONFIG_ORDER.iter().filter_map(|knob| {
        let python = knob.python.as_ref()?;
        Some(format!("{}={}", python.keyword, (python.value)(config)?))
    }));
    args.push(if ranked {
        "sampler=sampler".to_owned()
    } else {
        format!("shuffle={}", python_bool(result.shuffle))
    });
    if result.drop_last {
        args.push("drop_last=True".to_owned());
    }
    let mut code = String::new();
    if let Some(threads) = intra_op_threads {
        code.push_str(&format!("import torch\ntorch.set_num_threads({threads})\n"));
    }
    code.push_str("from torch.utils.data import DataLoader\n");
    if ranked {
        code.push_str(&format!(
            "from torch.utils.data.distributed import DistributedSampler\n\
             # in each of the {} ranks, after init_process_group; call \
             sampler.set_epoch(epoch) before every epoch\n\
             sampler = DistributedSampler(dataset, shuffle={}, drop_last={})\n",
            config.ranks,
            python_bool(result.shuffle),
            python_bool(result.drop_last)
        ));
    }
    code.push_str(&format!("loader = DataLoader({})", args.join(", ")));
    code
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
