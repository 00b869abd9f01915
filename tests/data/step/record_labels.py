"""A user's step that records the batches it is given, for the tests that compare the
order in which runtimes deliver samples: `step: python(path: ".../record_labels.py",
factory: "make_step", args: {"folder": DIR})`.

Each script process (one per config) writes one file in `folder`, named by when the step
was made (so that the files sort in the order the configs ran), with one line per batch:
the batch's labels as a JSON list. Over a dataset whose label is the sample's index,
that is the order the samples came in.
"""

import json
import os
import time


def make_step(folder):
    path = os.path.join(folder, f"{time.time_ns()}.jsonl")

    def step(batch):
        labels = batch[1].tolist()
        with open(path, "a") as file:
            file.write(json.dumps(labels) + "\n")

    return step
