"""Tar shards for loaderbench's PyTorch runtime, read the way users read them: with
WebDataset (`wds.WebDataset(urls, ...)`, plain or compressed as tarfile's stream mode
reads them, split by node then by worker, shards shuffled per epoch and samples through a
shuffle buffer when the run shuffles, both seeded from the run's seed and the epoch, so
that two runs read alike, and the buffer also from the rank and worker), each image decoded
with PIL and passed through the same torchvision transforms as the image folder, each
label from `cls` (an integer as text) or `json` (an integer, or an object with an integer
"label"). Local paths are opened as files, http:// URLs through the curl program (as
WebDataset does). Whatever goes wrong with a shard becomes a ShardError naming it, which
pytorch_loader.py reports as one line.
"""

import io
import json
import random
import urllib.error
import urllib.request

from PIL import Image

# The image formats a sample may hold: torchvision's IMG_EXTENSIONS, as loaderbench's
# engine reads them (its IMAGE_EXTENSIONS; a test in crates/measure/src/pytorch/shard_list.rs
# holds the two lists together).
IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "ppm", "bmp", "pgm", "tif", "tiff", "webp")
LABEL_EXTENSIONS = ("cls", "json")
# What WebDataset puts in every sample beside its members.
METADATA = ("__key__", "__url__", "__local_path__")
# What curl's exit statuses (WebDataset runs `curl -f -s -L URL`) mean for a shard;
# an HTTP error (22) is the user's URL at fault, the others the storage.
CURL_STATUSES = {
    6: "the host name does not resolve",
    7: "no server answers there",
    18: "the server closed the connection before the end of the shard",
    22: "the server answered with an HTTP error",
    28: "the transfer timed out",
    52: "the server sent nothing",
    56: "the connection broke while reading the shard",
}


class ShardError(Exception):
    """A shard that cannot be read, or a malformed sample in it. It travels from a
    DataLoader worker as its message only (PyTorch rebuilds it from a string), so the
    message is JSON: {"shard", "problem", "bad_input"}, the shard None where WebDataset
    does not say which."""

    def __str__(self):
        # WebDataset appends the shard and its stream to the args of what passes it.
        return str(self.args[0]) if self.args else ""

    @staticmethod
    def of(shard, problem, bad_input=True):
        return ShardError(json.dumps({"shard": shard, "problem": problem, "bad_input": bad_input}))


class MissingWebDataset(Exception):
    """The Python running the script lacks the webdataset package."""


def described(err):
    """A ShardError's fields, whether raised here or re-raised from a worker (where
    PyTorch puts the original traceback, ending in `...ShardError: {json}`, in the
    message)."""
    text = str(err)
    if "Original Traceback" in text:
        last = [line for line in text.splitlines() if "ShardError: " in line][-1]
        text = last.split("ShardError: ", 1)[1]
    return json.loads(text)


def shard_dataset(request, transform, mode):
    """The WebDataset pipeline for the request's shards: samples as (tensor, label)."""
    try:
        import webdataset as wds
    except ImportError as err:
        raise MissingWebDataset(f"cannot import webdataset ({err}); scripts/setup installs it") from err
    spec = request["dataset"]
    shards = spec["shards"]
    shuffle = request["shuffle"]
    dataset = wds.WebDataset(
        shards,
        handler=ShardErrors(shards),
        shardshuffle=len(shards) if shuffle else False,
        detshuffle=True,
        seed=request["seed"],
        nodesplitter=wds.split_by_node,
        workersplitter=wds.split_by_worker,
        # A worker given no shard (more workers than shards) yields nothing, as ours do.
        empty_check=False,
    )
    if spec.get("last_shard_samples") is not None:
        dataset = dataset.compose(LastShardCut(shards[-1], spec["last_shard_samples"]))
    if shuffle and spec["shuffle_buffer"] > 0:
        dataset = dataset.compose(WorkerShuffle(spec["shuffle_buffer"], request["seed"]))
    return dataset.map(Decode(transform, mode))


class WorkerShuffle:
    """WebDataset's shuffle buffer with a seeded generator, as its `detshuffle` seeds one
    from the seed and the epoch it counts, here also from the rank and the worker it runs
    in, so that no two workers draw alike. A plain class (webdataset is imported only
    once a run has shards), so that spawned workers can unpickle it."""

    def __init__(self, buffer, seed):
        self.buffer = buffer
        self.seed = seed
        self.epoch = -1

    def __call__(self, samples):
        import webdataset as wds

        self.epoch += 1
        rank, _, worker, _ = wds.utils.pytorch_worker_info()
        # A string seeds the same generator in every process (no hash salt).
        rng = random.Random(f"{self.seed}/{self.epoch}/{rank}/{worker}")
        return wds.filters.shuffle(self.buffer, rng=rng)(samples)


