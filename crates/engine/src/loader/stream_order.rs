//! The epoch order of a dataset read as a stream of shards, as WebDataset 1.0 under
//! PyTorch's DataLoader gives it. Ranks take every `world`-th shard from their rank
//! (`split_by_node`), then workers every `num_workers`-th of those (`split_by_worker`),
//! so a worker keeps the same shards every epoch; each worker's shards are shuffled with
//! the run's seed every epoch (`shardshuffle`, which WebDataset applies after the
//! splits); each worker reads its shards front to back through a shuffle buffer (`shuffle(N)`:
//! the buffer fills to N samples, then every sample read sends a randomly chosen held one
//! on, and the rest drain at the end) and batches its own stream, keeping its short last
//! batch unless `drop_last`; the consumer takes batches from the workers round-robin,
//! passing over a worker once its stream has ended, as PyTorch does for an
//! IterableDataset. Every sample of the rank's shards is read exactly once. Workers whose
//! shards hold more samples have longer streams: the epoch's last batches all come from
//! them. With `num_workers = 0` the consumer reads all of the rank's shards as one stream.

use std::ops::Range;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::EpochSize;
use super::sampler::{Shard, mix};

/// What decides a sharded epoch's order, beside the shards themselves.
#[derive(Debug, Clone, Copy)]
pub struct StreamSettings {
    pub shuffle: bool,
    /// Samples each worker's shuffle buffer holds; 0 keeps each shard's member order.
    pub shuffle_buffer: usize,
    pub seed: u64,
    pub batch_size: usize,
    pub drop_last: bool,
    pub num_workers: usize,
    /// This rank's part of the shards.
    pub shard: Shard,
}

/// One epoch's batches over a stream of shards, in the order the consumer takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEpoch {
    /// Each batch's sample indices.
    pub batches: Vec<Vec<usize>>,
    /// The worker that builds each batch (all 0 without workers).
    pub workers: Vec<usize>,
}

/// Epoch `epoch`'s batches over `shards` (each shard's indices, in reading order).
pub fn stream_epoch(shards: &[Range<usize>], settings: &StreamSettings, epoch: u64) -> StreamEpoch {
    let Shard { rank, world } = settings.shard;
    let rank_shards: Vec<usize> = (0..shards.len()).skip(rank).step_by(world.max(1)).collect();
    let workers = settings.num_workers.max(1);
    let streams: Vec<Vec<Vec<usize>>> = (0..workers)
        .map(|worker| {
            let stream = (rank * workers + worker) as u64;
            let mut own: Vec<usize> = rank_shards
                .iter()
                .skip(worker)
                .step_by(workers)
                .copied()
                .collect();
            if settings.shuffle {
                own.shuffle(&mut StdRng::seed_from_u64(mix(
                    settings.seed,
                    epoch,
                    !stream,
                )));
            }
            let samples = own.into_iter().flat_map(|shard| shards[shard].clone());
            let samples = if settings.shuffle && settings.shuffle_buffer > 0 {
                let mut rng = StdRng::seed_from_u64(mix(settings.seed, epoch, stream));
                through_buffer(samples, settings.shuffle_buffer, &mut rng)
            } else {
                samples.collect()
            };
            let mut batches: Vec<Vec<usize>> = samples
                .chunks(settings.batch_size.max(1))
                .map(<[usize]>::to_vec)
                .collect();
            if settings.drop_last
                && batches
                    .last()
                    .is_some_and(|b| b.len() < settings.batch_size)
            {
                batches.pop();
            }
            batches
        })
        .collect();
    round_robin(streams)
}

/// An epoch of `settings` over `shards`: the first epoch's batches and samples (uneven
/// shards can make later epochs differ by a batch or two).
pub fn stream_epoch_size(shards: &[Range<usize>], settings: &StreamSettings) -> EpochSize {
    let batches = stream_epoch(shards, settings, 0).batches;
    EpochSize {
        batches: batches.len(),
        samples: batches.iter().map(Vec::len).sum(),
    }
}

/// `samples` as a shuffle buffer of `capacity` passes them on.
fn through_buffer(
    samples: impl Iterator<Item = usize>,
    capacity: usize,
    rng: &mut StdRng,
) -> Vec<usize> {
    let mut held = Vec::with_capacity(capacity);
    let mut out = Vec::new();
    for sample in samples {
        held.push(sample);
        if held.len() >= capacity {
            out.push(held.swap_remove(rng.random_range(0..held.len())));
        }
    }
    while !held.is_empty() {
        out.push(held.swap_remove(rng.random_range(0..held.len())));
    }
    out
}

