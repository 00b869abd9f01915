//! The code a recommendation hands over, for the runtime that measured the config: for
//! PyTorch, the `DataLoader(...)` that was measured, with how the user's dataset was
//! built (over a DistributedSampler with several ranks), or for its thread workers the
//! torchdata.nodes graph (`nodes_snippet`); for SPDL, the `spdl.pipeline` pipeline that
//! was measured, over the same dataset and sampler; for loaderbench's engine, the preset
//! lines that make it measure exactly that config.

use serde::Serialize;

use loaderbench_engine::dataset::DatasetKind;
use loaderbench_engine::plan::{Config, KNOBS, KNOBS_IN_CONFIG_ORDER};
use loaderbench_engine::preset::{Runtime, WorkerKind};
use loaderbench_measure::results::RunResult;

use super::nodes_snippet::nodes_snippet;
use super::python_code::{
    distributed_sampler, python_bool, thread_loader_opening, user_dataset_lines,
};

/// Who sets a DistributedSampler's epoch in a DataLoader or SPDL snippet: the user.
const SET_EPOCH: &str = "call sampler.set_epoch(epoch) before every epoch";

/// The code that sets `config` up, for the runtime that measured it.
pub fn snippet(result: &RunResult, config: &Config, intra_op_threads: Option<i32>) -> String {
    match config.runtime {
        Runtime::Pytorch if config.worker_kind == WorkerKind::Thread && config.num_workers > 0 => {
            nodes_snippet(result, config, intra_op_threads)
        }
        Runtime::Pytorch => pytorch_snippet(result, config, intra_op_threads),
        Runtime::Spdl if config.num_workers == 0 => format!(
            "# spdl without workers is DataLoader's own loop, as measured (SPDL's stages \
             run on threads)\n{}",
            pytorch_snippet(result, config, intra_op_threads)
        ),
        Runtime::Spdl => spdl_snippet(result, config, intra_op_threads),
        Runtime::Loaderbench => preset_lines(result, config),
    }
}

/// The SPDL pipeline the spdl runtime measured, as code (`python/spdl_pipeline.py`
/// builds the same): the user's dataset as for PyTorch, the sampler DataLoader would
/// use, seeded and drawn as the run drew it, and a function that builds one epoch's
/// pipeline with the measured concurrency, order, batch, collate, pinning and sink.
/// Pasted, `loader` yields the batches that were measured.
fn spdl_snippet(result: &RunResult, config: &Config, intra_op_threads: Option<i32>) -> String {
    let setup = result.setup.clone().unwrap_or_default();
    let (mut code, collate) = thread_loader_opening(
        &setup,
        intra_op_threads,
        "from spdl.pipeline import PipelineBuilder\n",
    );
    code.push_str(&format!(
        "generator = torch.Generator()\n\
         generator.manual_seed({})  # the run's seed: the order that was measured\n",
        setup.seed
    ));
    code.push_str(&match (config.ranks > 1, result.shuffle) {
        (true, _) => distributed_sampler(result, config.ranks, setup.seed, SET_EPOCH),
        (false, true) => "from torch.utils.data import RandomSampler\n\
             sampler = RandomSampler(dataset, generator=generator)\n"
            .to_owned(),
        (false, false) => "from torch.utils.data import SequentialSampler\n\
             sampler = SequentialSampler(dataset)\n"
            .to_owned(),
    });
    let order = if config.in_order {
        "input"
    } else {
        "completion"
    };
    let pin = if config.pin_memory {
        code.push_str("from torch.utils.data._utils.pin_memory import pin_memory\n");
        "\n        .pipe(pin_memory)"
    } else {
        ""
    };
    let workers = config.num_workers;
    code.push_str(&format!(
        "\n\n\
         def indices():\n    \
             # drawn as DataLoader draws each epoch: its workers' seed, then the order\n    \
             torch.empty((), dtype=torch.int64).random_(generator=generator)\n    \
             yield from sampler\n\n\n\
         def make_loader():\n    \
             # one pipeline an epoch: with loader.auto_stop(): for batch in \
             loader.get_iterator(timeout={timeout}): ...\n    \
             return (\n        \
                 PipelineBuilder()\n        \
                 .add_source(indices())\n        \
                 .pipe(dataset.__getitem__, concurrency={workers}, output_order=\"{order}\")\n        \
                 .aggregate({batch}, drop_last={drop_last})\n        \
                 .pipe({collate}){pin}\n        \
                 .add_sink({sink})\n        \
                 .build(num_threads={workers}, max_failures=0)\n    \
             )\n\n\n\
         loader = make_loader()\n\
         torch.manual_seed({seed})  # as measured: the same random transforms where \
         the threads draw in the same order",
        timeout = setup.worker_timeout_s,
        batch = config.batch_size,
        drop_last = python_bool(result.drop_last),
        sink = config.prefetch_factor * workers,
        seed = setup.seed,
    ));
    code
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
        code.push_str(&distributed_sampler(
            result,
            config.ranks,
            setup.seed,
            SET_EPOCH,
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

/// The preset lines that measure exactly `config` on loaderbench's engine: a knob of
/// the registry per line, one value each, leaving out the knobs this config does not use
/// (a config without workers names no worker kind nor prefetch depth).
fn preset_lines(result: &RunResult, config: &Config) -> String {
    let mut lines = vec![
        format!("shuffle: {},", result.shuffle),
        format!("drop_last: {},", result.drop_last),
    ];
    for knob in KNOBS.iter().filter(|knob| config.uses_knob(knob.field)) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, result};

    fn spdl(num_workers: usize, change: impl FnOnce(&mut Config)) -> (RunResult, Config) {
        let mut config = Config {
            runtime: Runtime::Spdl,
            ..config(num_workers, false)
        };
        change(&mut config);
        let mut run = result(vec![config.clone()], Vec::new());
        run.shuffle = true;
        run.setup = Some(loaderbench_engine::preset::Preset::default());
        (run, config)
    }

    #[test]
    fn spdl_s_snippet_is_the_pipeline_it_measured() {
        let (run, config) = spdl(4, |c| {
            c.in_order = false;
            c.pin_memory = true;
            c.prefetch_factor = 3;
        });
        let code = snippet(&run, &config, Some(2));
        for fragment in [
            "torch.set_num_threads(2)",
            "sampler = RandomSampler(dataset, generator=generator)",
            ".pipe(dataset.__getitem__, concurrency=4, output_order=\"completion\")",
            ".pipe(default_collate)\n        .pipe(pin_memory)",
            ".add_sink(12)",
            ".build(num_threads=4, max_failures=0)",
            "loader = make_loader()",
        ] {
            assert!(code.contains(fragment), "{fragment} missing from:\n{code}");
        }
    }

    #[test]
    fn spdl_without_workers_is_dataloader_s_loop_and_with_ranks_a_distributed_sampler() {
        let (run, config) = spdl(0, |_| {});
        let code = snippet(&run, &config, None);
        assert!(code.contains("DataLoader(dataset,"), "{code}");
        assert!(!code.contains("PipelineBuilder"), "{code}");
        let (run, config) = spdl(2, |c| c.ranks = 2);
        let code = snippet(&run, &config, None);
        assert!(
            code.contains("sampler = DistributedSampler(dataset"),
            "{code}"
        );
    }
}
