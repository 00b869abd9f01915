//! The search space of `tune --space wide`: the preset's lists widened to the ranges
//! worth trying on this machine. num_workers from 0 to twice the cores in powers of two;
//! persistent workers on and off; prefetch 1 to 8; pin_memory on and off where CUDA is
//! present; the worker kinds (for a preset of our engine alone) and start methods
//! (PyTorch, unless a kind pins one) this OS has. Where the preset measures the spdl
//! runtime, which refuses persistent workers and worker processes, those two stay as the
//! preset has them, as the batch size, the pipeline and everything else do. The preset's
//! description becomes the widened lists'.

use loaderbench_engine::error::Result;
use loaderbench_engine::preset::{Preset, Runtime, WorkerKind};

/// Widens `preset`'s lists for a machine with `cores` logical cores, with CUDA or not.
pub fn widen(preset: &mut Preset, cores: usize, cuda: bool) -> Result<()> {
    let mut workers = vec![0];
    let mut count = 1;
    while count <= 2 * cores.max(1) {
        workers.push(count);
        count *= 2;
    }
    let list = |values: &[&str]| format!("[{}]", values.join(", "));
    let workers: Vec<String> = workers.iter().map(usize::to_string).collect();
    let workers: Vec<&str> = workers.iter().map(String::as_str).collect();
    preset.set("num_workers", &list(&workers))?;
    let pytorch = preset.runtime.contains(&Runtime::Pytorch);
    // SPDL's threads are built every epoch and are threads only: the plan refuses
    // persistent workers and process kinds there, so a preset with spdl keeps its own.
    let spdl = preset.runtime.contains(&Runtime::Spdl);
    let kinds = preset.worker_kind.clone();
    // torchdata.nodes' threads start anew every epoch: the plan refuses them persistent.
    if !spdl {
        let persistent = if pytorch && kinds.contains(&WorkerKind::Thread) {
            "[false]"
        } else {
            "[false, true]"
        };
        preset.set("persistent_workers", persistent)?;
    }
    preset.set("prefetch_factor", "[1, 2, 4, 8]")?;
    preset.set("pin_memory", if cuda { "[false, true]" } else { "[false]" })?;
    // On the PyTorch runtime the kind picks DataLoader's processes or torchdata.nodes'
    // threads, and fork or spawn pins the start method: the kinds widen on our engine
    // alone, the start methods where no kind pins one.
    let pins_start_method = kinds.contains(&WorkerKind::Fork) || kinds.contains(&WorkerKind::Spawn);
    if !pytorch && !spdl {
        preset.set("worker_kind", &list(worker_kinds()))?;
    }
    if pytorch && !pins_start_method {
        preset.set("start_method", &list(start_methods()))?;
    }
    preset.set("extra_configs", "[]")?;
    preset.description = described(preset);
    Ok(())
}

/// The widened space in words, for the preset's description (the preset's own described
/// lists the space no longer holds, and the app showed it beside the wide ones):
/// `tune --space wide of seed-heavy: num_workers 0/1/2/4, persistent false/true, …`.
fn described(preset: &Preset) -> String {
    fn list<T>(values: &[T], name: impl Fn(&T) -> String) -> String {
        values.iter().map(name).collect::<Vec<_>>().join("/")
    }
    let mut lists = vec![
        format!(
            "num_workers {}",
            list(&preset.num_workers, usize::to_string)
        ),
        format!(
            "persistent {}",
            list(&preset.persistent_workers, bool::to_string)
        ),
        format!(
            "prefetch {}",
            list(&preset.prefetch_factor, usize::to_string)
        ),
        format!("pin_memory {}", list(&preset.pin_memory, bool::to_string)),
        format!(
            "worker_kind {}",
            list(&preset.worker_kind, |k| k.name().to_owned())
        ),
    ];
    if preset.runtime.contains(&Runtime::Pytorch) {
        let methods = list(&preset.start_method, |m| m.name().to_owned());
        lists.push(format!("start_method {methods}"));
    }
    format!("tune --space wide of {}: {}", preset.name, lists.join(", "))
}

/// Our engine's worker kinds here: processes exist on Unix only.
fn worker_kinds() -> &'static [&'static str] {
    if cfg!(unix) {
        &["thread", "fork", "spawn"]
    } else {
        &["thread"]
    }
}

/// Python's start methods here: fork and forkserver on Linux; macOS defaults to spawn
/// (fork is unsafe with its system libraries); Windows has only spawn.
fn start_methods() -> &'static [&'static str] {
    if cfg!(target_os = "linux") {
        &["fork", "spawn", "forkserver"]
    } else {
        &["spawn"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_engine::plan::Plan;

    #[test]
    fn the_wide_space_doubles_workers_up_to_twice_the_cores() {
        let mut preset = Preset::default();
        widen(&mut preset, 2, false).unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        let mut workers: Vec<usize> = plan.configs.iter().map(|c| c.num_workers).collect();
        workers.sort_unstable();
        workers.dedup();
        assert_eq!(workers, [0, 1, 2, 4]);
        assert!(
            plan.configs.iter().all(|c| !c.pin_memory),
            "no CUDA, no pinning"
        );
        assert!(plan.configs.iter().any(|c| c.persistent_workers));
        assert!(plan.configs.iter().any(|c| c.prefetch_factor == 8));
        // Its description is the space's, not the preset's own lists.
        let kinds = worker_kinds().join("/");
        assert_eq!(
            preset.description,
            format!(
                "tune --space wide of {}: num_workers 0/1/2/4, persistent false/true, \
                 prefetch 1/2/4/8, pin_memory false, worker_kind {kinds}",
                preset.name
            )
        );
    }

    #[test]
    fn the_wide_space_of_an_spdl_preset_is_a_plan_spdl_runs() {
        let mut preset = Preset::default();
        preset
            .set("runtime", "[loaderbench, pytorch, spdl]")
            .unwrap();
        widen(&mut preset, 2, false).unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert!(plan.configs.iter().any(|c| c.runtime == Runtime::Spdl));
    }

    #[test]
    fn a_wide_space_on_pytorch_is_a_plan_for_every_worker_kind() {
        for (runtime, kinds) in [
            ("[loaderbench, pytorch]", "[auto]"),
            ("[pytorch]", "[auto, thread]"),
            ("[pytorch]", "[fork]"),
            ("[spdl]", "[auto]"),
        ] {
            let mut preset = Preset::default();
            preset.set("runtime", runtime).unwrap();
            preset.set("worker_kind", kinds).unwrap();
            widen(&mut preset, 2, false).unwrap();
            let plan = Plan::from_preset(&preset, None);
            assert!(plan.is_ok(), "{runtime} {kinds}: {:?}", plan.err());
        }
    }

    #[test]
    fn configs_without_workers_are_one_config() {
        let mut preset = Preset::default();
        widen(&mut preset, 2, false).unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        let workerless = plan.configs.iter().filter(|c| c.num_workers == 0).count();
        assert_eq!(workerless, 1);
    }
}
