"""loaderbench's PyTorch runtime: one config measured with the real PyTorch DataLoader
(or, for `worker_kind: thread` with workers, torchdata.nodes threads over what that
DataLoader would load: pytorch_nodes.py; or, when the request's runtime is spdl, an SPDL
pipeline: spdl_pipeline.py; both beside this script).

loaderbench runs this script as a child process through the Python that scripts/setup
installs. The request (one JSON object: dataset, epochs, and under "knobs" the DataLoader
arguments and the transform ops, see KNOBS) comes as the first line of stdin; stdin then stays open, and its end means
loaderbench is gone, so the script kills its own process group (itself and its
workers). Before each epoch the script says epoch_ready, then waits for a `go` line on
stdin: loaderbench evicts the dataset's files from the page cache in between (`cache:
cold`, after the script released its own memory-mapped pages of the dataset) or loads
them into it (`cache: warm`). Everything it reports is one JSON object per line on stdout, written with a
single os.write so that lines from worker processes never interleave:

  ready         imports done and dataset built (not timed)
  epoch_ready   waiting for `go` before this epoch (the page cache made cold or warm)
  epoch_start   an epoch's t0 (perf_counter, a system-wide clock on Linux and macOS)
  worker_ready  a worker ran worker_init_fn (a torchdata.nodes thread, see
                pytorch_nodes.py: started on its first sample), at this perf_counter time
  batch         a batch is on the device and its step done: its time since t0 (on the
                device), its wait, its copy and its step
  sweep         waiting for `go` after the epoch's last batch, while its worker
                processes (which end with its iterator, or with the loader after the
                last epoch) are still there, so that loaderbench sweeps their memory
                once more (the wait is left out of the epoch's seconds); and, for an
                IterableDataset, before DataLoader ends each worker whose iterator ran
                out mid-epoch
  epoch         an epoch ended, its seconds
  rank_epoch    with ranks: when this rank left the barrier and ended the epoch (time.time)
  done          every epoch measured
  error         what went wrong, in one line

Timing is loaderbench's (ARCHITECTURE.md, the measurement rules): an epoch runs from iter(loader) until the loop has
taken the last batch, put it on the device (synchronized on CUDA) and run the training
step on it (pytorch_steps.py, beside this script); the first batch is the first of
those; a batch's wait is the time spent in next(), its step the time after it reached
the device.

With several ranks, loaderbench starts the script once per rank; each joins a
torch.distributed process group (gloo, rendezvous through a file store), loads its
DistributedSampler shard, and passes dist.barrier() before every epoch (see
join_process_group and the functions after it).
"""

import bisect
import functools
import gzip
import json
import mmap
import multiprocessing
import os
import signal
import struct
import sys
import threading
import time

try:
    import resource  # POSIX only
except ImportError:
    resource = None


# The knobs loaderbench sends under "knobs" in the request, by their names in its knob
# table (crates/engine/src/plan/knob_table/); a test there checks that this list names exactly the knobs the
# table sends, and the script refuses a request that sends others.
KNOBS = (
    "pipeline",
    "batch_size",
    "num_workers",
    "worker_kind",
    "persistent_workers",
    "prefetch_factor",
    "pin_memory",
    "in_order",
    "device",
    "start_method",
    "intra_op_threads",
    "cache",
    "runtime",
)

# One release per `go` line loaderbench sends on stdin (see die_with_parent): before each
# epoch, and after each sweep the script asks for.
GO = threading.Semaphore(0)


def emit(**fields):
    os.write(1, (json.dumps(fields) + "\n").encode())


# The reports own stdout: the user's code prints to stderr (a Dataset's `print` in
# `__getitem__`, debugging it), which loaderbench keeps for its error messages. A print
# on stdout broke the run where it looked like a report, or glued to one and lost it. In
# DataLoader's spawned workers and forkserver this script runs again as __mp_main__.
if __name__ in ("__main__", "__mp_main__"):
    sys.stdout = sys.stderr


def fail(message, bad_input=False, environment=False, user=None, shard=None):
    """Reports the error and exits at once: waiting for worker processes could hang on
    a crashed one, and loaderbench kills the process group anyway. `user` is the
    place in the user's own dataset code ({"file", "line"}) the error comes from;
    `shard` the tar shard (path or URL) at fault."""
    emit(kind="error", message=message, bad_input=bad_input, environment=environment, user=user, shard=shard)
    os._exit(1)


try:
    import numpy as np
    import torch
    import torchvision
    from PIL import Image
    from torch.utils.data import DataLoader, Dataset, Subset
    from torchvision import transforms as T

    import pytorch_nodes
    import pytorch_objects
    import pytorch_shards
    import pytorch_steps
except ImportError as err:
    if __name__ == "__main__":
        fail(f"cannot import torch and torchvision ({err}) in {sys.executable}", environment=True)
    raise


class UnsupportedOp(Exception):
    """An op of loaderbench's pipeline that torchvision has no transform for."""


def read_idx(path):
    """An IDX file as a tensor, as torchvision's MNIST reads it (gzipped or not)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4 : 4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim :]), dtype=torch.uint8).view(*dims)


class IdxDataset(Dataset):
    """torchvision's MNIST over named IDX files: uint8 tensors in memory, PIL images out."""

    def __init__(self, images, labels, transform):
        self.data = read_idx(images)
        self.targets = read_idx(labels).long()
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image = Image.fromarray(self.data[index].numpy())
        return self.transform(image), int(self.targets[index])


