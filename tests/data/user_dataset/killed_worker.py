"""A user's Dataset whose DataLoader worker dies from SIGKILL mid-epoch (as the kernel's
out-of-memory killer would end it): `__getitem__` kills its own process at `kill_index`,
only in a worker (`get_worker_info()` is not None), so that num_workers 0 runs through.
loaderbench's tests load it with `factory: "make_dataset", args: {"size": N, "kill_index": I}`.

The factory, run in the script's main thread, also leaves SIGCHLD to another thread (a
thread of the user's takes it; the main thread blocks it), as the kernel may deliver it
anyway: DataLoader's SIGCHLD handler then never interrupts the main thread's wait for a
batch, and only its checks of the workers' state see the death.
"""

import os
import signal
import threading

import torch
from torch.utils.data import Dataset, get_worker_info


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
    threading.Thread(target=threading.Event().wait, daemon=True).start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    return KilledWorker(size, kill_index)
