"""A training step that talks to the other ranks on every batch, as DDP's gradient
all-reduce does: `make_step(ms)` returns a step that all-reduces a one-element tensor
over the job's process group, then keeps the core busy for `ms` milliseconds. A rank
that stopped its epoch earlier than the others would leave them waiting here."""

import time

import torch
import torch.distributed as dist


def make_step(ms="5"):
    busy_s = float(ms) / 1000

    def step(batch):
        dist.all_reduce(torch.ones(1))
        until = time.perf_counter() + busy_s
        while time.perf_counter() < until:
            pass

    return step