class NpyDataset(Dataset):
    """A memory-mapped .npy array: uint8 grey or RGB samples as PIL images, anything else
    as float tensors (taken as already in [0, 1], as loaderbench does)."""

    def __init__(self, path, labels, transform):
        self.array = np.load(path, mmap_mode="r")
        self.labels = np.load(labels, mmap_mode="r") if labels else None
        self.transform = transform

    def release_mapped_pages(self):
        """Unmaps the pages this process touched (they fault back in when read): the
        kernel never evicts a mapped page."""
        for array in (self.array, self.labels):
            if array is not None and hasattr(array._mmap, "madvise"):
                array._mmap.madvise(mmap.MADV_DONTNEED)

    def yields_pil(self):
        channels = 1 if self.array.ndim == 3 else self.array.shape[1]
        return self.array.dtype == np.uint8 and channels in (1, 3)

    def __len__(self):
        return len(self.array)

    def __getitem__(self, index):
        sample = np.asarray(self.array[index])
        if self.yields_pil():
            if sample.ndim == 3:
                sample = sample[0] if sample.shape[0] == 1 else sample.transpose(1, 2, 0)
            item = Image.fromarray(np.ascontiguousarray(sample))
        else:
            item = torch.from_numpy(sample.astype(np.float32, copy=True))
            if item.ndim == 2:
                item = item.unsqueeze(0)
        label = 0 if self.labels is None else int(self.labels[index])
        return self.transform(item), label


def load_image(path, mode):
    with open(path, "rb") as f:
        return Image.open(f).convert(mode)


def torchvision_op(name, params, normalize):
    if name == "rotate":
        return T.RandomRotation(params["degrees"])
    if name == "elastic":
        return T.ElasticTransform(alpha=params["alpha"], sigma=params["sigma"])
    if name == "gaussian_blur":
        return T.GaussianBlur(params["kernel"], sigma=tuple(params["sigma"]))
    if name == "flip":
        return T.RandomHorizontalFlip(params["p"])
    if name == "crop":
        return T.RandomCrop(params["size"], padding=params["padding"])
    if name == "resize":
        return T.Resize(params["size"])
    if name == "normalize":
        return T.Normalize(normalize["mean"], normalize["std"])
    raise UnsupportedOp(f"the `{name}` op has no torchvision equivalent")


def build_transform(ops, normalize, pil_input, first=()):
    """loaderbench's ops as torchvision transforms: those before the first normalize run
    on PIL images, then ToTensor (light = ToTensor + Normalize, heavy = rotation, elastic,
    blur, ToTensor + Normalize)."""
    steps = list(first)
    needs_to_tensor = pil_input
    for op in ops:
        name, params = (op, {}) if isinstance(op, str) else next(iter(op.items()))
        if name == "normalize" and needs_to_tensor:
            steps.append(T.ToTensor())
            needs_to_tensor = False
        steps.append(torchvision_op(name, params, normalize))
    if needs_to_tensor:
        steps.append(T.ToTensor())
    return T.Compose(steps)


def image_mode(spec):
    return "L" if spec["channels"] == 1 else "RGB"


def image_transform(spec, ops, normalize):
    """What image folders and shards do to each decoded image: resize, then the ops."""
    return build_transform(ops, normalize, True, first=[T.Resize(spec["image_size"])])


def read_image_list(path):
    """The (path, label) pairs loaderbench listed, as its image_list module writes them:
    a label and a path, each ended by a NUL byte; paths decoded as Python decodes file
    names (`os.fsdecode`), so that any name opens."""
    with open(path, "rb") as f:
        fields = f.read().split(b"\0")[:-1]
    return [(os.fsdecode(name), int(label)) for label, name in zip(fields[::2], fields[1::2])]


class ListedImageFolder(torchvision.datasets.ImageFolder):
    """torchvision's ImageFolder over the files loaderbench's engine listed, not its own
    walk, which takes hidden folders as classes and orders nested folders otherwise: both
    runtimes read the same files, in the same order, with the same labels. Every class
    holds a file (the engine refuses an empty class folder); a class is named by the
    first folder of its files' paths under the root."""

    def __init__(self, root, samples, **kwargs):
        self.listed = samples
        super().__init__(root, **kwargs)

    def find_classes(self, directory):
        names = {}
        for path, label in self.listed:
            names.setdefault(label, os.path.relpath(path, directory).split(os.sep)[0])
        classes = [names[label] for label in sorted(names)]
        return classes, {name: label for label, name in enumerate(classes)}

    def make_dataset(self, directory, class_to_idx, extensions=None, is_valid_file=None, allow_empty=False):
        return self.listed


def build_dataset(request):
    spec = request["dataset"]
    if spec["kind"] == "python":
        return user_dataset(request)
    ops, normalize = request["knobs"]["pipeline"], request["normalize"]
    if spec["kind"] == "idx":
        dataset = IdxDataset(spec["images"], spec["labels"], build_transform(ops, normalize, True))
    elif spec["kind"] == "npy":
        dataset = NpyDataset(spec["path"], spec.get("labels"), None)
        dataset.transform = build_transform(ops, normalize, dataset.yields_pil())
    elif spec["kind"] == "image_folder":
        dataset = ListedImageFolder(
            spec["root"],
            read_image_list(spec["list"]),
            transform=image_transform(spec, ops, normalize),
            loader=functools.partial(load_image, mode=image_mode(spec)),
        )
    elif spec["kind"] == "shards":
        transform = image_transform(spec, ops, normalize)
        return pytorch_shards.shard_dataset(request, transform, image_mode(spec))
    else:
        raise UnsupportedOp(f"unknown dataset kind {spec['kind']}")
    length = checked_len(dataset, spec)
    samples = request.get("samples")
    if samples is not None and samples < length:
        dataset = Subset(dataset, range(samples))
    return dataset


