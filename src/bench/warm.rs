//! Warming the CPU before an epoch's clock starts. Before every epoch the runner rests
//! (the process goes quiet; in the app the window also draws what the last epoch
//! showed), and on a machine whose cores idle meanwhile the next epoch starts cold: on
//! a 2-core VM, light-pipeline epochs at nw=0 after a 150 ms rest took 30–40 % longer
//! than epochs right after one another, with the same CPU use. The rest is longer in the
//! app than in the CLI (about 25–35 ms), and warming up only after long rests left the
//! app 5–17 % faster than the CLI; so before every epoch, in both faces alike,
//! [`warm_up`] keeps libtorch's intra-op threads busy with a small elementwise op for at
//! least [`MIN_WARM`], and on until its rate stops rising ([`is_steady`]), at most
//! [`MAX_WARM`]. The op's rate climbs back within about 20 ms, but epochs after it were
//! as fast as back-to-back ones only after a 200 ms warm-up.

use std::time::{Duration, Instant};

use tch::{Device, Kind, Tensor};

/// Each rate is measured over this long.
const CHUNK: Duration = Duration::from_millis(5);
/// The shortest warm-up.
const MIN_WARM: Duration = Duration::from_millis(200);
/// The longest warm-up, whatever the rates do.
const MAX_WARM: Duration = Duration::from_millis(300);
/// Steady once this many chunks in a row brought no rate above the best before them...
const FLAT_CHUNKS: usize = 4;
/// ...by more than this share.
const RISE: f64 = 0.02;
/// Elements of the op: above libtorch's grain size (32,768), so every intra-op thread
/// takes part, as in a batch's transforms.
const WORK_ELEMENTS: i64 = 1 << 18;

/// Runs the warm-up on this thread's intra-op threads; returns how long it took.
pub fn warm_up() -> Duration {
    let started = Instant::now();
    let work = Tensor::ones([WORK_ELEMENTS], (Kind::Float, Device::Cpu));
    let mut rates = Vec::new();
    loop {
        let chunk = Instant::now();
        let mut ops = 0_u32;
        while chunk.elapsed() < CHUNK {
            // The result is not needed: the op is the work.
            let _ = (&work * 1.5).sum(Kind::Float);
            ops += 1;
        }
        rates.push(f64::from(ops) / chunk.elapsed().as_secs_f64());
        let elapsed = started.elapsed();
        if elapsed >= MAX_WARM || (elapsed >= MIN_WARM && is_steady(&rates)) {
            return elapsed;
        }
    }
}

/// Whether the last [`FLAT_CHUNKS`] rates rose no more than [`RISE`] above the best rate
/// before them.
fn is_steady(rates: &[f64]) -> bool {
    let Some(split) = rates.len().checked_sub(FLAT_CHUNKS).filter(|&s| s > 0) else {
        return false;
    };
    let (before, last) = rates.split_at(split);
    let best_before = before.iter().copied().fold(f64::MIN, f64::max);
    last.iter().all(|&rate| rate <= best_before * (1.0 + RISE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rising_rates_are_not_steady_and_a_plateau_is() {
        // A CPU coming back from a rest: the rate climbs, then holds.
        let mut rates = vec![40.0, 55.0, 70.0, 85.0, 100.0, 101.0, 99.0];
        assert!(!is_steady(&rates), "still within the climb");
        rates.extend([100.5, 101.5]);
        assert!(is_steady(&rates), "four chunks without a rise");
    }

    #[test]
    fn too_few_chunks_are_never_steady() {
        assert!(!is_steady(&[]));
        assert!(!is_steady(&[100.0; FLAT_CHUNKS]));
        assert!(is_steady(&[100.0; FLAT_CHUNKS + 1]));
    }

    #[test]
    fn a_late_rise_restarts_the_wait() {
        let rates = [100.0, 100.0, 100.0, 100.0, 100.0, 110.0, 110.0, 110.0];
        assert!(!is_steady(&rates));
    }

    #[test]
    fn the_warm_up_ends_within_its_bounds() {
        let took = warm_up();
        assert!(took >= MIN_WARM, "{took:?}");
        assert!(took < MAX_WARM + CHUNK * 4, "{took:?}");
    }
}
