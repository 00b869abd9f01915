"""torchdata.nodes thread workers for loaderbench's PyTorch runtime: `worker_kind: thread`
with workers builds this loader where pytorch_loader.py would give DataLoader process
workers, from the very DataLoader those workers would use (never iterated: its sampler,
generator, batch size, drop_last and collate_fn).

Each epoch is a graph of its own, as DataLoader's non-persistent workers are:

  SamplerWrapper(the DataLoader's sampler)
    -> ParallelMapper(the dataset's __getitem__, num_workers threads, in_order)
    -> Batcher(batch_size, drop_last) -> Mapper(collate_fn)
    -> PinMemory (with pin_memory, where CUDA is there to pin for)
    -> Prefetcher(prefetch_factor * num_workers) -> Loader

A shuffling sampler is wrapped in DataLoaderOrder: before it runs, the DataLoader's
generator gives one number, as DataLoader's iterator takes its workers' base seed from
it, so that the same seed gives the same sample order as its process workers, epoch
after epoch (the snippet a recommendation hands over builds it the same way). Each
thread reports worker_ready when it starts on its first sample (DataLoader's workers
report it from worker_init_fn, which threads have none of). When the epoch ends, whole
or cut after its window (its iterator closed), its threads are stopped and joined before
the next one starts; one still in `__getitem__` after the worker timeout is an error, as
is a wait for a batch longer than it (DataLoader's `timeout`).
"""

import threading
import time

import torch
from torch.utils.data import RandomSampler, Sampler

# What torchdata.nodes needs and scripts/setup installs; named in the error when missing.
TORCHDATA = "torchdata==0.11.0"


class MissingTorchdata(Exception):
    """The Python running the script lacks torchdata."""


class ThreadTimeout(Exception):
    """A thread outlived its epoch by more than the worker timeout."""


def nodes():
    try:
        import torchdata.nodes
    except ImportError as err:
        import sys

        raise MissingTorchdata(
            f"worker_kind: thread on the pytorch runtime runs torchdata.nodes, which {sys.executable} "
            f"cannot import ({err}); scripts/setup installs it, or: {sys.executable} -m pip "
            f"install --no-deps {TORCHDATA}"
        ) from err
    return torchdata.nodes


class ThreadLoader:
    """An iterable of epochs of batches, as measure_epoch takes a DataLoader: iter() is
    one epoch, len() its batches, `sampler` the sampler (before_epoch sets its epoch
    with ranks), `dataset` the dataset."""

    def __init__(self, dataloader, knobs, timeout_s, announce, on_hung):
        self.nodes = nodes()
        self.timeout_s = timeout_s
        self.watchdog = Watchdog(timeout_s, on_hung)
        self.dataset = dataloader.dataset
        self.sampler = dataloader.sampler
        self.generator = dataloader.generator
        self.collate_fn = dataloader.collate_fn
        self.batch_size = dataloader.batch_size
        self.drop_last = dataloader.drop_last
        self.batches = len(dataloader)
        self.workers = knobs["num_workers"]
        self.in_order = knobs["in_order"]
        self.prefetch = knobs["prefetch_factor"] * self.workers
        self.pin_memory = knobs["pin_memory"] and torch.cuda.is_available()
        self.announce = announce

    def __len__(self):
        return self.batches

    def __iter__(self):
        fetch = Fetch(self.dataset, self.announce)
        mapper, root = self.graph(fetch)
        batches = iter(self.nodes.Loader(root))
        try:
            while True:
                with self.watchdog:
                    batch = next(batches, END)
                if batch is END:
                    return
                yield batch
        finally:
            stop(root, mapper)
            fetch.join(self.timeout_s)

    def graph(self, fetch):
        """This epoch's graph: its ParallelMapper (whose threads run the user's code)
        and its root."""
        n = self.nodes
        # SamplerWrapper sets the epoch it is given on a sampler that has one.
        epoch = getattr(self.sampler, "epoch", 0)
        sampler = self.sampler
        if isinstance(sampler, RandomSampler):
            sampler = DataLoaderOrder(sampler, self.generator)
        indices = n.SamplerWrapper(sampler, initial_epoch=epoch)
        mapper = n.ParallelMapper(
            indices, map_fn=fetch, num_workers=self.workers, method="thread", in_order=self.in_order
        )
        node = n.Batcher(mapper, batch_size=self.batch_size, drop_last=self.drop_last)
        node = n.Mapper(node, self.collate_fn)
        if self.pin_memory:
            node = n.PinMemory(node)
        return mapper, n.Prefetcher(node, prefetch_factor=self.prefetch)