def whole_len(dataset):
    """Samples in the whole dataset (before `samples` cut it); None without a length."""
    whole = dataset.dataset if isinstance(dataset, Subset) else dataset
    try:
        return len(whole)
    except TypeError:
        return None


def announce_ready(parent, worker_id):
    die_with_parent_process(parent)
    emit(kind="worker_ready", worker=worker_id, at=time.perf_counter())


def die_with_parent_process(parent):
    """Ends this DataLoader worker the moment the process that started it ends (Linux's
    parent-death signal), not at DataLoader's next status check, seconds later: when
    loaderbench is killed, its own parent-death signal can end the script before the
    script ends its process group, and the workers would outlive both. `parent` is the
    script's pid where the script starts its workers itself (fork, spawn), so that one
    whose script ended before the signal was asked for ends too; `None` under a fork
    server, which starts them, and dies with the script (forkserver_tie.py)."""
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def tie_fork_server():
    """Has the fork server, once it starts, die with this script (forkserver_tie.py,
    which it preloads; '__main__' is multiprocessing's own default). The server takes
    its sys.path from its environment, so this script's folder goes first on PYTHONPATH
    for it to find the module."""
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    multiprocessing.get_context("forkserver").set_forkserver_preload(["__main__", "forkserver_tie"])


# How often DataLoader checks its workers while it waits for a batch (its own interval
# is MP_STATUS_CHECK_INTERVAL, 5 s): a check is a non-blocking wait on each worker.
WORKER_CHECK_S = 1.0


def check_workers_while_waiting():
    """Has DataLoader, waiting for a batch, check its workers every WORKER_CHECK_S, with
    a `timeout` as without one. With a timeout it waits the whole of it at once and learns
    of a dead worker only from SIGCHLD, whose handler runs only when the signal
    interrupts the main thread's wait; delivered to another thread (the queues' feeder
    threads, a user's), a worker the out-of-memory killer ended read as "DataLoader timed
    out after 60 seconds", a minute later. Once per process."""
    iterator = torch.utils.data.dataloader._MultiProcessingDataLoaderIter
    original = iterator._try_get_data
    if getattr(original, "checks_workers", False):
        return

    def try_get_data(self, timeout=torch.utils.data._utils.MP_STATUS_CHECK_INTERVAL):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            # Raises where a worker has died, as each of DataLoader's own checks does.
            try:
                got = original(self, max(0.0, min(left, WORKER_CHECK_S)))
            except RuntimeError as err:
                raise with_how_workers_ended(self, err)
            if got[0] or left <= WORKER_CHECK_S:
                return got

    try_get_data.checks_workers = True
    iterator._try_get_data = try_get_data


def with_how_workers_ended(iterator, err):
    """`err` as it is, unless it is DataLoader's "worker (pid(s) …) exited unexpectedly"
    from its check of its workers' state, which does not say how they ended (only its
    SIGCHLD handler's error does, and which of the two sees a death first is a race): then
    the same error, raised from how each ended ("… is killed by signal: Killed." as the
    handler says it, or the exit code). SIGKILL is the out-of-memory killer, most often."""
    cause = err.__cause__
    if "exited unexpectedly" not in str(err) or str(cause).startswith("DataLoader worker"):
        return err
    ended = []
    for worker in iterator._workers:
        code = worker.exitcode
        if code is not None and code < 0:
            ended.append(
                f"DataLoader worker (pid {worker.pid}) is killed by signal: "
                f"{signal.strsignal(-code)}."
            )
        elif code:
            ended.append(f"DataLoader worker (pid {worker.pid}) exited with code {code}.")
    if not ended:
        return err
    described = RuntimeError(str(err))
    described.__cause__ = RuntimeError(" ".join(ended))
    return described


def build_loader(request, dataset):
    generator = torch.Generator()
    generator.manual_seed(request["seed"])
    knobs = request["knobs"]
    workers = knobs["num_workers"]
    if knobs["runtime"] == "spdl":
        spdl = spdl_pipeline(request, dataset)
        # Without workers, DataLoader's main-process loop (see spdl_pipeline.py).
        if workers > 0:
            return spdl.SpdlLoader(
                dataset,
                knobs,
                request,
                sampler_options(request, dataset).get("sampler"),
                user_loader_options(request, dataset).get("collate_fn"),
                generator,
                emit,
            )
    options = dict(
        batch_size=knobs["batch_size"],
        # An IterableDataset (shards) shuffles itself; the DataLoader refuses to.
        shuffle=request["shuffle"] and not isinstance(dataset, IterableDataset),
        generator=generator,
        drop_last=request["drop_last"],
        num_workers=workers,
        pin_memory=knobs["pin_memory"],
        in_order=knobs["in_order"],
    )
    options.update(sampler_options(request, dataset))
    if workers > 0:
        check_workers_while_waiting()
        if knobs["start_method"] == "forkserver":
            tie_fork_server()
        options.update(
            persistent_workers=knobs["persistent_workers"],
            prefetch_factor=knobs["prefetch_factor"],
            multiprocessing_context=knobs["start_method"],
            timeout=request["worker_timeout_s"],
            worker_init_fn=functools.partial(
                announce_ready,
                None if knobs["start_method"] == "forkserver" else os.getpid(),
            ),
        )
    options.update(user_loader_options(request, dataset))
    loader = DataLoader(dataset, **options)
    if knobs["worker_kind"] == "thread" and workers > 0:
        return thread_loader(request, loader)
    return loader


def thread_loader(request, loader):
    """torchdata.nodes threads over what DataLoader `loader` would load (pytorch_nodes.py)."""
    if isinstance(loader.dataset, IterableDataset):
        spec = request["dataset"]
        raise UserInputError(
            f"{spec['factory']}() gives an IterableDataset, and worker_kind: thread on the pytorch "
            "runtime maps a sampler's indices through a map-style Dataset (torchdata.nodes); "
            "use worker_kind: auto",
            spec["path"],
        )
    timeout_s = request["worker_timeout_s"]
    return pytorch_nodes.ThreadLoader(loader, request["knobs"], timeout_s, announce_thread, fail)


