"""A user's own PyTorch Dataset, as loaderbench's tests and benchmarks load it with
`dataset: (kind: python, path: ".../mnist_user.py", factory: "make_dataset",
args: {"root": DIR}, collate: Some("make_collate"))`.

A map-style Dataset over MNIST-format IDX files (`train-images-idx3-ubyte` and
`train-labels-idx1-ubyte` in `root`), each sample a PIL image through torchvision
transforms, as a training script would write it. `fail_at` ("factory", "len" or
"getitem"), `fail_index` and `only_in_workers` make it raise where the tests need an
error in user code, and `fail_at="len_type"` gives `__len__` a length that is no integer; `delay_s` makes every `__getitem__` that slow, for the tests of a
loader that delivers nothing in time.
"""

import os
import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset, get_worker_info
from torchvision import transforms as T


def read_idx(path):
    with open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class MnistUser(Dataset):
    def __init__(self, root, transform, fail_at, fail_index, only_in_workers, delay_s):
        self.images = read_idx(os.path.join(root, "train-images-idx3-ubyte"))
        self.labels = read_idx(os.path.join(root, "train-labels-idx1-ubyte"))
        self.transform = transform
        self.fail_at = fail_at
        self.fail_index = fail_index
        self.only_in_workers = only_in_workers
        self.delay_s = delay_s

    def __len__(self):
        if self.fail_at == "len":
            raise RuntimeError("cannot count the samples")
        if self.fail_at == "len_type":
            return str(len(self.images))
        return len(self.images)

    def __getitem__(self, index):
        failing = self.fail_at == "getitem" and index == self.fail_index
        if failing and (get_worker_info() is not None or not self.only_in_workers):
            raise ValueError(f"sample {index} is broken")
        time.sleep(self.delay_s)
        image = Image.fromarray(self.images[index])
        return self.transform(image), int(self.labels[index])


def make_dataset(
    root, augment=False, fail_at=None, fail_index=0, only_in_workers=False, delay_s=0.0
):
    if fail_at == "factory":
        raise ValueError(f"cannot read {root}")
    steps = [T.RandomRotation(15)] if augment else []
    steps += [T.ToTensor(), T.Normalize((0.2860,), (0.3530,))]
    return MnistUser(root, T.Compose(steps), fail_at, fail_index, only_in_workers, float(delay_s))


def collate(samples):
    images = torch.stack([image for image, _ in samples])
    labels = torch.tensor([label for _, label in samples])
    return images, labels


def make_collate():
    return collate
