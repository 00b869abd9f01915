//! The helper threads that a fused pipeline splits a batch over: one pool per process,
//! started once and kept, so each batch hands its runs to threads that already exist
//! instead of starting new ones. New threads made the epoch depend on how long the
//! machine had rested before it, most likely because Linux places a new thread by how
//! busy each core has been lately and a rest of a few hundred milliseconds erases that,
//! so the helper started on the caller's own core and waited there. Measured on a 2-core VM
//! (heavy, nw=0, 4 interleaved rounds): a thread per batch took 0.216 s an epoch, and
//! 0.266 s after a 400 ms rest (the app rests that long while it draws); the pool took
//! 0.196 s and 0.201 s. A woken pool thread goes back to the core it last ran on when
//! that core is idle, whatever the rest.

use std::sync::{Arc, Mutex};

use rayon::{ThreadPool, ThreadPoolBuilder};

/// The pool and the process it was started in: a forked worker process inherits the
/// memory of the pool but none of its threads, so it must start its own.
struct Pool {
    process: u32,
    threads: Arc<ThreadPool>,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

/// Runs `work` on each of `runs`: the first on the calling thread, each other on a
/// helper thread of the pool, and returns once all are done. Where no helper thread can
/// be started, the calling thread runs them all.
pub fn run_split<T: Send>(runs: Vec<T>, work: impl Fn(T) + Sync) {
    let mut runs = runs.into_iter();
    let Some(first) = runs.next() else {
        return;
    };
    let rest: Vec<T> = runs.collect();
    let work = &work;
    match pool(rest.len()) {
        Some(pool) => pool.in_place_scope(|scope| {
            for run in rest {
                scope.spawn(move |_| work(run));
            }
            work(first);
        }),
        None => std::iter::once(first).chain(rest).for_each(work),
    }
}

/// A pool of at least `helpers` threads in this process; `None` for no helpers, or
/// where no thread can be started.
fn pool(helpers: usize) -> Option<Arc<ThreadPool>> {
    if helpers == 0 {
        return None;
    }
    // A panic elsewhere while the lock was held leaves the pool as usable as before.
    let mut slot = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let process = std::process::id();
    if let Some(pool) = slot.as_ref()
        && pool.process == process
        && pool.threads.current_num_threads() >= helpers
    {
        return Some(pool.threads.clone());
    }
    let threads = ThreadPoolBuilder::new()
        .num_threads(helpers)
        .thread_name(|index| format!("loaderbench-helper-{index}"))
        .build()
        .ok()?;
    let threads = Arc::new(threads);
    *slot = Some(Pool {
        process,
        threads: threads.clone(),
    });
    Some(threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threads_of(runs: usize) -> Vec<std::thread::ThreadId> {
        let seen = Mutex::new(vec![None; runs]);
        run_split((0..runs).collect(), |run| {
            seen.lock().unwrap()[run] = Some(std::thread::current().id());
        });
        seen.into_inner()
            .unwrap()
            .into_iter()
            .map(Option::unwrap)
            .collect()
    }

    #[test]
    fn the_first_run_is_the_callers_and_each_other_a_helpers() {
        let caller = std::thread::current().id();
        let threads = threads_of(3);
        assert_eq!(threads[0], caller);
        assert!(threads[1..].iter().all(|t| *t != caller), "{threads:?}");
        let first = pool(2).unwrap();
        assert!(
            Arc::ptr_eq(&first, &pool(1).unwrap()),
            "a smaller ask reuses the pool"
        );
        assert!(pool(3).unwrap().current_num_threads() >= 3);
    }

    #[test]
    fn one_run_stays_on_the_caller_and_none_is_nothing() {
        assert_eq!(threads_of(1), vec![std::thread::current().id()]);
        assert!(threads_of(0).is_empty());
        assert!(pool(0).is_none());
    }
}
