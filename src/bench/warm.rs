//! Warming the CPU before an epoch's clock starts. Before every epoch the runner rests
//! (the process goes quiet; in the app the window also draws what the last epoch
//! showed), and on a machine whose cores idle meanwhile the next epoch starts cold: on
//! a 2-core VM, light-pipeline epochs at nw=0 after a 150 ms rest took 30–40 % longer
//! than epochs right after one another, with the same CPU use. The rest is longer in the
//! app than in the CLI (about 25–35 ms), and warming up only after long rests left the
//! app 5–17 % faster than the CLI; so before every epoch of our engine, in both faces
//! alike, [`warm_up`] keeps libtorch's intra-op threads busy with a small elementwise op
//! for [`WARM_UP`]. The op's own rate climbs back within about 20 ms, but epochs after
//! it were as fast as back-to-back ones only after 200 ms. (The PyTorch reference's
//! epochs run back to back in its own process, which this one cannot warm.)

use std::time::{Duration, Instant};

use tch::{Device, Kind, Tensor};

/// How long the warm-up keeps the intra-op threads busy.
pub const WARM_UP: Duration = Duration::from_millis(200);
/// Elements of the op: above libtorch's grain size (32,768), so every intra-op thread
/// takes part, as in a batch's transforms.
const WORK_ELEMENTS: i64 = 1 << 18;

/// Runs the warm-up on this thread's intra-op threads.
pub fn warm_up() {
    let started = Instant::now();
    let work = Tensor::ones([WORK_ELEMENTS], (Kind::Float, Device::Cpu));
    while started.elapsed() < WARM_UP {
        // The result is not needed: the op is the work.
        let _ = (&work * 1.5).sum(Kind::Float);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_lasts_its_time_and_little_more() {
        let started = Instant::now();
        warm_up();
        let took = started.elapsed();
        assert!(took >= WARM_UP, "{took:?}");
        // One op of 256 Ki floats takes well under a millisecond even in a debug build.
        assert!(took < WARM_UP + Duration::from_millis(100), "{took:?}");
    }
}
