//! Sampling: which samples each batch of an epoch holds, as PyTorch's RandomSampler and
//! BatchSampler decide it (a fresh permutation every epoch when shuffling; a short last
//! batch unless `drop_last`), and the seed each batch's random augmentations use, so a
//! batch is the same whichever worker builds it.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

/// The sample indices of every batch of epoch `epoch`.
pub fn epoch_batches(
    len: usize,
    batch_size: usize,
    shuffle: bool,
    drop_last: bool,
    seed: u64,
    epoch: u64,
) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..len).collect();
    if shuffle {
        order.shuffle(&mut StdRng::seed_from_u64(mix(seed, epoch, u64::MAX)));
    }
    let mut batches: Vec<Vec<usize>> = order.chunks(batch_size).map(<[usize]>::to_vec).collect();
    if drop_last && batches.last().is_some_and(|b| b.len() < batch_size) {
        batches.pop();
    }
    batches
}

/// Number of batches an epoch has.
pub fn batches_per_epoch(len: usize, batch_size: usize, drop_last: bool) -> usize {
    if drop_last {
        len / batch_size
    } else {
        len.div_ceil(batch_size)
    }
}

/// The seed for batch `batch` of epoch `epoch`.
pub fn batch_seed(seed: u64, epoch: u64, batch: usize) -> u64 {
    mix(seed, epoch, batch as u64)
}

/// SplitMix64 finalizer over the three inputs: nearby inputs give unrelated seeds.
fn mix(seed: u64, epoch: u64, item: u64) -> u64 {
    let mut z = seed
        .wrapping_add(epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(item.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_batches_keep_order_and_short_tail() {
        let batches = epoch_batches(10, 4, false, false, 0, 0);
        assert_eq!(
            batches,
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]
        );
        assert_eq!(batches_per_epoch(10, 4, false), 3);
    }

    #[test]
    fn drop_last_drops_the_short_tail_only() {
        assert_eq!(epoch_batches(10, 4, false, true, 0, 0).len(), 2);
        assert_eq!(epoch_batches(8, 4, false, true, 0, 0).len(), 2);
        assert_eq!(batches_per_epoch(10, 4, true), 2);
    }

    #[test]
    fn shuffle_is_a_seeded_permutation_that_changes_per_epoch() {
        let flat = |epoch| -> Vec<usize> { epoch_batches(100, 7, true, false, 3, epoch).concat() };
        let mut sorted = flat(0);
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_eq!(flat(0), flat(0));
        assert_ne!(flat(0), flat(1));
        assert_ne!(flat(0), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn batch_seeds_differ() {
        assert_ne!(batch_seed(0, 0, 0), batch_seed(0, 0, 1));
        assert_ne!(batch_seed(0, 0, 0), batch_seed(0, 1, 0));
        assert_eq!(batch_seed(5, 2, 9), batch_seed(5, 2, 9));
    }
}