def set_epoch(dataset, epoch):
    """Tells the seeded shuffles of a shard pipeline (the shards' and the buffer's) which
    epoch comes next (numbered from 1), as DistributedSampler.set_epoch does: workers
    that do not persist get a fresh copy of the pipeline each epoch, whose own count
    would start over. Workers that persist count on in their own copies."""
    import webdataset as wds

    for stage in getattr(dataset, "pipeline", []):
        if isinstance(stage, (wds.detshuffle, WorkerShuffle)):
            stage.epoch = epoch - 1


class LastShardCut:
    """Keeps the first `keep` samples of the last shard (the run's `samples` ends inside
    it); only the worker that reads that shard sees its samples."""

    def __init__(self, shard, keep):
        self.shard = shard
        self.keep = keep

    def __call__(self, samples):
        seen = 0
        for sample in samples:
            if sample["__url__"] == self.shard:
                seen += 1
                if seen > self.keep:
                    continue
            yield sample


class Decode:
    """One grouped sample to (transformed image, label), checking its members."""

    def __init__(self, transform, mode):
        self.transform = transform
        self.mode = mode

    def __call__(self, sample):
        shard, key = sample["__url__"], sample["__key__"]
        members = [name for name in sample if name not in METADATA]
        unknown = [name for name in members if name not in IMAGE_EXTENSIONS + LABEL_EXTENSIONS]
        images = [name for name in members if name in IMAGE_EXTENSIONS]
        labels = [name for name in members if name in LABEL_EXTENSIONS]
        if unknown:
            problem = f"member {key}.{unknown[0]}: unknown extension (samples are {', '.join(IMAGE_EXTENSIONS)} with cls or json)"
        elif len(images) != 1:
            problem = f"sample {key}: " + ("no image" if not images else f"two images ({key}.{images[0]}, {key}.{images[1]})")
        elif len(labels) != 1:
            problem = f"sample {key}: " + ("no label (cls or json)" if not labels else "two labels (cls and json)")
        else:
            problem = None
        if problem:
            raise ShardError.of(shard, problem)
        label = read_label(shard, key, labels[0], sample[labels[0]])
        try:
            image = Image.open(io.BytesIO(sample[images[0]])).convert(self.mode)
        except Exception as err:
            raise ShardError.of(shard, f"member {key}.{images[0]}: not a readable image ({err})") from err
        return self.transform(image), label


def read_label(shard, key, extension, data):
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError:
        value = None
    if extension == "json" and isinstance(value, dict):
        value = value.get("label")
    if isinstance(value, bool) or not isinstance(value, int):
        expected = "an integer" if extension == "cls" else 'an integer or an object with an integer "label"'
        raise ShardError.of(shard, f"member {key}.{extension}: the label is not {expected}")
    return value


class ShardErrors:
    """WebDataset's error handler: turns what went wrong while opening or reading a
    shard into a ShardError naming it (WebDataset appends the shard's URL, and its curl
    pipe for http://, to the exception's args)."""

    def __init__(self, shards):
        self.shards = set(shards)

    def __call__(self, err):
        if isinstance(err, ShardError):
            raise err
        named = [getattr(err, "filename", None), *reversed(err.args)]
        shard = next((arg for arg in named if isinstance(arg, str) and arg in self.shards), None)
        if shard is None:
            # Only WebDataset's duplicate-member check raises without naming the shard.
            raise ShardError.of(None, f"a shard: {one_line(err).split(' dict_keys(')[0]}") from err
        status = curl_status(err)
        if status is not None and status != 0:
            raise ShardError.of(shard, curl_problem(shard, status), bad_input=status == 22) from err
        if isinstance(err, FileNotFoundError):
            raise ShardError.of(shard, "no such file") from err
        raise ShardError.of(shard, f"not a readable tar shard ({one_line(err)})") from err


def one_line(err):
    message = str(err.args[0]) if err.args else str(err)
    return " ".join(f"{type(err).__name__}: {message.split(' @ ')[0]}".split())


def curl_status(err):
    """The exit status of the curl process behind an http:// shard, when there is one."""
    for arg in err.args:
        process = getattr(arg, "proc", None)
        if process is not None:
            try:
                return process.wait(timeout=5)
            except Exception:
                return None
    return None


def curl_problem(shard, status):
    problem = CURL_STATUSES.get(status, "the download failed")
    if status == 22:
        problem = http_status(shard) or problem
    return f"{problem} (curl exit status {status})"


def http_status(url):
    """`HTTP 404 Not Found` for a URL that answers with an error (curl -s hides it)."""
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=5)
    except urllib.error.HTTPError as err:
        return f"HTTP {err.code} {err.reason}"
    except Exception:
        return None
    return None
