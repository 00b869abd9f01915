"""A user's IterableDataset with a `__len__` that does not split itself between
DataLoader workers: each worker yields all `size` samples, so an epoch with 2 workers
holds twice the batches `len(DataLoader)` says (PyTorch warns of it, and the epoch is
still what the job runs). Each sample takes `delay_s`, so an epoch is long enough to be
cut into a window. loaderbench's tests load it with
`factory: "make_dataset", args: {"size": N, "delay_s": S}`.
"""

import time

import torch
from torch.utils.data import IterableDataset


class EverySampleInEveryWorker(IterableDataset):
    def __init__(self, size, delay_s):
        self.size = size
        self.delay_s = delay_s

    def __len__(self):
        return self.size

    def __iter__(self):
        for index in range(self.size):
            time.sleep(self.delay_s)
            yield torch.full((1, 28, 28), index % 256, dtype=torch.float32), index % 10


def make_dataset(size, delay_s):
    return EverySampleInEveryWorker(size, delay_s)
