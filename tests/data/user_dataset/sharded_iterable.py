"""A user's IterableDataset that shards itself: each DataLoader worker, as
`torch.utils.data.get_worker_info()` tells it, yields its own slice of the `size`
samples, so that every sample comes exactly once per epoch whatever num_workers is.
loaderbench's tests load it with `factory: "make_dataset", args: {"size": N}`.
"""

import torch
from torch.utils.data import IterableDataset, get_worker_info


class ShardedSamples(IterableDataset):
    def __init__(self, size):
        self.size = size

    def __iter__(self):
        worker = get_worker_info()
        first, step = (0, 1) if worker is None else (worker.id, worker.num_workers)
        for index in range(first, self.size, step):
            yield self.sample(index)

    def sample(self, index):
        return torch.full((1, 28, 28), index % 256, dtype=torch.float32), index % 10


def make_dataset(size):
    return ShardedSamples(size)