def announce_thread(worker_id, at):
    emit(kind="worker_ready", worker=worker_id, at=at)


def spdl_pipeline(request, dataset):
    """The SPDL runtime's module, for a map-style dataset (SPDL maps the sampler's
    indices through it)."""
    if isinstance(dataset, IterableDataset):
        spec = request["dataset"]
        raise UserInputError(
            f"{spec['factory']}() gives an IterableDataset, and the spdl runtime maps a "
            "sampler's indices through a map-style Dataset; use runtime: pytorch",
            spec["path"],
        )
    try:
        import spdl_pipeline
    except ImportError as err:
        fail(
            f"cannot import spdl.pipeline ({err}) in {sys.executable}: scripts/setup "
            "installs it (PyPI spdl-core)",
            environment=True,
        )
    return spdl_pipeline


def epoch_size(loader):
    """The batches and samples of a whole epoch ({"batches", "samples"}, as loaderbench's
    `EpochSize`), or None where the loader cannot say: then the epoch is measured whole.
    An IterableDataset's `__len__`, where it has one, says nothing of what each worker
    yields (one that does not split itself gives every worker all of it), so DataLoader's
    length over it is no count. Every loader here (DataLoader, the torchdata.nodes and
    SPDL ones) has a sampler, a batch size and drop_last."""
    if isinstance(getattr(loader, "dataset", None), IterableDataset):
        return None
    try:
        batches = len(loader)
        samples = len(loader.sampler)
    except (TypeError, AttributeError):
        return None
    if loader.drop_last:
        samples = batches * loader.batch_size
    return {"batches": batches, "samples": samples}


def window_first(rule, at_s):
    """`WindowRule::first` of loaderbench's `window` module: the index of the window's
    first batch once the warm-up is over (`warmup_batches` after the first batch, and
    `warmup_s` from the epoch's start), or None."""
    first = max(1 + rule["warmup_batches"], bisect.bisect_left(at_s, rule["warmup_s"]) + 1)
    return first if first <= len(at_s) else None


def window_slowing(start, at_s):
    """`slowing` of loaderbench's `window` module: whether the window from batch
    `start + 1` on ran more than 15% slower in its second half than in its first."""
    n = len(at_s) - (start + 1)
    if n < 4:
        return False
    middle = start + n // 2
    first_half = (at_s[middle] - at_s[start]) / (middle - start)
    second_half = (at_s[-1] - at_s[middle]) / (len(at_s) - 1 - middle)
    return first_half > 0 and second_half / first_half - 1.0 > 0.15


def window_done(rule, at_s):
    """`WindowRule::done` of loaderbench's `window` module: after the first batch and
    the warm-up, a window of `min_batches` or more lasting `window_s`, steady."""
    first = window_first(rule, at_s)
    if first is None or len(at_s) < first + rule["min_batches"]:
        return False
    if at_s[-1] - at_s[first - 1] < rule["window_s"]:
        return False
    return not window_slowing(first - 1, at_s)


def window_done_on_every_rank(rule, at_s, ranked):
    """`window_done`; with ranks, true on every rank at the same batch, once every rank's
    window is done (the flag all-reduced to its minimum), so that a step that talks to
    the other ranks never waits on one that stopped. Every rank asks from the same
    batch on (the first where a window can be done), since a DistributedSampler gives
    each rank as many batches."""
    if len(at_s) < 1 + rule["warmup_batches"] + rule["min_batches"]:
        return False
    done = window_done(rule, at_s)
    if not ranked:
        return done
    import torch.distributed as dist

    flag = torch.tensor([int(done)])
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def workers_end_with_epoch(loader):
    """The batches of an epoch whose worker processes end with its iterator (a
    DataLoader's that do not persist), where `epoch_size` knows them exactly; None
    otherwise."""
    if not isinstance(loader, DataLoader) or loader.num_workers == 0 or loader.persistent_workers:
        return None
    size = epoch_size(loader)
    return size["batches"] if size is not None else None


def drain_in_flight(batches):
    """Ends an epoch cut after its window as a whole epoch ends: DataLoader's workers are
    sent no more indices and the batches already handed to them are taken, so that no
    work of this epoch is left for the next (the next `iter()` of persistent workers
    waits for it: the next epoch was charged with it) or for the workers' shutdown.
    Returns the seconds it took, which the epoch leaves out. Loaders of threads
    (torchdata.nodes, SPDL) stop theirs as they are closed."""
    if not hasattr(batches, "_tasks_outstanding") or not hasattr(batches, "_sampler_iter"):
        return 0.0
    started = time.perf_counter()
    batches._sampler_iter = iter(())
    while batches._tasks_outstanding > 0:
        next(batches)
    return time.perf_counter() - started


def has_worker_processes(loader):
    """Whether the loader's workers are processes (DataLoader's, persistent or not)."""
    return isinstance(loader, DataLoader) and loader.num_workers > 0


def sweep_before_workers_end(epoch):
    """Has loaderbench sweep the memory of every process once more, and waits for its
    `go`: the workers' copy-on-access growth peaks at the end of the epoch, after the
    last periodic sweep, and ending the iterator ends them (persistent ones end with the
    loader, right after the last epoch: in a short epoch no periodic sweep may have
    seen them at all). Returns the seconds waited, which the epoch's time leaves out."""
    asked = time.perf_counter()
    emit(kind="sweep", epoch=epoch)
    GO.acquire()
    return time.perf_counter() - asked


