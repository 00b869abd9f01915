"""Batches as detection and multi-field jobs make them, for loaderbench's tests: each
sample an image and its boxes, batched by `collate()`'s `tuple(zip(*batch))` (images of
different sizes cannot be stacked, so the batch keeps them apart: a tuple of images and
a tuple of targets); and sharded_iterable.py's IterableDataset with samples that are
dicts whose first field is a string (`{"id": ..., "image": ...}`, collated to a list of
ids and a stacked tensor).
Load them with `factory: "make_dataset", args: {"size": N}, collate: Some("make_collate")`
or `factory: "make_iterable", args: {"size": N}`.
"""

import torch
from torch.utils.data import Dataset

from sharded_iterable import ShardedSamples


class Boxes(Dataset):
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        side = 8 + index % 3
        image = torch.full((3, side, side), float(index % 256))
        return image, {"boxes": torch.zeros((1 + index % 2, 4)), "label": index % 10}


def collate(batch):
    return tuple(zip(*batch))


def make_dataset(size):
    return Boxes(size)


def make_collate():
    return collate


class Named(ShardedSamples):
    def sample(self, index):
        return {"id": f"sample-{index}", "image": torch.full((1, 8, 8), float(index % 256))}


def make_iterable(size):
    return Named(size)