/// The workers' batch streams taken one batch from each in turn, skipping ended ones.
fn round_robin(streams: Vec<Vec<Vec<usize>>>) -> StreamEpoch {
    let mut streams: Vec<_> = streams.into_iter().map(Vec::into_iter).collect();
    let mut epoch = StreamEpoch {
        batches: Vec::new(),
        workers: Vec::new(),
    };
    loop {
        let mut took = false;
        for (worker, stream) in streams.iter_mut().enumerate() {
            if let Some(batch) = stream.next() {
                epoch.batches.push(batch);
                epoch.workers.push(worker);
                took = true;
            }
        }
        if !took {
            return epoch;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` shards of `each` samples (the last one `last` samples).
    fn shards(count: usize, each: usize, last: usize) -> Vec<Range<usize>> {
        let mut start = 0;
        (0..count)
            .map(|i| {
                let len = if i + 1 == count { last } else { each };
                start += len;
                start - len..start
            })
            .collect()
    }

    fn settings(num_workers: usize, shuffle_buffer: usize) -> StreamSettings {
        StreamSettings {
            shuffle: true,
            shuffle_buffer,
            seed: 7,
            batch_size: 4,
            drop_last: false,
            num_workers,
            shard: Shard::WHOLE,
        }
    }

    fn sorted(epoch: &StreamEpoch) -> Vec<usize> {
        let mut all = epoch.batches.concat();
        all.sort_unstable();
        all
    }

    #[test]
    fn every_sample_comes_once_whatever_the_worker_count() {
        let shards = shards(5, 10, 7);
        for workers in [0, 1, 2, 3, 4, 8] {
            for epoch in 0..3 {
                let got = stream_epoch(&shards, &settings(workers, 6), epoch);
                assert_eq!(
                    sorted(&got),
                    (0..47).collect::<Vec<_>>(),
                    "{workers} workers"
                );
                assert_eq!(got.batches.len(), got.workers.len());
            }
        }
    }

    #[test]
    fn each_worker_reads_whole_shards_in_turn_and_its_batches_come_round_robin() {
        let shards = shards(4, 8, 8);
        let got = stream_epoch(&shards, &settings(2, 0), 0);
        // Without a buffer, a worker's samples are its shards' members in order.
        let of = |worker: usize| -> Vec<usize> {
            let batches = got.batches.iter().zip(&got.workers);
            batches
                .filter(|(_, w)| **w == worker)
                .flat_map(|(b, _)| b.clone())
                .collect()
        };
        for worker in 0..2 {
            let samples = of(worker);
            let mut shards_read: Vec<usize> = samples.iter().map(|s| s / 8).collect();
            shards_read.dedup();
            assert_eq!(
                shards_read.len(),
                2,
                "worker {worker} reads two whole shards"
            );
            assert!(
                samples
                    .chunks(8)
                    .all(|c| c.windows(2).all(|w| w[1] == w[0] + 1))
            );
        }
        assert_eq!(got.workers, [0, 1, 0, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn a_worker_keeps_its_shards_every_epoch_in_a_fresh_order() {
        let shards = shards(6, 4, 4);
        let of = |epoch: u64, worker: usize| -> Vec<usize> {
            let got = stream_epoch(&shards, &settings(2, 0), epoch);
            let batches = got.batches.iter().zip(&got.workers);
            let samples = batches
                .filter(|(_, w)| **w == worker)
                .flat_map(|(b, _)| b.clone());
            let mut read: Vec<usize> = samples.map(|s| s / 4).collect();
            read.dedup();
            read
        };
        let orders: Vec<Vec<usize>> = (0..6).map(|epoch| of(epoch, 1)).collect();
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(
                sorted,
                [1, 3, 5],
                "worker 1 reads shards 1, 3 and 5 every epoch"
            );
        }
        assert!(orders.iter().any(|o| o != &orders[0]), "in a fresh order");
    }

    #[test]
    fn an_ended_worker_is_passed_over() {
        // Three shards for two workers: worker 0 has two, so the last batches are its.
        let shards = shards(3, 8, 8);
        let got = stream_epoch(&shards, &settings(2, 0), 0);
        assert_eq!(got.workers, [0, 1, 0, 1, 0, 0]);
    }

    #[test]
    fn short_last_batches_are_per_worker_and_drop_last_drops_them() {
        let shards = shards(2, 6, 6);
        let mut s = settings(2, 0);
        let kept = stream_epoch(&shards, &s, 0);
        assert_eq!(
            kept.batches.iter().map(Vec::len).collect::<Vec<_>>(),
            [4, 4, 2, 2]
        );
        s.drop_last = true;
        let dropped = stream_epoch(&shards, &s, 0);
        assert_eq!(dropped.batches.len(), 2);
        assert_eq!(
            stream_epoch_size(&shards, &s),
            EpochSize {
                batches: 2,
                samples: 8
            }
        );
    }

    #[test]
    fn the_buffer_mixes_but_never_sends_on_a_sample_far_ahead_of_the_reads() {
        let mut rng = StdRng::seed_from_u64(1);
        let out = through_buffer(0..100, 10, &mut rng);
        assert_ne!(out, (0..100).collect::<Vec<_>>());
        let mut sorted = out.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        // The p-th sample sent on was read by then: at most 10 reads ahead of p.
        assert!(out.iter().enumerate().all(|(p, &s)| s < p + 10), "{out:?}");
        let shards = shards(4, 25, 25);
        let got = stream_epoch(&shards, &settings(0, 10), 0);
        assert_eq!(
            got,
            stream_epoch(&shards, &settings(0, 10), 0),
            "same seed, same order"
        );
        assert_ne!(got, stream_epoch(&shards, &settings(0, 10), 1));
    }

    #[test]
    fn ranks_split_the_shards_and_together_read_everything_once() {
        let shards = shards(6, 5, 5);
        let mut all = Vec::new();
        for rank in 0..2 {
            let mut s = settings(2, 4);
            s.shard = Shard { rank, world: 2 };
            let got = stream_epoch(&shards, &s, 1);
            assert_eq!(got.batches.concat().len(), 15);
            all.extend(got.batches.concat());
        }
        all.sort_unstable();
        assert_eq!(all, (0..30).collect::<Vec<_>>());
    }
}
