"""A user's map-style Dataset whose every 7th sample is 27×27 instead of 28×28, so that
the default collate fails to stack a batch, in the main process or in a worker, as
loaderbench's tests load it with `factory: "make_dataset", args: {"size": N}`.
"""

import torch

from numbered import Numbered


class Uneven(Numbered):
    def __getitem__(self, index):
        side = 27 if index % 7 == 0 else 28
        return torch.zeros((1, side, side)), index % 10


def make_dataset(size):
    return Uneven(size)
