//! Sampling: which samples each batch of an epoch holds, as PyTorch's RandomSampler and
//! BatchSampler decide it (a fresh permutation every epoch when shuffling; a short last
//! batch unless `drop_last`), and the seed each batch's random augmentations use, so a
//! batch is the same whichever worker builds it. With several ranks, each rank takes
//! its [`Shard`] of the epoch's order as DistributedSampler does: the order padded with
//! its own first samples to a multiple of the ranks (or cut to one with `drop_last`),
//! then every `world`-th sample from position `rank`.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::splitmix;

/// Which part of every epoch a rank loads: rank `rank` of `world` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub rank: usize,
    pub world: usize,
}

impl Shard {
    /// The whole dataset: one rank.
    pub const WHOLE: Shard = Shard { rank: 0, world: 1 };

    /// Samples each rank loads per epoch out of `len`.
    pub fn len(&self, len: usize, drop_last: bool) -> usize {
        if drop_last {
            len / self.world
        } else {
            len.div_ceil(self.world)
        }
    }

    /// This rank's part of an epoch's `order`, as DistributedSampler takes it.
    fn take(&self, order: &[usize], drop_last: bool) -> Vec<usize> {
        if self.world == 1 || order.is_empty() {
            return order.to_vec();
        }
        let total = self.len(order.len(), drop_last) * self.world;
        order
            .iter()
            .cycle()
            .take(total)
            .skip(self.rank)
            .step_by(self.world)
            .copied()
            .collect()
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

/// The sample indices of every batch of epoch `epoch` of `shard`.
pub fn epoch_batches(
    len: usize,
    batch_size: usize,
    shuffle: bool,
    drop_last: bool,
    seed: u64,
    epoch: u64,
    shard: Shard,
) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..len).collect();
    if shuffle {
        order.shuffle(&mut StdRng::seed_from_u64(mix(seed, epoch, u64::MAX)));
    }
    let order = shard.take(&order, drop_last);
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

/// The SplitMix64 finaliser over the three inputs: nearby inputs give unrelated seeds.
pub(super) fn mix(seed: u64, epoch: u64, item: u64) -> u64 {
    splitmix::finalize(
        seed.wrapping_add(epoch.wrapping_mul(splitmix::GAMMA))
            .wrapping_add(item.wrapping_mul(0xD1B5_4A32_D192_ED03)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_batches_keep_order_and_short_tail() {
        let batches = epoch_batches(10, 4, false, false, 0, 0, Shard::WHOLE);
        assert_eq!(
            batches,
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]
        );
        assert_eq!(batches_per_epoch(10, 4, false), 3);
    }

    #[test]
    fn drop_last_drops_the_short_tail_only() {
        assert_eq!(
            epoch_batches(10, 4, false, true, 0, 0, Shard::WHOLE).len(),
            2
        );
        assert_eq!(
            epoch_batches(8, 4, false, true, 0, 0, Shard::WHOLE).len(),
            2
        );
        assert_eq!(batches_per_epoch(10, 4, true), 2);
    }

    #[test]
    fn shuffle_is_a_seeded_permutation_that_changes_per_epoch() {
        let flat = |epoch| -> Vec<usize> {
            epoch_batches(100, 7, true, false, 3, epoch, Shard::WHOLE).concat()
        };
        let mut sorted = flat(0);
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_eq!(flat(0), flat(0));
        assert_ne!(flat(0), flat(1));
        assert_ne!(flat(0), (0..100).collect::<Vec<_>>());
    }

    fn shards(len: usize, world: usize, drop_last: bool, epoch: u64) -> Vec<Vec<usize>> {
        (0..world)
            .map(|rank| {
                epoch_batches(len, 1, true, drop_last, 7, epoch, Shard { rank, world }).concat()
            })
            .collect()
    }

    #[test]
    fn shards_cover_the_epoch_once_padded_with_its_first_samples() {
        for epoch in 0..3 {
            let order = epoch_batches(10, 3, true, false, 7, epoch, Shard::WHOLE).concat();
            let shards = shards(10, 4, false, epoch);
            assert!(shards.iter().all(|s| s.len() == 3), "{shards:?}");
            let mut seen: Vec<usize> = shards.concat();
            seen.sort_unstable();
            // 12 places for 10 samples: the first two of the epoch's order come twice.
            let mut expected: Vec<usize> = (0..10).chain(order[..2].iter().copied()).collect();
            expected.sort_unstable();
            assert_eq!(seen, expected);
            // Rank r takes positions r, r + 4, r + 8 of the padded order.
            assert_eq!(shards[1], [order[1], order[5], order[9]]);
        }
        assert_ne!(shards(10, 4, false, 0), shards(10, 4, false, 1));
    }

    #[test]
    fn shards_with_drop_last_are_equal_and_disjoint() {
        let shards = shards(10, 4, true, 0);
        assert!(shards.iter().all(|s| s.len() == 2), "{shards:?}");
        let mut seen = shards.concat();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 8);
        assert_eq!(Shard { rank: 0, world: 4 }.len(10, true), 2);
    }

    #[test]
    fn batch_seeds_differ() {
        assert_ne!(batch_seed(0, 0, 0), batch_seed(0, 0, 1));
        assert_ne!(batch_seed(0, 0, 0), batch_seed(0, 1, 0));
        assert_eq!(batch_seed(5, 2, 9), batch_seed(5, 2, 9));
    }
}
