"""A python step that records every batch it is given, as loaderbench's worker kind
tests load it with `step: python(path: ".../record_batches.py", factory: "make_step",
args: {"folder": DIR})`. Each script (one per config, in plan order) writes
`batches-N.jsonl` in the folder, N the next number free, one line per batch: its labels,
a digest of each sample's values, how many torchdata.nodes worker threads
(ParallelMapper's, named after `_apply_udf`) the process holds as the batch arrives, and
how many child processes it has then (DataLoader's worker processes).
"""

import hashlib
import json
import os
import threading


def claim(folder):
    number = 0
    while True:
        path = os.path.join(folder, f"batches-{number}.jsonl")
        try:
            return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "w")
        except FileExistsError:
            number += 1


def child_processes():
    """The pids of this process's children, as /proc lists them for each of its threads."""
    pids = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as children:
                pids.update(children.read().split())
        except OSError:
            pass
    return len(pids)


def make_step(folder):
    record = claim(folder)

    def step(batch):
        images, labels = batch
        line = {
            "labels": labels.tolist(),
            "digests": [hashlib.sha1(image.numpy().tobytes()).hexdigest()[:16] for image in images],
            "worker_threads": sum("_apply_udf" in t.name for t in threading.enumerate()),
            "child_processes": child_processes(),
        }
        record.write(json.dumps(line) + "\n")
        record.flush()

    return step
