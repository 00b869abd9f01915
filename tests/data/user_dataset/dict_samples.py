"""A user's map-style Dataset whose samples are dicts ({"image": tensor, "label": int}),
as loaderbench's tests load it with `factory: "make_dataset", args: {"size": N}`:
measured with PyTorch's default collate, which batches dicts key by key, and with
`collate: Some("make_collate")`, a collate_fn of the user's own that does the same.
"""

import torch
from torch.utils.data import Dataset


class DictSamples(Dataset):
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        image = torch.full((1, 28, 28), index % 256, dtype=torch.float32) / 255
        return {"image": image, "label": index % 10}


def make_dataset(size):
    return DictSamples(size)


def collate(samples):
    return {
        "image": torch.stack([sample["image"] for sample in samples]),
        "label": torch.tensor([sample["label"] for sample in samples]),
    }


def make_collate():
    return collate
