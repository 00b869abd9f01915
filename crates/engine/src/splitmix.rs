//! SplitMix64 (Steele, Lea and Flood, 2014), the one generator behind every seeded thing
//! in the engine (the sampler's shuffles and batch seeds, the transforms' per-sample
//! parameters, the synthetic dataset): tiny, well tested, and with an output for a seed
//! fixed by its definition, unlike `rand`'s `StdRng`. [`finalize`] is its output
//! function, which also mixes several inputs into one seed; [`next`] is the generator,
//! and [`skip`] jumps it ahead (its state only counts), so that work drawn from one
//! stream can be split between threads and still draw the same numbers.

/// The generator's increment (the golden ratio in 64 bits).
pub(crate) const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: scrambles `z`'s bits so that nearby inputs give
/// unrelated outputs.
#[inline(always)]
pub(crate) fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64's next output, advancing `state`.
#[inline(always)]
pub(crate) fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(GAMMA);
    finalize(*state)
}

/// The state `draws` calls of [`next`] leave `state` in, at once.
#[inline(always)]
pub(crate) fn skip(state: u64, draws: u64) -> u64 {
    state.wrapping_add(draws.wrapping_mul(GAMMA))
}
