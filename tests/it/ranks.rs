//! Ranks end to end on every runtime, through the CLI as a process (loaderbench's rank
//! processes are this program's hidden `__rank` command; the PyTorch and SPDL runtimes'
//! are their script joined in a torch.distributed job): every rank loads its
//! DistributedSampler shard, so the shards cover each epoch once (padding counted as
//! DistributedSampler counts it; the script writes the indices its sampler yields where
//! LOADERBENCH_TRACE_INDICES says); no rank starts an epoch before every rank has
//! finished the one before (the barrier); and a rank killed mid-run ends the run with an
//! error naming it, keeps the configs measured before, and leaves no process behind.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use loaderbench_measure::process_memory::ProcessKind;
use loaderbench_measure::results::RunResult;
use tempfile::TempDir;

use crate::common;
use common::process::{Seen, children_of, children_running, own_processes, pytorch_scripts_of};
use common::runs::SavedRun;
use common::{loaderbench_command, run_with_deadline, stderr, wait_with_deadline};

fn read_result(path: &Path) -> RunResult {
    let text = std::fs::read_to_string(path).expect("the run wrote its JSON");
    serde_json::from_str(&text).expect("the JSON is a run result")
}

/// The folder where the PyTorch runtime's ranks write the indices they load.
const TRACE_VAR: &str = "LOADERBENCH_TRACE_INDICES";

/// What every ranked run here sets: batches of 32, and none of seed-light's extra
/// configs.
const RANKED: [&str; 2] = ["extra_configs=[]", "batch_size=32"];

/// Runs seed-light with `sets` (two epochs and a warm-up, batch 32) to success.
fn sweep(dir: &TempDir, sets: &[&str]) -> RunResult {
    let saved = SavedRun::in_dir(dir.path());
    let all = [&RANKED[..], &["epochs=2", "warmup=true"], sets].concat();
    let mut command = loaderbench_command(&saved.run_args("seed-light", &all));
    command.env(TRACE_VAR, dir.path());
    let output = run_with_deadline(&mut command, Duration::from_secs(240));
    assert!(output.status.success(), "{}", stderr(&output));
    read_result(&saved.json)
}

/// A sweep of 251 samples with `sets`, of `configs` configs, whose shards cover each
/// epoch once behind the barrier (see [`check_shards`]); with its folder. 251 samples:
/// two ranks take 126 each, the first of the epoch's order twice.
fn sharded_sweep(sets: &[&str], configs: usize, drop_last: bool) -> (TempDir, RunResult) {
    let dir = TempDir::new().unwrap();
    let result = sweep(&dir, &[&["samples=251"], sets].concat());
    assert_eq!(result.results.len(), configs, "{sets:?}");
    check_shards(&result, 251, drop_last);
    (dir, result)
}

/// A [`sharded_sweep`] whose last config's PyTorch ranks (two of them) traced the same
/// shards (see [`check_traced_shards`]).
fn traced_sweep(sets: &[&str], configs: usize, drop_last: bool) -> RunResult {
    let (dir, result) = sharded_sweep(sets, configs, drop_last);
    check_traced_shards(dir.path(), 251, 2, drop_last);
    result
}

/// Checks every epoch of every config: samples per rank and in all, and the barrier.
fn check_shards(result: &RunResult, samples: usize, drop_last: bool) {
    assert!(!result.results.is_empty());
    for measured in &result.results {
        let world = measured.config.ranks;
        // drop_last also drops each rank's short last batch of 32, as the DataLoader does.
        let per_rank = if drop_last {
            samples / world / 32 * 32
        } else {
            samples.div_ceil(world)
        };
        let epochs: Vec<_> = measured.warmup.iter().chain(&measured.epochs).collect();
        assert_eq!(epochs.len(), 3, "{}", measured.label);
        for epoch in &epochs {
            assert_eq!(epoch.samples, per_rank * world, "{}", measured.label);
            if world == 1 {
                assert!(epoch.ranks.is_empty());
                continue;
            }
            assert_eq!(epoch.ranks.len(), world, "{}", measured.label);
            for (rank, part) in epoch.ranks.iter().enumerate() {
                assert_eq!(part.rank, rank);
                assert_eq!(part.samples, per_rank, "{} rank {rank}", measured.label);
                assert!(
                    part.seconds <= epoch.seconds,
                    "the epoch is the slowest rank's"
                );
            }
        }
        for pair in epochs.windows(2) {
            let last_end = pair[0]
                .ranks
                .iter()
                .map(|r| r.finished_unix_s)
                .fold(0.0, f64::max);
            let next_start = pair[1]
                .ranks
                .iter()
                .map(|r| r.started_unix_s)
                .fold(f64::INFINITY, f64::min);
            assert!(
                world == 1 || next_start >= last_end,
                "{}: a rank started epoch {} at {next_start} before all ended the last at {last_end}",
                measured.label,
                pair[1].epoch
            );
        }
    }
}

