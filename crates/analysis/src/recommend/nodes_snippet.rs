//! The snippet for torchdata.nodes threads (`worker_kind: thread` with workers on the
//! PyTorch runtime): the graph the runtime measured (`python/pytorch_nodes.py`), as
//! code a user pastes: the sampler DataLoader would use, `ParallelMapper` over the
//! dataset's `__getitem__` in threads, batching, the collate_fn, pinning and prefetch.

use loaderbench_engine::plan::Config;
use loaderbench_measure::results::RunResult;

use super::python_code::{distributed_sampler, python_bool, thread_loader_opening};

/// A shuffling sampler in DataLoader's order, as the runtime measured it.
const DATALOADER_ORDER: &str = "\
# DataLoader's order for this seed: its iterator takes a number from the generator
# (its workers' base seed) before the sampler shuffles, every epoch
class DataLoaderOrder(Sampler):
    def __init__(self, sampler, generator):
        self.sampler, self.generator = sampler, generator

    def __len__(self):
        return len(self.sampler)

    def __iter__(self):
        torch.empty((), dtype=torch.int64).random_(generator=self.generator)
        return iter(self.sampler)


";

/// The torchdata.nodes loader the PyTorch runtime measured for `config`: for the
/// user's own dataset, how it was built; the sampler seeded as the run was (each rank's
/// DistributedSampler with several ranks); then the graph, ending in `loader`. Pasted, it
/// yields the batches that were measured.
pub(super) fn nodes_snippet(
    result: &RunResult,
    config: &Config,
    intra_op_threads: Option<i32>,
) -> String {
    let setup = result.setup.clone().unwrap_or_default();
    let (mut code, collate) =
        thread_loader_opening(&setup, intra_op_threads, "import torchdata.nodes as tn\n");
    code.push_str(&sampler_lines(result, config, setup.seed));
    let mut graph = vec![
        "tn.SamplerWrapper(sampler)".to_owned(),
        format!(
            "tn.ParallelMapper(node, map_fn=dataset.__getitem__, num_workers={}, \
             method=\"thread\", in_order={})",
            config.num_workers,
            python_bool(config.in_order)
        ),
        format!(
            "tn.Batcher(node, batch_size={}, drop_last={})",
            config.batch_size,
            python_bool(result.drop_last)
        ),
        format!("tn.Mapper(node, {collate})"),
    ];
    if config.pin_memory {
        graph.push("tn.PinMemory(node)".to_owned());
    }
    graph.push(format!(
        "tn.Prefetcher(node, prefetch_factor={})",
        config.prefetch_factor * config.num_workers
    ));
    for node in graph {
        code.push_str(&format!("node = {node}\n"));
    }
    code.push_str("loader = tn.Loader(node)\n");
    code.push_str(&format!(
        "torch.manual_seed({})  # as measured: the same random transforms",
        setup.seed
    ));
    code
}

/// The sampler the DataLoader would have used, seeded as the run was.
fn sampler_lines(result: &RunResult, config: &Config, seed: u64) -> String {
    if config.ranks > 1 {
        let epochs = "SamplerWrapper sets its epoch every epoch";
        return distributed_sampler(result, config.ranks, seed, epochs);
    }
    if !result.shuffle {
        return "from torch.utils.data import SequentialSampler\n\
                sampler = SequentialSampler(dataset)\n"
            .to_owned();
    }
    format!(
        "from torch.utils.data import RandomSampler, Sampler\n\
         generator = torch.Generator()\n\
         generator.manual_seed({seed})  # the run's seed: the order that was measured\n\
         {DATALOADER_ORDER}\
         sampler = DataLoaderOrder(RandomSampler(dataset, generator=generator), generator)\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_engine::preset::{Runtime, WorkerKind};
    use loaderbench_measure::fixtures::{config, result};

    fn threads(workers: usize) -> Config {
        let mut c = config(workers, false);
        c.runtime = Runtime::Pytorch;
        c.worker_kind = WorkerKind::Thread;
        c.pin_memory = true;
        c
    }

    #[test]
    fn the_graph_maps_in_threads_batches_collates_pins_and_prefetches() {
        let c = threads(4);
        let mut run = result(vec![c.clone()], vec![]);
        run.shuffle = true;
        let code = super::super::snippet(&run, &c, Some(2));
        assert!(
            code.starts_with("import torch\ntorch.set_num_threads(2)\n"),
            "{code}"
        );
        for line in [
            "node = tn.SamplerWrapper(sampler)\n",
            "node = tn.ParallelMapper(node, map_fn=dataset.__getitem__, num_workers=4, \
             method=\"thread\", in_order=True)\n",
            "node = tn.Batcher(node, batch_size=64, drop_last=False)\n",
            "node = tn.Mapper(node, default_collate)\n",
            "node = tn.PinMemory(node)\n",
            "node = tn.Prefetcher(node, prefetch_factor=8)\n",
            "loader = tn.Loader(node)\n",
            "sampler = DataLoaderOrder(RandomSampler(dataset, generator=generator), generator)\n",
        ] {
            assert!(code.contains(line), "{line}\n{code}");
        }
    }

    #[test]
    fn without_workers_the_snippet_is_dataloaders() {
        let c = threads(0);
        let run = result(vec![c.clone()], vec![]);
        let code = super::super::snippet(&run, &c, None);
        assert!(code.contains("loader = DataLoader(dataset"), "{code}");
        assert!(!code.contains("torchdata"), "{code}");
    }
}
