"""A user's map-style Dataset whose samples are dicts ({"image": tensor, "label": int}),
as loaderbench's tests load it with `factory: "make_dataset", args: {"size": N}`:
measured with PyTorch's default collate, which batches dicts key by key, and with
`collate: Some("make_collate")`, a collate_fn of the user's own that does the same.
"""

import torch
from numbered import Numbered


class DictSamples(Numbered):
    def __getitem__(self, index):
        image, label = super().__getitem__(index)
        return {"image": image, "label": label}


def make_dataset(size):
    return DictSamples(size, divide_by=255)


def collate(samples):
    return {
        "image": torch.stack([sample["image"] for sample in samples]),
        "label": torch.tensor([sample["label"] for sample in samples]),
    }


def make_collate():
    return collate
