"""A small CNN, as loaderbench's step tests and benchmarks train it on every batch.

Its TorchScript export is the `model` step (`step: model(path: "small_cnn.pt")`):
`python small_cnn.py DIR` writes it there with torch.jit.script, as small_cnn.pt (one
channel) and small_cnn_rgb.pt (three). `make_step` is the same
model as a `python` step (`step: python(path: ".../small_cnn.py", factory: "make_step",
args: {"lr": "0.01"})`), trained the way a plain PyTorch loop trains it. `fail_at`
("factory" or "step"), `fail_batch` and `fail_batch_size` (only batches of that size)
make it raise where the tests need an error in the user's step.
"""

import os
import sys

import torch
import torch.nn.functional as F
from torch import nn


class SmallCnn(nn.Module):
    """Two 3x3 convolutions and a linear layer; any image size (pooled to 4x4)."""

    def __init__(self, channels: int = 1, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.adaptive_avg_pool2d(F.relu(self.conv2(x)), 4)
        return self.fc(torch.flatten(x, 1))


def make_step(lr="0.01", channels="1", fail_at=None, fail_batch="0", fail_batch_size=None):
    """The training step: forward, cross-entropy, backward, SGD, on every batch."""
    if fail_at == "factory":
        raise ValueError(f"cannot build the step with lr {lr}")
    model = SmallCnn(int(channels))
    optimizer = torch.optim.SGD(model.parameters(), lr=float(lr))
    seen = [0]

    def step(batch):
        images, labels = batch[0], batch[1]
        size_fails = fail_batch_size is None or len(labels) == int(fail_batch_size)
        if fail_at == "step" and seen[0] == int(fail_batch) and size_fails:
            raise RuntimeError(f"the step failed at batch {seen[0]}")
        seen[0] += 1
        loss = F.cross_entropy(model(images), labels % 10)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss.item()

    return step


def export(folder):
    torch.manual_seed(0)
    for name, channels in [("small_cnn.pt", 1), ("small_cnn_rgb.pt", 3)]:
        torch.jit.script(SmallCnn(channels)).save(os.path.join(folder, name))


if __name__ == "__main__":
    export(sys.argv[1])
