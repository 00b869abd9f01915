//! What the SPDL runtime can run, and the knobs it refuses, each in one line that names
//! the knob and the runtime. The `spdl` runtime maps the sampler's indices through a
//! map-style dataset's `__getitem__` on `num_workers` threads of one pipeline that is
//! built for every epoch (`python/spdl_pipeline.py`): it has no worker processes, so
//! worker process kinds do not apply (nor our engine's process transfers, refused for
//! both Python runtimes by `worker_kinds`; nor start methods, refused where no pytorch
//! config takes them: [`check_start_methods`]), its threads cannot persist between
//! epochs, and a stream of tar shards has no indices to map.

use super::Config;
use crate::dataset::DatasetKind;
use crate::error::FieldError;
use crate::preset::{Preset, Runtime, StartMethod, WorkerKind};

/// Refuses what an spdl `config` asks that SPDL cannot do.
pub(super) fn check(config: &Config) -> Result<(), FieldError> {
    if config.runtime != Runtime::Spdl {
        return Ok(());
    }
    if matches!(config.worker_kind, WorkerKind::Fork | WorkerKind::Spawn) {
        return Err(refused(
            "worker_kind",
            config.worker_kind.name(),
            "its workers are threads of one pipeline; use worker_kind: thread",
        ));
    }
    if config.persistent_workers && config.num_workers > 0 {
        return Err(refused(
            "persistent_workers",
            "true",
            "its pipeline and threads are built for every epoch; leave it false",
        ));
    }
    Ok(())
}

/// Refuses a start method other than the platform's where spdl is the only runtime
/// that could take it: settling resets it on every runtime but PyTorch's, so a preset
/// that also measures PyTorch's DataLoader crosses it with spdl's configs as with our
/// engine's.
pub(super) fn check_start_methods(preset: &Preset) -> Result<(), FieldError> {
    let runtimes = &preset.runtime;
    if !runtimes.contains(&Runtime::Spdl) || runtimes.contains(&Runtime::Pytorch) {
        return Ok(());
    }
    match preset
        .start_method
        .iter()
        .find(|&&method| method != StartMethod::platform_default())
    {
        Some(method) => Err(refused(
            "start_method",
            method.name(),
            "it starts no worker processes; leave start_method out",
        )),
        None => Ok(()),
    }
}

/// Refuses the spdl runtime for a dataset that is read as a stream (tar shards), not by
/// index. (A user's python dataset that turns out iterable is refused by the script,
/// which finds out.)
pub(super) fn check_dataset(kind: DatasetKind, configs: &[Config]) -> Result<(), FieldError> {
    if kind == DatasetKind::Shards && configs.iter().any(|c| c.runtime == Runtime::Spdl) {
        return Err(FieldError::new(
            None,
            "runtime",
            "spdl maps a sampler's indices through a map-style dataset, and shards are read \
             as a stream; use runtime: pytorch or loaderbench for shards",
        ));
    }
    Ok(())
}

fn refused(knob: &str, value: &str, why: &str) -> FieldError {
    let problem = format!("{value} does not apply to the spdl runtime ({why})");
    FieldError::new(None, knob, problem)
}

#[cfg(test)]
mod tests {
    use crate::error::assert_mentions;
    use crate::plan::{Plan, test_plans};
    use crate::preset::{Preset, Runtime};

    /// The default preset on the spdl runtime with `sets`, planned.
    fn plan(sets: &[(&str, &str)]) -> crate::error::Result<Plan> {
        let spdl = [("runtime", "[spdl]")];
        test_plans::plan(&[&spdl[..], sets].concat())
    }

    fn refusal(sets: &[(&str, &str)]) -> String {
        plan(sets).unwrap_err().to_string()
    }

    #[test]
    fn spdl_runs_thread_workers_with_every_dataloader_knob_it_can_honour() {
        let plan = plan(&[
            ("num_workers", "[0, 2]"),
            ("worker_kind", "[thread]"),
            ("in_order", "[true, false]"),
            ("pin_memory", "[true]"),
            ("prefetch_factor", "[4]"),
        ])
        .unwrap();
        // Without workers, batches come in order either way.
        assert_eq!(
            plan.labels(),
            ["nw=0 pin", "nw=2 pin", "nw=2 pin unordered"]
        );
    }

    #[test]
    fn each_knob_spdl_cannot_honour_is_refused_in_one_line_naming_it_and_the_runtime() {
        for (sets, knob) in [
            // Without workers every kind is DataLoader's loop, as on the PyTorch runtime.
            (
                &[("worker_kind", "[fork]"), ("num_workers", "[2]")][..],
                "worker_kind",
            ),
            (
                &[("worker_kind", "[spawn]"), ("num_workers", "[2]")][..],
                "worker_kind",
            ),
            (
                &[("persistent_workers", "[true]"), ("num_workers", "[2]")][..],
                "persistent_workers",
            ),
            (&[("dataset_transfer", "[copy]")][..], "dataset_transfer"),
            (&[("batch_transfer", "[pipe]")][..], "batch_transfer"),
        ] {
            let message = refusal(sets);
            assert!(message.contains(knob), "{message}");
            assert!(message.contains("spdl runtime"), "{message}");
            assert_eq!(message.lines().count(), 1, "{message}");
        }
    }

    /// A built-in preset's persistent extra config under `--set runtime=spdl`: the
    /// refusal names the extra config, not the sweep's list (which says false).
    #[test]
    fn a_value_only_an_extra_config_gives_is_refused_naming_the_extra_config() {
        let message = refusal(&[
            ("num_workers", "[0, 2]"),
            (
                "extra_configs",
                "[(num_workers: 2, persistent_workers: true)]",
            ),
        ]);
        assert!(
            message.contains("field `extra_configs[0].persistent_workers`"),
            "{message}"
        );
    }

    #[test]
    fn a_start_method_is_refused_where_only_spdl_could_take_it() {
        let message = refusal(&[("start_method", "[forkserver]")]);
        assert_mentions(&message, &["start_method", "spdl runtime"]);
        let crossed = plan(&[
            ("runtime", "[pytorch, spdl]"),
            ("num_workers", "[2]"),
            ("start_method", "[fork, forkserver]"),
        ])
        .unwrap();
        let spdl = crossed
            .configs
            .iter()
            .filter(|c| c.runtime == Runtime::Spdl);
        assert_eq!(spdl.count(), 1, "{:?}", crossed.configs);
    }

    #[test]
    fn shards_are_refused_on_spdl_and_not_on_the_other_runtimes() {
        let shards = [("dataset.kind", "shards"), ("dataset.path", "s-{0..1}.tar")];
        let message = refusal(&shards);
        assert_mentions(&message, &["runtime", "spdl"]);
        let mut preset = Preset::default();
        for (path, value) in shards {
            preset.set(path, value).unwrap();
        }
        preset.set("runtime", "[pytorch]").unwrap();
        assert!(Plan::from_preset(&preset, None).is_ok());
    }
}
