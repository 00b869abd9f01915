"""loaderbench's SPDL runtime (`runtime: spdl`): a map-style dataset loaded through an SPDL
pipeline (`spdl.pipeline`, PyPI `spdl-core`), measured by pytorch_loader.py's epoch loop
exactly as it measures a DataLoader.

Each epoch builds one pipeline, which maps DataLoader's knobs to SPDL's:

  source          the indices of the sampler DataLoader would use (the same seed gives
                  the same order; with ranks, the rank's DistributedSampler)
  pipe            dataset.__getitem__ at concurrency num_workers, in the order the indices
                  came when in_order is true (output_order "input"), else as they finish
  aggregate       batch_size samples a batch, the last one short unless drop_last
  pipe            the collate: the user's collate_fn or PyTorch's default_collate
  pipe            pin_memory, one batch at a time, when pinning applies (as DataLoader's
                  pin thread does: with CUDA only)
  sink            prefetch_factor x num_workers finished batches
  build           num_workers threads run every stage (DataLoader's workers collate
                  their own batches too)

An epoch cut short (a measured window) closes the epoch's iterator, which stops its
pipeline and joins its threads. Without workers loaderbench measures DataLoader's own
main-process loop on this runtime too (pytorch_loader.py builds it): SPDL's stages
always run off the training loop, so nothing of it is the serial baseline.

An exception in the user's code fails the pipeline at once (max_failures 0; SPDL would
otherwise skip the sample) and is raised as it was raised, its traceback through the
user's code kept, so the script names their file and line; the short batch SPDL flushes
as the failure ends its source is not delivered.
"""

import threading
import time

import torch
from spdl.pipeline import PipelineBuilder
from torch.utils.data import RandomSampler, SequentialSampler, default_collate
from torch.utils.data._utils.pin_memory import pin_memory


class SpdlLoader:
    """An epoch's batches from a fresh SPDL pipeline, with what pytorch_loader.py's epoch
    loop and error handlers read of a DataLoader: iter, len, dataset, sampler and
    collate_fn."""

    def __init__(self, dataset, knobs, request, sampler, collate_fn, generator, emit):
        self.dataset = dataset
        self.sampler = sampler or default_sampler(dataset, request["shuffle"], generator)
        self.collate_fn = collate_fn or default_collate
        self.batch_size = knobs["batch_size"]
        self.drop_last = request["drop_last"]
        self.workers = knobs["num_workers"]
        self.output_order = "input" if knobs["in_order"] else "completion"
        self.prefetch_batches = knobs["prefetch_factor"] * self.workers
        self.pin = knobs["pin_memory"] and torch.cuda.is_available()
        self.timeout_s = request["worker_timeout_s"]
        self.generator = generator
        self.emit = emit

    def __len__(self):
        samples = len(self.sampler)
        if self.drop_last:
            return samples // self.batch_size
        return -(-samples // self.batch_size)

    def __iter__(self):
        epoch = EpochThreads(self.emit)
        failures = []
        pipeline = self.build(epoch, failures)
        try:
            with pipeline.auto_stop():
                for batch in pipeline.get_iterator(timeout=self.timeout_s):
                    # A failure ends the source, and aggregate hands on the samples it
                    # held as a short batch before the pipeline raises: no batch of the
                    # epoch, and one delivered would make the error look mid-run.
                    if failures:
                        break
                    yield batch
        except Exception:
            if not failures:
                raise
        if failures:
            err, frames = failures[0]
            raise err.with_traceback(frames) from None

    def build(self, epoch, failures):
        builder = (
            PipelineBuilder()
            .add_source(self.indices())
            .pipe(
                recording(failures, epoch.loading(self.dataset.__getitem__)),
                concurrency=self.workers,
                output_order=self.output_order,
                name="getitem",
            )
            .aggregate(self.batch_size, drop_last=self.drop_last)
            .pipe(recording(failures, self.collate_fn), name="collate")
        )
        if self.pin:
            builder = builder.pipe(pin_memory, name="pin_memory")
        return builder.add_sink(self.prefetch_batches).build(
            num_threads=self.workers, max_failures=0
        )

    def indices(self):
        """The epoch's indices, drawn as DataLoader draws them: its iterator takes its
        workers' base seed from the generator before the sampler takes the epoch's
        order, so the source does too."""
        torch.empty((), dtype=torch.int64).random_(generator=self.generator)
        yield from self.sampler


def default_sampler(dataset, shuffle, generator):
    """The sampler DataLoader makes from `shuffle` and `generator`."""
    if shuffle:
        return RandomSampler(dataset, generator=generator)
    return SequentialSampler(dataset)


def recording(failures, function):
    """`function`, with each exception it raises kept in `failures` with its traceback
    as raised: SPDL raises the exception again with its own frames in place of the
    user's."""

    def call(item):
        try:
            return function(item)
        except Exception as err:
            failures.append((err, err.__traceback__))
            raise

    call.__name__ = getattr(function, "__name__", "call")
    return call


class EpochThreads:
    """The pipeline threads of one epoch: each reports `worker_ready` when it loads its
    first sample, as a DataLoader worker does when it is ready to load."""

    def __init__(self, emit):
        self.emit = emit
        self.local = threading.local()
        self.lock = threading.Lock()
        self.started = 0

    def loading(self, getitem):
        def load(index):
            if not getattr(self.local, "ready", False):
                self.local.ready = True
                with self.lock:
                    worker = self.started
                    self.started += 1
                self.emit(kind="worker_ready", worker=worker, at=time.perf_counter())
            return getitem(index)

        load.__name__ = "__getitem__"
        return load
