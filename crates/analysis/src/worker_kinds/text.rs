//! The comparison's paragraph: a sentence per worker count (how the threads stand
//! against the processes, their typical epochs, memory and CPU time), where threads fall
//! further behind than the GIL can put them, what to do where the noise leaves a count
//! open, then what the GIL estimate says and how it was made.

use super::super::recommend::{MEMORY_TIE_SHARE, RERUN};
use super::super::{mib, workers};
use super::{GilShare, KindPoint, SPDL_THREADS, Standing, WorkerKindComparison};

pub(super) fn paragraph(
    comparison: &WorkerKindComparison,
    tie_margin: f64,
    cores: usize,
) -> String {
    let mut sentences: Vec<String> = comparison
        .points
        .iter()
        .map(|p| count_sentence(comparison, p, tie_margin))
        .collect();
    sentences.extend(hand_off_sentence(comparison, cores));
    let open = |p: &KindPoint| matches!(p.threads_are, Standing::NotResolved | Standing::Disturbed);
    if comparison.points.iter().any(open) {
        sentences.push(format!("To decide, {RERUN}."));
    }
    if let Some(gil) = &comparison.gil {
        sentences.push(gil_sentence(gil, comparison, cores));
    }
    sentences.join(" ")
}

/// `At 4 workers, threads are 1.30× as fast as fork workers beyond the noise (0.85 s
/// against 1.10 s per epoch); they use 900.0 MiB less memory (…) and 2.10 s less CPU
/// time per epoch (…).`
fn count_sentence(c: &WorkerKindComparison, p: &KindPoint, tie_margin: f64) -> String {
    let (threads, processes) = (&c.threads, &c.processes);
    // The ratio goes in the parentheses where the clause does not say it: how fast the
    // threads are, as a multiple of the processes' speed.
    let (speed, ratio) = match p.threads_are {
        Standing::Faster => (
            format!(
                "{threads} are {:.2}× as fast as {processes} beyond the noise",
                p.speedup
            ),
            None,
        ),
        Standing::Slower => (
            format!(
                "{threads} take {:.2}× as long as {processes} beyond the noise",
                1.0 / p.speedup
            ),
            None,
        ),
        Standing::AsFast => (
            format!(
                "{threads} are as fast as {processes} within the {:.0}% tie margin",
                tie_margin * 100.0
            ),
            Some(format!("{:.2}× as fast", p.speedup)),
        ),
        Standing::NotResolved => (
            format!("{threads} against {processes} is not resolved yet"),
            Some(match p.plus_minus {
                Some(plus_minus) => {
                    format!("{:.2}× as fast ± {:.0}%", p.speedup, plus_minus * 100.0)
                }
                None => format!(
                    "{:.2}× as fast, one round shows nothing of the noise",
                    p.speedup
                ),
            }),
        ),
        Standing::Disturbed => {
            return format!(
                "At {}, {threads} against {processes} is not compared: one side ran \
                 while other work kept the machine busy.",
                workers(p.num_workers)
            );
        }
    };
    let epochs = match (p.threads_epoch_s, p.processes_epoch_s) {
        (Some(t), Some(q)) => Some(format!("{} against {} per epoch", seconds(t), seconds(q))),
        _ => None,
    };
    let details: Vec<String> = [epochs, ratio].into_iter().flatten().collect();
    let mut sentence = format!("At {}, {speed}", workers(p.num_workers));
    if !details.is_empty() {
        sentence.push_str(&format!(" ({})", details.join(", ")));
    }
    let costs: Vec<String> = [memory_clause(p), cpu_clause(p, tie_margin)]
        .into_iter()
        .flatten()
        .collect();
    if !costs.is_empty() {
        sentence.push_str(&format!("; they use {}", costs.join(" and ")));
    }
    sentence.push('.');
    sentence
}