# What `next` gives at the end of an epoch: no batch a collate_fn could return.
END = object()


class Watchdog:
    """Ends the run through `on_hung(message)` when one wait for a batch lasts longer
    than the worker timeout, as DataLoader's `timeout` does for its process workers: a
    thread hung in the dataset's __getitem__ would otherwise hold the epoch until
    loaderbench's own silence limit, which names neither the threads nor the knob. Used
    as `with watchdog:` around each wait; one watching thread for the loader's life."""

    def __init__(self, timeout_s, on_hung):
        self.timeout_s = timeout_s
        self.on_hung = on_hung
        self.changed = threading.Condition()
        self.deadline = None
        threading.Thread(target=self.watch, name="loaderbench-batch-watchdog", daemon=True).start()

    def __enter__(self):
        with self.changed:
            self.deadline = time.monotonic() + self.timeout_s
            self.changed.notify()

    def __exit__(self, *raised):
        with self.changed:
            self.deadline = None
        return False

    def watch(self):
        with self.changed:
            while self.deadline is None or time.monotonic() < self.deadline:
                left = None if self.deadline is None else self.deadline - time.monotonic()
                self.changed.wait(left)
        self.on_hung(
            f"TimeoutError: the torchdata.nodes threads delivered no batch for {self.timeout_s:g} s "
            "(worker_timeout_s); the dataset's __getitem__ looks hung"
        )


class DataLoaderOrder(Sampler):
    """A RandomSampler in the order DataLoader gives it: DataLoader's iterator takes a
    number from the generator (its workers' base seed) before the sampler shuffles,
    every epoch."""

    def __init__(self, sampler, generator):
        self.sampler = sampler
        self.generator = generator

    def __len__(self):
        return len(self.sampler)

    def __iter__(self):
        torch.empty((), dtype=torch.int64).random_(generator=self.generator)
        return iter(self.sampler)


class Fetch:
    """The map function: the dataset's sample at an index. Each thread reports
    worker_ready (through `announce`, with its number in the order they started) before
    its first sample, and is remembered so that the epoch's end can join it."""

    def __init__(self, dataset, announce):
        self.dataset = dataset
        self.announce = announce
        self.lock = threading.Lock()
        self.threads = []
        self.local = threading.local()

    def __call__(self, index):
        if not hasattr(self.local, "worker"):
            with self.lock:
                self.local.worker = len(self.threads)
                self.threads.append(threading.current_thread())
            self.announce(self.local.worker, time.perf_counter())
        return self.dataset[index]

    def join(self, timeout_s):
        """Waits for every thread that ran the user's code (one in the middle of a
        sample finishes it first), `timeout_s` in all."""
        deadline = time.monotonic() + timeout_s
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in self.threads):
            raise ThreadTimeout(
                f"a torchdata.nodes thread was still in the dataset's __getitem__ {timeout_s:g} s "
                "after its epoch ended (worker_timeout_s)"
            )


def stop(root, mapper):
    """Stops the threads of an epoch's graph, the mapper's first (the Prefetcher's and
    PinMemory's threads wait on it), then those downstream of it: torchdata 0.11 stops a
    node's threads only when it is reset or collected, and a cut epoch's graph must not
    go on loading beside the next."""
    chain = []
    node = root
    while node is not None and node is not mapper:
        chain.append(node)
        node = getattr(node, "source", None)
    for node in [mapper] + chain[::-1]:
        running = getattr(node, "_it", None)
        # ParallelMapper keeps its threads one level further in.
        while running is not None and not hasattr(running, "_shutdown"):
            running = getattr(running, "_it", None)
        if running is not None:
            running._shutdown()
