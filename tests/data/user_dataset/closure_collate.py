"""A user's Dataset whose collate_fn is a closure (`make_collate` returns a nested
function): fine in the main process and with forked workers, but `start_method: spawn`
must pickle it for each worker, and Python cannot pickle a local object. loaderbench's
tests load it with `factory: "make_dataset", args: {"size": N}, collate: Some("make_collate")`.
"""

import torch
from numbered import Numbered


def make_dataset(size):
    return Numbered(size)


def make_collate(scale=1.0):
    def collate(samples):
        images = torch.stack([image for image, _ in samples]) * scale
        return images, torch.tensor([label for _, label in samples])

    return collate