/// Where threads fall further behind than the GIL can put them. It runs them one at a
/// time, so against process workers spread over `min(workers, cores)` cores they take at
/// most that many times as long; beyond the noise past that, what holds them back is
/// handing each sample to a thread (SPDL's event loop: about 0.5 ms a sample on this
/// project's 2-core VMs, docs/runtimes.md).
fn hand_off_sentence(c: &WorkerKindComparison, cores: usize) -> Option<String> {
    let spread = |p: &KindPoint| p.num_workers.min(cores).max(1);
    let p = c.points.iter().find(|p| {
        p.threads_are == Standing::Slower
            && p.plus_minus
                .is_some_and(|half| 1.0 / (p.speedup * half.exp()) > spread(p) as f64)
    })?;
    let how = if c.threads == SPDL_THREADS {
        " (SPDL hands each through its event loop: docs/runtimes.md, the SPDL runtime)"
    } else {
        ""
    };
    Some(format!(
        "At {}, {} take longer than the GIL alone can make them (it runs them one at a \
         time, so at most {}× as long as {} spread over {}): handing each sample to a \
         thread costs more than loading it{how}, whatever the sample does, so threads pay \
         where a sample takes milliseconds, not microseconds.",
        workers(p.num_workers),
        c.threads,
        spread(p),
        c.processes,
        loaderbench_engine::counted(spread(p), "core"),
    ))
}

/// `900.0 MiB less memory (312.0 MiB against 1212.0 MiB)`, or about the same within
/// [`MEMORY_TIE_SHARE`].
fn memory_clause(p: &KindPoint) -> Option<String> {
    let (t, q) = (p.threads_memory_bytes?, p.processes_memory_bytes?);
    let both = format!("({} against {})", mib(t), mib(q));
    let difference = t.abs_diff(q);
    Some(if difference as f64 <= MEMORY_TIE_SHARE * t.max(q) as f64 {
        format!("about the same memory {both}")
    } else if t < q {
        format!("{} less memory {both}", mib(difference))
    } else {
        format!("{} more memory {both}", mib(difference))
    })
}

/// `2.10 s less CPU time per epoch (3.00 s against 5.10 s)`, or about the same within
/// the tie margin.
fn cpu_clause(p: &KindPoint, tie_margin: f64) -> Option<String> {
    let (t, q) = (p.threads_cpu_s?, p.processes_cpu_s?);
    let both = format!("({} against {})", seconds(t), seconds(q));
    let difference = (t - q).abs();
    Some(if difference <= tie_margin * t.max(q) {
        format!("about the same CPU time per epoch {both}")
    } else {
        let less = if t < q { "less" } else { "more" };
        format!("{} {less} CPU time per epoch {both}", seconds(difference))
    })
}

/// What the estimate of the GIL's share says, and how it was made or why it could not be.
fn gil_sentence(gil: &GilShare, c: &WorkerKindComparison, cores: usize) -> String {
    let cannot = "How long your `__getitem__` holds the GIL cannot be estimated";
    match gil {
        GilShare::About { share, workers } => format!(
            "Your `__getitem__` holds the GIL for about {:.0}% of its time: estimated from \
             how {} fall behind {} at {} on this machine's {cores} cores (process workers \
             spread all of an item's time, threads only the part without the GIL; busy time \
             alone cannot say, as PIL and torch release it).",
            share * 100.0,
            c.threads,
            c.processes,
            workers_list(workers)
        ),
        GilShare::AtMost { share, workers } => format!(
            "At every count, {} keep up with {}, so your `__getitem__` holds the GIL for at \
             most about {:.0}% of its time (more would hold {workers} threads back); how much \
             less cannot be estimated.",
            c.threads,
            c.processes,
            share * 100.0
        ),
        GilShare::NotResolved => format!(
            "{cannot} yet: {} are slower than {} at no count beyond the noise, nor shown to \
             keep up at all.",
            c.threads, c.processes
        ),
        GilShare::OneCount => format!(
            "{cannot} from one worker count: measure both at two counts or more \
             (num_workers: [2, 4])."
        ),
        GilShare::FewerCores { cores } => format!(
            "{cannot}: the counts measured differ only past this machine's {cores} cores, \
             where process workers get no faster either."
        ),
        GilShare::ProcessesDoNotScale => format!(
            "{cannot}: {} were not faster with more of them beyond the noise, so the epoch \
             does not wait on the items' work.",
            c.processes
        ),
    }
}

/// Seconds with their unit: `1.30 s`, `0.016 s`.
fn seconds(s: f64) -> String {
    format!("{} s", loaderbench_engine::seconds(s))
}

/// `2 and 4 workers`, `2, 4 and 8 workers`.
fn workers_list(workers: &[usize]) -> String {
    let names: Vec<String> = workers.iter().map(usize::to_string).collect();
    let listed = crate::and_list(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let plural = if workers == [1] { "worker" } else { "workers" };
    format!("{listed} {plural}")
}