#[test]
fn shards_cover_each_epoch_once_behind_a_barrier() {
    let sets = ["ranks=1,2", "num_workers=0,1", "worker_kind=spawn"];
    let (_dir, result) = sharded_sweep(&sets, 4, false);
    let two = result
        .results
        .iter()
        .find(|r| r.config.ranks == 2 && r.config.num_workers == 1);
    let two = two.expect("ranks=2 nw=1 was measured");
    let ranks = two.processes.iter().filter(|p| p.kind == ProcessKind::Rank);
    assert_eq!(ranks.count(), 2, "each rank sampled: {:?}", two.processes);
    for epoch in &two.epochs {
        let workers = two
            .processes
            .iter()
            .filter(|p| p.kind == ProcessKind::Worker)
            .filter(|p| p.epochs.iter().any(|e| e.epoch == epoch.epoch));
        assert_eq!(
            workers.count(),
            2,
            "one worker per rank in epoch {}",
            epoch.epoch
        );
    }
    let peak = two.memory_peak().expect("the config's memory was sampled");
    assert!(
        peak.rank_pss_bytes > 0 && peak.worker_pss_bytes > 0,
        "{peak:?}"
    );
    let labels: Vec<&str> = result.results.iter().map(|r| r.label.as_str()).collect();
    assert!(labels.iter().any(|l| l.contains("ranks=")), "{labels:?}");
}

#[test]
fn drop_last_gives_equal_shards_without_padding() {
    let sets = [
        "ranks=2",
        "drop_last=true",
        "num_workers=0",
        "runtime=loaderbench,pytorch",
    ];
    traced_sweep(&sets, 2, true);
}

#[test]
fn spdl_ranks_are_a_distributed_job_each_piping_its_sampler_s_shard() {
    traced_sweep(&["ranks=2", "num_workers=2", "runtime=spdl"], 1, false);
}

#[test]
fn pytorch_ranks_are_a_distributed_job_with_real_shards() {
    // The last config traced is ranks=2 with one worker per rank.
    let sets = ["ranks=1,2", "num_workers=0,1", "runtime=pytorch"];
    let result = traced_sweep(&sets, 4, false);
    let two = result.results.iter().find(|r| r.config.ranks == 2);
    let two = two.expect("ranks=2 was measured");
    assert_eq!(
        two.intra_op_threads, 1,
        "one thread per rank, as under torchrun"
    );
}