def sweep_as_iterable_workers_end(batches, epoch, swept):
    """Has loaderbench sweep the memory of every process before DataLoader ends a worker
    whose IterableDataset iterator ran out: DataLoader ends each such worker at once,
    mid-epoch, so the sweep after the last batch came too late for it. Adds the seconds
    waited to `swept[0]`, which the epoch's time leaves out. (Persistent workers stay
    for that sweep; map-style datasets' workers end only with the iterator.)"""
    end_worker = getattr(batches, "_mark_worker_as_unavailable", None)
    if end_worker is None:
        return

    def swept_then_ended(worker_id, shutdown=False):
        if not shutdown:
            swept[0] += sweep_before_workers_end(epoch)
        end_worker(worker_id, shutdown)

    batches._mark_worker_as_unavailable = swept_then_ended


def measure_epoch(loader, epoch, device, step, rule, ranked):
    cuda = device.type == "cuda"
    whole = epoch_size(loader) if rule is not None else None
    # Stopping at the last batch, rather than at the StopIteration after it (inside
    # which DataLoader ends the workers), keeps them alive for the epoch's last sweep.
    last = workers_end_with_epoch(loader)
    start = time.perf_counter()
    emit(kind="epoch_start", epoch=epoch, t0=start)
    sizes = batch_sizes(loader)
    batches = iter(loader)
    swept_s = [0.0]
    if has_worker_processes(loader) and isinstance(loader.dataset, IterableDataset):
        sweep_as_iterable_workers_end(batches, epoch, swept_s)
    index = 0
    at_s = []
    drained_s = 0.0
    while True:
        asked = time.perf_counter()
        swept_before = swept_s[0]
        try:
            batch = next(batches)
        except StopIteration:
            break
        taken = time.perf_counter()
        # A worker's sweep while this batch was awaited is no wait for it, and the
        # epoch's clock leaves every sweep out.
        swept_in_wait = swept_s[0] - swept_before
        batch = to_device(batch, device)
        if cuda:
            torch.cuda.synchronize(device)
        at = time.perf_counter()
        if step is not None:
            step(batch)
            if cuda:
                torch.cuda.synchronize(device)
        stepped = time.perf_counter()
        emit(
            kind="batch",
            epoch=epoch,
            index=index,
            at_s=at - start - swept_s[0],
            samples=sizes(index) if sizes is not None else batch_samples(batch),
            wait_s=taken - asked - swept_in_wait,
            to_device_s=at - taken,
            step_s=stepped - at,
        )
        index += 1
        at_s.append(at - start - swept_s[0])
        if whole is not None and window_done_on_every_rank(rule, at_s, ranked):
            drained_s = drain_in_flight(batches)
            break
        if index == last:
            break
    if has_worker_processes(loader):
        swept_s[0] += sweep_before_workers_end(epoch)
    # Cut or not, the epoch ends once its iterator is gone (non-persistent workers end);
    # a torchdata.nodes epoch is closed, so that what its threads left wrong is raised.
    if hasattr(batches, "close"):
        batches.close()
    del batches
    emit(
        kind="epoch",
        epoch=epoch,
        seconds=time.perf_counter() - start - swept_s[0] - drained_s,
        window=rule if whole is not None else None,
        epoch_size=whole,
    )


# Ranks: one process of a distributed job. `request["ranks"]` is null for one rank,
# else {"rank", "world", "init_method"}; everything rank-specific is in these functions.


def join_process_group(request):
    """Joins the job's gloo process group (a file store in loaderbench's private folder,
    so no port is chosen or raced for)."""
    ranks = request.get("ranks")
    if ranks:
        import torch.distributed as dist

        # As torchrun sets them: WebDataset's split_by_node reads them in worker
        # processes, where the process group is not joined.
        os.environ.update(RANK=str(ranks["rank"]), WORLD_SIZE=str(ranks["world"]))

        dist.init_process_group(
            "gloo",
            init_method=ranks["init_method"],
            rank=ranks["rank"],
            world_size=ranks["world"],
        )


def sampler_options(request, dataset):
    """The DataLoader's sampler: with ranks, a DistributedSampler over the rank's shard
    (padded or, with drop_last, cut to equal shards; shuffled with the run's seed)."""
    ranks = request.get("ranks")
    if not ranks or isinstance(dataset, IterableDataset):
        return {}
    from torch.utils.data.distributed import DistributedSampler

    sampler = DistributedSampler(
        dataset,
        num_replicas=ranks["world"],
        rank=ranks["rank"],
        shuffle=request["shuffle"],
        seed=request["seed"],
        drop_last=request["drop_last"],
    )
    return dict(sampler=sampler, shuffle=False)


def before_epoch(request, loader, epoch):
    """Sets a shard pipeline's epoch; with ranks, sets the sampler's epoch and waits at
    the barrier for every rank, and returns when this rank left it (time.time, which all
    ranks share)."""
    if request["dataset"]["kind"] == "shards":
        pytorch_shards.set_epoch(loader.dataset, epoch)
    if not request.get("ranks"):
        return None
    import torch.distributed as dist

    # An IterableDataset's (shards') sampler is PyTorch's endless placeholder.
    if hasattr(loader.sampler, "set_epoch"):
        loader.sampler.set_epoch(epoch)
        trace_indices(request, loader.sampler, epoch)
    dist.barrier()
    return time.time()


def wait_for_page_cache(request, dataset, epoch):
    """Waits until loaderbench has made the page cache what the config asks (its `go`):
    with cache: cold, after releasing this process's mapped pages of the dataset, its
    files evicted; with cache: warm, its files loaded."""
    if request["knobs"]["cache"] == "cold":
        inner = dataset.dataset if isinstance(dataset, Subset) else dataset
        if hasattr(inner, "release_mapped_pages"):
            inner.release_mapped_pages()
    emit(kind="epoch_ready", epoch=epoch)
    GO.acquire()


