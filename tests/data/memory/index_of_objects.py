"""Two Datasets over the same index of `size` records, as users write them: `make_dicts`
keeps the index as a Python list of small dicts (the pattern of pytorch/pytorch#13246:
every forked worker that reads a record writes its reference counts, so the pages
holding the records are copied into the worker one by one, and each worker grows
through the epoch towards a full copy of the list), `make_arrays` keeps it as numpy
arrays (reading a record writes nothing, so workers share the parent's pages). Both
return the same small tensor and label for a record. `make_dicts_read_at_the_end` copies
its whole index into each DataLoader worker at once, while that worker makes its last
batch of an epoch read in order: growth that only a sweep after the last batch sees.
"""

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info


def _path(index):
    return f"images/{index // 1000:04d}/{index:08d}.jpg"


class DictIndex(Dataset):
    def __init__(self, size):
        self.records = [
            {"path": _path(i), "label": i % 1000, "width": 640 + i % 7}
            for i in range(size)
        ]

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        record = self.records[index]
        value = float(len(record["path"]) + record["width"] % 256)
        return torch.full((3, 8, 8), value), record["label"]


class DictIndexReadAtTheEnd(DictIndex):
    """A DictIndex whose workers each read every record while making their last batch
    (batches of `batch_size` in order: a worker's last is one of the last `num_workers`)."""

    def __init__(self, size, batch_size):
        super().__init__(size)
        self.batches = -(-size // batch_size)
        self.batch_size = batch_size

    def __getitem__(self, index):
        worker = get_worker_info()
        last_batches = self.batches - (worker.num_workers if worker else 1)
        if index // self.batch_size >= last_batches and index % self.batch_size == 0:
            self.total_width = sum(record["width"] for record in self.records)
        return super().__getitem__(index)


class ArrayIndex(Dataset):
    def __init__(self, size):
        self.path_lengths = np.array([len(_path(i)) for i in range(size)], dtype=np.int32)
        self.labels = np.arange(size, dtype=np.int64) % 1000
        self.widths = 640 + np.arange(size, dtype=np.int32) % 7

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        value = float(self.path_lengths[index] + self.widths[index] % 256)
        return torch.full((3, 8, 8), value), int(self.labels[index])


def make_dicts(size):
    return DictIndex(size)


def make_dicts_read_at_the_end(size, batch_size):
    return DictIndexReadAtTheEnd(size, batch_size)


def make_arrays(size):
    return ArrayIndex(size)
