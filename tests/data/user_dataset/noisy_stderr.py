"""A user's map-style Dataset whose `__getitem__` writes bytes that are not UTF-8 to
stderr (a C library's warning in another encoding, say), as loaderbench's tests load it
with `factory: "make_dataset", args: {"size": N}`: the run reads the child's stderr as
bytes and goes on.
"""

import sys

import torch
from torch.utils.data import Dataset


class NoisyStderr(Dataset):
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        sys.stderr.buffer.write(b"\xff\xfe warning\n")
        sys.stderr.buffer.flush()
        image = torch.full((1, 28, 28), index % 256, dtype=torch.float32) / 255
        return image, index % 10


def make_dataset(size):
    return NoisyStderr(size)