/// Ranks measure windows too: each rank's epoch is cut once its window is done and
/// projected, and the job's epoch is the slowest rank's projection over every rank's
/// samples. On the PyTorch runtime every rank cuts at the same batch, so a step that
/// all-reduces on every batch (as DDP does) never waits on a rank that stopped.
#[test]
fn ranks_cut_their_epochs_at_a_window_on_both_runtimes() {
    let step = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/step/all_reduce_step.py");
    let all_reduce = format!(
        "python(path: \"{}\", factory: \"make_step\", args: {{\"ms\": \"5\"}})",
        step.display()
    );
    let runs = [
        ("loaderbench", "fixed(5.0)".to_owned()),
        ("pytorch", all_reduce),
    ];
    for (runtime, step) in runs {
        let dir = TempDir::new().unwrap();
        let result = sweep(
            &dir,
            &[
                "samples=2048",
                "batch_size=8",
                "ranks=2",
                "num_workers=0",
                "window_s=0.1",
                &format!("runtime={runtime}"),
                &format!("step={step}"),
            ],
        );
        let [measured] = &result.results[..] else {
            panic!("{runtime}: one config, not {}", result.results.len());
        };
        for epoch in &measured.epochs {
            let projection = epoch.projected.as_ref().unwrap_or_else(|| {
                panic!(
                    "{runtime}: epoch {} was not cut: {:?}",
                    epoch.epoch, epoch.whole_because
                )
            });
            assert!(
                projection.measured_batches < 128,
                "{runtime}: {projection:?}"
            );
            assert_eq!(
                epoch.samples, 2048,
                "{runtime}: every rank's samples, projected"
            );
            assert_eq!(epoch.ranks.len(), 2, "{runtime}");
            for part in &epoch.ranks {
                assert_eq!(part.samples, 1024, "{runtime} rank {}", part.rank);
                assert!(
                    part.seconds <= epoch.seconds,
                    "{runtime}: the slowest rank's"
                );
            }
        }
    }
}

/// The indices each of `world` pytorch ranks' DistributedSampler yielded in each epoch
/// (0 to 2), as the script traced them in `dir`: together they hold every sample once,
/// plus the padding (the epoch's first samples again) or, with `drop_last`, minus the
/// tail; and each epoch is shuffled anew.
fn check_traced_shards(dir: &Path, samples: usize, world: usize, drop_last: bool) {
    let per_rank = if drop_last {
        samples / world
    } else {
        samples.div_ceil(world)
    };
    let mut orders = Vec::new();
    for epoch in 0..3 {
        let mut seen = vec![0usize; samples];
        let mut order = Vec::new();
        for rank in 0..world {
            let path = dir.join(format!("rank{rank}-epoch{epoch}.json"));
            let text = std::fs::read_to_string(&path).expect("the rank traced its indices");
            let indices: Vec<usize> = serde_json::from_str(&text).unwrap();
            assert_eq!(indices.len(), per_rank, "rank {rank}, epoch {epoch}");
            for &index in &indices {
                seen[index] += 1;
            }
            order.extend(indices);
        }
        let twice = seen.iter().filter(|&&n| n == 2).count();
        let never = seen.iter().filter(|&&n| n == 0).count();
        assert!(seen.iter().all(|&n| n <= 2), "epoch {epoch}: {seen:?}");
        if drop_last {
            assert_eq!((twice, never), (0, samples - per_rank * world));
        } else {
            assert_eq!((twice, never), (per_rank * world - samples, 0));
        }
        orders.push(order);
    }
    assert_ne!(orders[1], orders[2], "set_epoch reshuffles every epoch");
}