def after_epoch(request, epoch, started):
    if request.get("ranks"):
        emit(kind="rank_epoch", epoch=epoch, started_unix_s=started, finished_unix_s=time.time())


def trace_indices(request, sampler, epoch):
    """For tests: with LOADERBENCH_TRACE_INDICES naming a folder, writes the indices this
    rank's sampler yields in `epoch` to rank<R>-epoch<E>.json there."""
    folder = os.environ.get("LOADERBENCH_TRACE_INDICES")
    if folder:
        name = f"rank{request['ranks']['rank']}-epoch{epoch}.json"
        with open(os.path.join(folder, name), "w") as f:
            json.dump(list(sampler), f)


def leave_process_group(request):
    if request.get("ranks"):
        import torch.distributed as dist

        dist.destroy_process_group()


def rss_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


def peak_rss_bytes():
    """This process's peak resident memory: Linux's VmHWM, the peak of its own memory
    since exec. `ru_maxrss` on Linux keeps the peak of the memory before exec too (the
    fork of loaderbench that started the script: all of loaderbench's resident memory),
    so it is the fallback only where /proc has no VmHWM."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    if resource is None:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def die_with_parent():
    """Releases GO for each `go` line, and waits for stdin to close (loaderbench
    ended), then kills this process group.

    It reads the raw descriptor: a thread blocked in sys.stdin would hold its lock
    while fork copies it, and forked workers, which close sys.stdin, would deadlock."""
    while True:
        data = os.read(0, 4096)
        if not data:
            break
        for _ in range(data.count(b"\n")):
            GO.release()
    # Process groups are POSIX; on Windows the workers are this process's children and
    # PyTorch ends them when it exits.
    if hasattr(os, "killpg") and os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(1)


# ---------------------------------------------------------------------------------------
# The user's own code: their Dataset (dataset kind `python`) and their step (step kind
# `python`): importing their module, building the dataset and collate_fn it names,
# moving whatever batches it makes to the device, and naming the file and line of their
# code an error comes from.
# ---------------------------------------------------------------------------------------

import importlib  # noqa: E402
import importlib.util  # noqa: E402
import inspect  # noqa: E402
import pickle  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import traceback  # noqa: E402
from multiprocessing.reduction import ForkingPickler  # noqa: E402

from torch.utils.data import IterableDataset  # noqa: E402

# A frame of a formatted traceback: `  File "/path/x.py", line 41, in __getitem__`.
TRACEBACK_FRAME = re.compile(r'^\s*File "(.+)", line (\d+)', re.MULTILINE)


class UserInputError(Exception):
    """The user's module lacks what the preset names (bad input, not a failed run)."""

    def __init__(self, message, file):
        super().__init__(message)
        self.file = file

    def location(self):
        return {"file": self.file, "line": None}


def user_module(named):
    """Imports the module at `named` (as the preset names it) with its folder first on
    sys.path (spawned workers inherit sys.path, so they unpickle the dataset from the
    same module)."""
    path = os.path.abspath(named)
    if not os.path.isfile(path):
        raise UserInputError("no such file", named)
    folder, name = os.path.split(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(os.path.splitext(name)[0])


def call_user(module, spec, field, args, section="dataset"):
    """`spec[field]`(**args), a function of the user's `module`. A name the module lacks,
    or arguments the function's signature does not take, are bad input naming the module:
    calling it with them would raise a TypeError at no line of the user's, read as a
    failed run."""
    name = spec[field]
    function = getattr(module, name, None)
    if not callable(function):
        problem = "is not callable" if function is not None else "is not defined"
        raise UserInputError(f"`{name}` ({section}.{field}) {problem} in the module", spec["path"])
    try:
        inspect.signature(function).bind(**args)
    except TypeError as err:
        given = f"{section}.args {json.dumps(args)}" if args else "no arguments"
        raise UserInputError(
            f"`{name}` ({section}.{field}) cannot be called with {given}: {err}", spec["path"]
        ) from None
    except ValueError:
        pass  # No signature to check (a builtin): the call itself says.
    return function(**args)


def checked_len(dataset, spec):
    """len(dataset). Where len() itself refuses what the factory gave (no `__len__`, or
    one that returns no integer), rather than the user's `__len__` raising, bad input
    naming the module: the TypeError would name no line of theirs."""
    try:
        return len(dataset)
    except TypeError as err:
        if err.__traceback__.tb_next is not None:
            raise
        raise UserInputError(
            f"len() of what `{spec['factory']}` (dataset.factory) gives fails: {err}",
            spec["path"],
        ) from None


class UserCode:
    """What pytorch_steps needs of the helpers above."""

    module = staticmethod(user_module)
    call = staticmethod(call_user)

    @staticmethod
    def fail_file(path, message):
        fail(message, user={"file": path, "line": None})


def user_dataset(request):
    """factory(**args), once, in this process; `samples` keeps the first N of a
    map-style dataset. An IterableDataset is taken as it is (a note says what it means)."""
    spec = request["dataset"]
    module = user_module(spec["path"])
    dataset = call_user(module, spec, "factory", spec["args"])
    if isinstance(dataset, IterableDataset):
        emit(
            kind="note",
            message=f"{spec['path']}: {spec['factory']}() gives an IterableDataset: shuffle and "
            "samples do not apply, and each worker iterates it as its own code shards it",
        )
        return dataset
    length = checked_len(dataset, spec)
    samples = request.get("samples")
    if samples is not None and samples < length:
        dataset = Subset(dataset, range(samples))
    return dataset


def user_loader_options(request, dataset):
    """The DataLoader arguments the user's module decides: its collate_fn (collate()
    returns it), and no shuffle for an IterableDataset."""
    spec = request["dataset"]
    if spec["kind"] != "python":
        return {}
    options = {}
    if spec.get("collate"):
        module = user_module(spec["path"])
        options["collate_fn"] = call_user(module, spec, "collate", {})
    if isinstance(dataset, IterableDataset):
        options.update(shuffle=False, generator=None)
    return options


def to_device(batch, device):
    """Every tensor of a batch (a tensor, or lists, tuples and dicts of them) on device."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (list, tuple)):
        return [to_device(item, device) for item in batch]
    if isinstance(batch, dict):
        return {key: to_device(item, device) for key, item in batch.items()}
    return batch


def batch_sizes(loader):
    """Each batch's samples by its index, where the loader's sampler says them (a
    map-style dataset in batches of `batch_size`, the last one short unless drop_last):
    exact, whatever the user's collate_fn makes of the batch. None otherwise (an
    IterableDataset: then `batch_samples` reads them off the batch)."""
    size = epoch_size(loader)
    batch_size = getattr(loader, "batch_size", None)
    if size is None or not batch_size:
        return None
    return lambda index: max(0, min(batch_size, size["samples"] - index * batch_size))


def batch_samples(batch):
    """The samples in a batch as its structure says: a tensor's first dimension; a dict's
    first field that says (strings collate to a list of them); of a list or tuple, its
    first tensor's first dimension, or the length of its first list or tuple (a collate
    that keeps samples apart, as detection's `tuple(zip(*batch))` does)."""
    if isinstance(batch, torch.Tensor):
        return len(batch) if batch.dim() > 0 else 1
    if isinstance(batch, dict):
        for value in batch.values():
            samples = batch_samples(value)
            if samples:
                return samples
        return 0
    if isinstance(batch, (list, tuple)) and batch:
        first = batch[0]
        if isinstance(first, (torch.Tensor, dict)):
            return batch_samples(first)
        if isinstance(first, (list, tuple)):
            return len(first)
        return len(batch)
    return 0


