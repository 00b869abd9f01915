"""kornia's batched augmentation, timed for benches/kornia.rs.

The heavy pipeline as a kornia user writes it: uint8 batches to float in [0, 1],
AugmentationSequential(RandomRotation(30), RandomElasticTransform(41x41, sigma 5,
alpha 50/28), RandomGaussianBlur(5x5, sigma in [0.1, 2.0])), then normalize. Every op
runs on every sample (p=1), rotation samples with nearest neighbour and
align_corners=False, as torchvision's rotate (and our unfused pipeline) does.

Usage: kornia_peer.py BATCHES_FILE BATCHES BATCH_SIZE HEIGHT WIDTH MEAN STD
BATCHES_FILE holds BATCHES uint8 batches of [BATCH_SIZE, 1, HEIGHT, WIDTH], one after
another. Then, for each line `heavy THREADS` on stdin, it runs every batch once at
THREADS intra-op threads (after one untimed batch) and answers one JSON line:
{"ms_per_batch": ...}. It ends at the end of stdin.
"""

import json
import sys
import time

import numpy as np
import torch
from kornia.augmentation import (
    AugmentationSequential,
    RandomElasticTransform,
    RandomGaussianBlur,
    RandomRotation,
)


def heavy_pipeline(mean, std):
    augment = AugmentationSequential(
        RandomRotation(30.0, resample="nearest", align_corners=False, p=1.0),
        RandomElasticTransform(
            kernel_size=(41, 41), sigma=(5.0, 5.0), alpha=(50 / 28, 50 / 28), p=1.0
        ),
        RandomGaussianBlur((5, 5), (0.1, 2.0), p=1.0),
    )

    def run(batch):
        x = batch.float().div_(255.0)
        x = augment(x)
        return (x - mean) / std

    return run


def main():
    path, batches, batch_size, height, width = sys.argv[1], *map(int, sys.argv[2:6])
    mean, std = float(sys.argv[6]), float(sys.argv[7])
    raw = np.fromfile(path, dtype=np.uint8).reshape(batches, batch_size, 1, height, width)
    data = [torch.from_numpy(raw[i].copy()) for i in range(batches)]
    run = heavy_pipeline(mean, std)
    torch.manual_seed(0)
    for line in sys.stdin:
        command, threads = line.split()
        assert command == "heavy", command
        torch.set_num_threads(int(threads))
        with torch.inference_mode():
            run(data[0])
            started = time.perf_counter()
            for batch in data:
                run(batch)
            seconds = time.perf_counter() - started
        print(json.dumps({"ms_per_batch": seconds * 1e3 / len(data)}), flush=True)


if __name__ == "__main__":
    main()
