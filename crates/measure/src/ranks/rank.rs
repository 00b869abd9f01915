//! One rank's process (the hidden `__rank` command): reads its [`RankJob`] from stdin,
//! opens the dataset and builds the config's loader on its shard, as the runner would,
//! then runs an epoch each time the coordinator says `go`, reporting on stdout; after
//! an epoch's last batch it has the coordinator sweep memory before its workers end. It
//! ends when stdin closes, and dies with the coordinator. For `cache: cold`, it releases
//! its mapped pages of the dataset before each epoch's report, so that the coordinator
//! can evict the files before the next.
//! As under torchrun, `intra_op_threads: auto` means one thread per rank.

use std::cell::RefCell;
use std::io::{BufRead, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use super::rank_messages::{FromRank, GO, RankJob};
use crate::engine_epoch::{build_loader, epoch_window, run_epoch};
use crate::rank_merge::RanksSummary;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset;
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::loader::set_intra_op_threads;
use loaderbench_engine::memory;
use loaderbench_engine::plan::rank_threads;
use loaderbench_engine::preset::Cache;
use loaderbench_engine::step::Step;

/// The rank's side: returns the process's exit code (0 when the coordinator closed its
/// stdin after the last epoch).
pub fn rank_main() -> u8 {
    let mut out = std::io::stdout().lock();
    match serve(&mut out) {
        Ok(()) => 0,
        Err(error) => {
            let _ = send(
                &mut out,
                &FromRank::Failed {
                    error: error.to_string(),
                },
            );
            1
        }
    }
}

fn serve(out: &mut impl Write) -> Result<()> {
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    stdin
        .read_line(&mut line)
        .map_err(|err| Error::run(format!("cannot read the rank's job: {err}")))?;
    let job: RankJob = serde_json::from_str(&line).map_err(|err| {
        Error::run(format!(
            "__rank is started by the rank coordinator, not by hand ({err})"
        ))
    })?;
    let plan = &job.plan;
    let config = &plan.configs[job.config];
    let cancel = CancelToken::new();
    let dataset = dataset::open(&plan.preset.dataset, plan.preset.samples)?;
    let mut loader = build_loader(plan, job.config, &dataset, job.shard, &cancel)?;
    let window = epoch_window(plan, config, &*dataset, job.shard);
    let mut step = Step::new(&plan.preset.step, config.device.resolve()?)?;
    set_intra_op_threads(rank_threads(config.intra_op_threads, job.shard.world));
    memory::reset_peak_rss();
    let rss_before_bytes = memory::rss_bytes();
    let release_mapped_pages = || match config.cache {
        Cache::Cold => dataset.release_mapped_pages(),
        Cache::Warm => Ok(()),
    };
    release_mapped_pages()?;
    send(out, &FromRank::Ready)?;
    let mut epoch = usize::from(!plan.preset.warmup);
    loop {
        line.clear();
        let read = stdin
            .read_line(&mut line)
            .map_err(|err| Error::run(format!("cannot read from the coordinator: {err}")))?;
        if read == 0 {
            break;
        }
        if line.trim() != GO {
            return Err(Error::run(format!(
                "unexpected line from the coordinator: {line}"
            )));
        }
        let started_unix_s = unix_now();
        // Both callbacks below write to stdout, one at a time.
        let writer = RefCell::new(&mut *out);
        let mut unsent = None;
        let mut unswept = None;
        // The coordinator's memory watch samples at its own pace: in an epoch shorter
        // than its interval, workers that end with the epoch would go unseen, so the
        // rank has it sweep once more before they end, and waits until it has.
        let sweep = || {
            let answered = send(&mut **writer.borrow_mut(), &FromRank::Sweep).and_then(|()| {
                let mut answer = String::new();
                match stdin.read_line(&mut answer) {
                    Ok(_) if answer.trim() == GO => Ok(()),
                    _ => Err(Error::run("the coordinator did not answer a sweep")),
                }
            });
            if unswept.is_none() {
                unswept = answered.err();
            }
        };
        let result = run_epoch(
            &mut loader,
            &mut step,
            epoch,
            window,
            sweep,
            |batch, startups| {
                let messages = startups
                    .into_iter()
                    .map(|startup| FromRank::WorkerReady { startup })
                    // Every batch is news: a rank that says nothing for the worker timeout
                    // is hung.
                    .chain([FromRank::Batch { batch }]);
                for message in messages {
                    if unsent.is_none() {
                        unsent = send(&mut **writer.borrow_mut(), &message).err();
                    }
                }
            },
        )?;
        if let Some(error) = unsent.or(unswept) {
            return Err(error);
        }
        let finished_unix_s = unix_now();
        release_mapped_pages()?;
        send(
            out,
            &FromRank::Epoch {
                result: Box::new(result),
                started_unix_s,
                finished_unix_s,
            },
        )?;
        epoch += 1;
    }
    send(
        out,
        &FromRank::Done {
            summary: RanksSummary {
                pin_memory_effective: loader.pin_memory_effective(),
                intra_op_threads: tch::get_num_threads(),
                rss_before_bytes,
                peak_rss_bytes: memory::peak_rss_bytes(),
            },
        },
    )
}

fn send(out: &mut impl Write, message: &FromRank) -> Result<()> {
    let line = serde_json::to_string(message)
        .map_err(|err| Error::run(format!("cannot encode a rank's message: {err}")))?;
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|err| Error::run(format!("the coordinator stopped listening: {err}")))
}

/// Seconds since the Unix epoch by the system clock, which all ranks share.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