def versions(request):
    found = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
    }
    if request["knobs"]["runtime"] == "spdl":
        from importlib.metadata import PackageNotFoundError, version

        # spdl.__version__ says "unknown"; PyPI's spdl-core (or spdl) knows.
        try:
            found["spdl"] = version("spdl-core")
        except PackageNotFoundError:
            found["spdl"] = version("spdl")
    return found


def in_user_code(file, folder):
    file = os.path.abspath(file)
    return file.startswith(folder + os.sep) and "site-packages" not in file


def user_modules(request):
    """The user's modules as the preset names them: a python dataset's, a python step's."""
    dataset = request.get("dataset") or {}
    modules = [dataset["path"]] if dataset.get("kind") == "python" else []
    kind, step = pytorch_steps.step_spec(request)
    return modules + ([step["path"]] if kind == "python" else [])


def as_named(file, named):
    """`file` as the user knows it when it is in the folder of their module `named`
    (the module itself as the preset names it, others beside it); else None."""
    module_file = os.path.abspath(named)
    folder = os.path.dirname(module_file)
    if not in_user_code(file, folder):
        return None
    if os.path.abspath(file) == module_file:
        return named
    return os.path.join(os.path.dirname(named), os.path.relpath(file, folder))


def fail_in_user_code(err, request):
    """Fails with `file:line: Type: message` when the traceback (the exception's own, or
    the one a DataLoader worker sent, which PyTorch puts in the message) passes through
    the folder of one of the user's modules: the last such frame is where their code
    went wrong. Returns when no frame is theirs."""
    modules = user_modules(request)
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    for file, line in reversed(TRACEBACK_FRAME.findall(text)):
        for named in modules:
            shown = as_named(file, named)
            if shown is not None:
                problem = user_exception_line(err) + missing_module_hint(err)
                fail(problem, user={"file": shown, "line": int(line)})


def missing_module_hint(err):
    """For a package that the Python running the script lacks: which Python that is, and
    how to install it there or name another. Empty for any other error, and for a
    missing submodule of a package it has."""
    if not isinstance(err, ModuleNotFoundError):
        return ""
    # A worker's error, re-raised by PyTorch, has lost the module's name.
    package = (err.name or "").split(".")[0]
    if package and importlib.util.find_spec(package) is not None:
        return ""
    return (
        f" (the Python that ran it, {sys.executable}, lacks it: install it there, or name "
        "a Python that has it in the preset's `python` field or in LOADERBENCH_PYTHON)"
    )


# What each user object that PyTorch pickles for a spawned worker is, and what to do about
# it when it cannot be pickled.
PICKLED_FOR_WORKERS = (
    ("collate_fn", "make it a function at the top level of the module"),
    ("dataset", "keep lambdas, nested functions and open files out of it"),
)


def fail_unpicklable(err, request, loader):
    """Fails naming the user's collate_fn or dataset when starting a worker failed
    because it cannot be pickled (every start method but fork pickles both for each
    worker; PyTorch re-raises pickle's error). Returns when neither is at fault."""
    spec = request.get("dataset", {})
    knobs = request["knobs"]
    pickles = (
        knobs["runtime"] == "pytorch"
        and knobs["num_workers"] > 0
        and knobs["start_method"] != "fork"
    )
    pickling_error = isinstance(err, (TypeError, AttributeError, pickle.PicklingError))
    if spec.get("kind") != "python" or loader is None or not (pickles and pickling_error):
        return
    for name, advice in PICKLED_FOR_WORKERS:
        thing = getattr(loader, name)
        try:
            ForkingPickler.dumps(thing)
        except Exception:
            why = f"start_method {knobs['start_method']} pickles the {name} for each worker"
            fail(f"{user_exception_line(err)} ({why}: {advice})", user=where_defined(thing, spec))