/// Processes whose parent is `pid`, with their command lines.
fn children(pid: u32) -> Vec<(u32, String)> {
    children_of(pid)
        .into_iter()
        .map(|child| {
            let cmdline =
                std::fs::read_to_string(format!("/proc/{child}/cmdline")).unwrap_or_default();
            (child, cmdline.replace('\0', " "))
        })
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn a_killed_rank_fails_the_run_by_name_and_leaves_nothing_behind() {
    let ranks_of = |cli| children_running(cli, "__rank");
    kill_rank_1_mid_epoch(&["worker_kind=spawn", "step={\"fixed\":20.0}"], ranks_of);
}

#[cfg(target_os = "linux")]
#[test]
fn a_killed_pytorch_rank_fails_the_run_by_name_and_leaves_no_python_behind() {
    kill_rank_1_mid_epoch(&["runtime=pytorch", "samples=16000"], pytorch_scripts_of);
}

/// How long a run whose rank was killed may take to end: the other rank and every
/// worker killed, the tables and exports written, on a loaded machine.
const STOP_LIMIT: Duration = Duration::from_secs(8);

/// Runs ranks 1 and 2 with a worker per rank, kills rank 1 of the second config (of the
/// rank processes `ranks_of` finds for the CLI's pid) once both ranks have their workers,
/// and checks the run's end.
fn kill_rank_1_mid_epoch(sets: &[&str], ranks_of: impl Fn(u32) -> Vec<u32>) {
    let dir = TempDir::new().unwrap();
    let saved = SavedRun::in_dir(dir.path());
    // Config 0 (one rank) is measured first and must survive the failure of config 1.
    let one_worker_per_rank = ["samples=2000", "epochs=1", "ranks=1,2", "num_workers=1"];
    let all = [&RANKED[..], &one_worker_per_rank, sets].concat();
    // The ranks are found below the CLI.
    let child = own_processes(&mut loaderbench_command(
        &saved.run_args("seed-light", &all),
    ))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let cli = child.id();
    // Config 0 comes first; on a loaded machine, with the other tests beside this one,
    // it and the Python ranks' start-up take a while.
    let ranks = common::wait_for(Duration::from_secs(300), "the ranks to start", || {
        let ranks = ranks_of(cli);
        // Both ranks up, each with its worker: the epoch is under way.
        (ranks.len() == 2 && ranks.iter().all(|&r| !children(r).is_empty())).then_some(ranks)
    });
    let workers: Vec<u32> = ranks
        .iter()
        .flat_map(|&r| children(r))
        .map(|(pid, _)| pid)
        .collect();
    let seen: Vec<Seen> = ranks
        .iter()
        .chain(&workers)
        .filter_map(|&p| Seen::now(p))
        .collect();
    // Children are listed in /proc order, which is pid order: rank 1 started second.
    let rank_1 = *ranks.iter().max().unwrap();
    // SAFETY: kill takes a pid and a signal; the pid is a rank of the CLI we started.
    unsafe {
        libc::kill(rank_1 as libc::pid_t, libc::SIGKILL);
    }
    let killed = Instant::now();
    let output = wait_with_deadline(child, Duration::from_secs(60));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("rank 1 died"), "{err}");
    // A dead Python rank was released to its preloaded Python twice, and the second
    // release, of a pid it no longer had, went unanswered for 10 s.
    assert!(
        killed.elapsed() < STOP_LIMIT,
        "ended {:?} after the kill",
        killed.elapsed()
    );
    let result = read_result(&saved.json);
    assert_eq!(result.results.len(), 1, "config 0 is kept");
    assert_eq!(result.results[0].config.ranks, 1);
    let left = || seen.iter().any(Seen::running);
    common::wait_until(
        Duration::from_secs(5),
        "every rank and worker to end",
        || !left(),
    );
}

/// ddp-light, shrunk to ranks 1/2 × num_workers 0/1 on 512 samples, runs in the window
/// (under Xvfb) on both runtimes, as `loaderbench gui ddp-light --run --exit` runs it.
#[test]
#[cfg(feature = "gui")]
fn a_shrunken_ddp_light_runs_in_the_window_on_both_runtimes() {
    let dir = TempDir::new().unwrap();
    let (mut preset, _) = loaderbench_engine::builtin::load("ddp-light").unwrap();
    for (key, value) in [("samples", "512"), ("ranks", "1,2"), ("num_workers", "0,1")] {
        preset.set(key, value).unwrap();
    }
    let path = dir.path().join("ddp-tiny.ron");
    preset.save(&path).unwrap();
    let json = dir.path().join("app.json");
    let limit = Duration::from_secs(300);
    let Some(output) = common::gui::run_in_window(&path, &json, dir.path(), limit) else {
        return;
    };
    let result = read_result(&json);
    assert!(
        output.status.success(),
        "{:?} {:?}: {}",
        output.status,
        result.status,
        stderr(&output)
    );
    assert_eq!(result.results.len(), 8);
    for measured in &result.results {
        let ranks = measured.epochs.iter().map(|e| e.ranks.len()).max();
        let expected = if measured.config.ranks == 1 { 0 } else { 2 };
        assert_eq!(ranks, Some(expected), "{}", measured.label);
    }
    let pytorch = result
        .results
        .iter()
        .filter(|r| r.config.runtime == loaderbench_engine::preset::Runtime::Pytorch);
    assert_eq!(pytorch.count(), 4);
}
