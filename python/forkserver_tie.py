"""Imported by multiprocessing's fork server as it starts (the PyTorch runtime's script
preloads it where DataLoader's workers start through a fork server): the server dies the
moment the script that started it ends, and each worker it forks dies the moment the
server ends, from its first instant (Linux's parent-death signal). Workers hold the
server's alive pipe, so without this a killed loaderbench left the server, its workers
and the resource tracker running, holding their shared memory; and a worker still
importing torch had not yet reached DataLoader's worker_init_fn, where
pytorch_loader.die_with_parent_process ties it.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent():
    """This process gets SIGKILL when its parent ends."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def die_with_server(server):
    """A worker just forked: it dies with the server, and at once if the server has
    already gone."""
    die_with_parent()
    if os.getppid() != server:
        os._exit(1)


if sys.platform == "linux":
    die_with_parent()
    SERVER = os.getpid()
    os.register_at_fork(after_in_child=lambda: die_with_server(SERVER))