def where_defined(thing, spec):
    """The file and first line of `thing` when it is a function of the user's; else
    their module, with no line."""
    code = getattr(thing, "__code__", None)
    shown = as_named(code.co_filename, spec["path"]) if code is not None else None
    if shown is None:
        return {"file": spec["path"], "line": None}
    return {"file": shown, "line": code.co_firstlineno}


def user_exception_line(err):
    """`Type: message` in one line; for an error a worker raised, the original's last
    traceback line (PyTorch re-raises it as `Caught X in DataLoader worker process N`)."""
    message = str(err)
    if "Original Traceback" in message:
        lines = [l for l in message.splitlines() if l.strip() and not l.startswith(" ")]
        if lines:
            return lines[-1].strip()
    return " ".join(f"{type(err).__name__}: {message}".split())


def error_line(err):
    """`Type: message` in one line (for an error a worker raised, the original's, as
    `user_exception_line` gives it, not PyTorch's whole traceback); for a DataLoader
    worker that died, how it died too (PyTorch raises its `exited unexpectedly` from the
    `is killed by signal` of its SIGCHLD handler, which names the signal)."""
    line = user_exception_line(err)
    cause = err.__cause__
    if cause is not None and str(cause).startswith("DataLoader worker"):
        line += " (" + " ".join(str(cause).split()) + ")"
    return line


def refuse_empty_epochs(request, loader):
    """Fails, as bad input, where an epoch would hold no batch (drop_last with a batch
    larger than the samples, or a rank's share of them), as loaderbench refuses it for
    the datasets it opens itself; only here is a user's dataset's length known."""
    size = epoch_size(loader)
    if size is None or size["batches"] > 0:
        return
    samples = len(loader.sampler)
    each = " each rank gets" if request.get("ranks") else ""
    fail(
        f"batch_size {loader.batch_size} with drop_last leaves no batch of the {samples} "
        f"samples{each}: lower batch_size, raise samples, or set drop_last: false",
        bad_input=True,
    )


def check_knobs(request):
    """Fails unless the request sends exactly the knobs this script takes: a knob it
    ignored would be measured as if it had no effect."""
    sent = set(request.get("knobs", {}))
    if sent != set(KNOBS):
        unknown = ", ".join(sorted(sent - set(KNOBS))) or "none"
        missing = ", ".join(sorted(set(KNOBS) - sent)) or "none"
        fail(f"the request's knobs do not match the script's (unknown: {unknown}; missing: {missing})")


def main():
    line = sys.stdin.readline()
    threading.Thread(target=die_with_parent, daemon=True).start()
    try:
        request = json.loads(line)
    except ValueError as err:
        fail(f"the request is not JSON: {err}")
    check_knobs(request)
    # PIL refuses images past twice its own limit, and warns past it: it reads what our
    # engine reads when the limit is the dataset's (whose images were checked against it).
    Image.MAX_IMAGE_PIXELS = request["image_pixels"]
    knobs = request["knobs"]
    loader = None
    try:
        join_process_group(request)
        device = torch.device(knobs["device"])
        if knobs["intra_op_threads"]:
            torch.set_num_threads(knobs["intra_op_threads"])
        dataset = build_dataset(request)
        loader = build_loader(request, dataset)
        refuse_empty_epochs(request, loader)
        torch.manual_seed(request["seed"])
        step = pytorch_steps.build_step(request, device, UserCode)
        emit(
            kind="ready",
            intra_op_threads=torch.get_num_threads(),
            pin_memory_effective=bool(knobs["pin_memory"] and torch.cuda.is_available()),
            rss_bytes=rss_bytes(),
            versions=versions(request),
            dataset_samples=whole_len(dataset),
            dataset_object_bytes=pytorch_objects.python_object_bytes(dataset),
        )
        first = 0 if request["warmup"] else 1
        for epoch in range(first, request["epochs"] + 1):
            wait_for_page_cache(request, dataset, epoch)
            started = before_epoch(request, loader, epoch)
            measure_epoch(
                loader, epoch, device, step, request["window"], bool(request.get("ranks"))
            )
            after_epoch(request, epoch, started)
        # Ends persistent workers; `loader` stays bound for the error handlers below.
        loader = None
        leave_process_group(request)
        emit(kind="done", peak_rss_bytes=peak_rss_bytes())
    except pytorch_shards.ShardError as err:
        shard = pytorch_shards.described(err)
        fail(shard["problem"], bad_input=shard["bad_input"], shard=shard["shard"])
    except (pytorch_shards.MissingWebDataset, pytorch_nodes.MissingTorchdata) as err:
        fail(str(err), environment=True)
    except (UnsupportedOp, pytorch_steps.StepInputError) as err:
        fail(str(err), bad_input=True)
    except UserInputError as err:
        fail(str(err), bad_input=True, user=err.location())
    except (EOFError, ConnectionError) as err:
        fail_in_user_code(err, request)
        # A worker killed mid-transfer can surface as a broken queue before PyTorch's
        # own "DataLoader worker (pid N) is killed" check runs; say what it means.
        fail(f"a DataLoader worker exited unexpectedly ({error_line(err)})")
    except Exception as err:
        fail_in_user_code(err, request)
        fail_unpicklable(err, request, loader)
        fail(error_line(err))


if __name__ == "__main__":
    if sys.argv[1:] == ["--preload"]:
        import pytorch_preload

        # Returns in each script process it forks, with the request on stdin.
        pytorch_preload.serve(emit)
    main()
