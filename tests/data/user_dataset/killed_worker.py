"""A user's Dataset whose DataLoader worker dies from SIGKILL mid-epoch (as the kernel's
out-of-memory killer would end it): `__getitem__` kills its own process at `kill_index`,
only in a worker (`get_worker_info()` is not None), so that num_workers 0 runs through.
loaderbench's tests load it with `factory: "make_dataset", args: {"size": N, "kill_index": I}`.

The factory also keeps DataLoader from installing its SIGCHLD handler, as DataLoader does
itself when iterated outside the main thread, and as it amounts to when the kernel
delivers the signal to a thread other than the main one while that waits for a batch: only
DataLoader's checks of its workers' state see the death, on every run. Those wait the whole
`timeout` at once, and their error, "DataLoader worker (pid(s) …) exited unexpectedly",
does not say how the worker ended.
"""

import os
import signal

import torch
from torch.utils.data import Dataset, get_worker_info
from torch.utils.data._utils import signal_handling


class KilledWorker(Dataset):
    def __init__(self, size, kill_index):
        self.size = size
        self.kill_index = kill_index

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index == self.kill_index and get_worker_info() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.full((1, 28, 28), index % 256, dtype=torch.float32), index % 10


def make_dataset(size, kill_index):
    signal_handling._SIGCHLD_handler_set = True
    return KilledWorker(size, kill_index)
