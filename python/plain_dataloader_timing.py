"""A plain DataLoader timing loop, the yardstick for reference_loader.py's figures.

Reads the same request on stdin, builds the same dataset and DataLoader, and times each
epoch the way a training script would: no per-batch reports, nothing else. A user's own
dataset (kind `python`) is imported here as a training script would import it. Prints
one JSON object: the first batch and every epoch, in seconds.
"""

import importlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_loader as reference  # noqa: E402


def user_dataset(request):
    """The user's module imported from its folder, and factory(**args)."""
    spec = request["dataset"]
    folder, name = os.path.split(os.path.abspath(spec["path"]))
    sys.path.insert(0, folder)
    module = importlib.import_module(os.path.splitext(name)[0])
    dataset = getattr(module, spec["factory"])(**spec["args"])
    samples = request.get("samples")
    if samples is not None and samples < len(dataset):
        dataset = reference.Subset(dataset, range(samples))
    return dataset


def main():
    request = json.loads(sys.stdin.readline())
    device = reference.torch.device(request["knobs"]["device"])
    if request["dataset"]["kind"] == "python":
        dataset = user_dataset(request)
    else:
        dataset = reference.build_dataset(request)
    loader = reference.build_loader(request, dataset)  # with the user's collate_fn
    loader.worker_init_fn = None  # no reports: only the loop is timed
    reference.torch.manual_seed(request["seed"])
    first_batch, epochs = None, []
    for epoch in range(request["epochs"]):
        start = time.perf_counter()
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            if first_batch is None:
                first_batch = time.perf_counter() - start
        epochs.append(time.perf_counter() - start)
    print(json.dumps({"first_batch_s": first_batch, "epochs": epochs}))


if __name__ == "__main__":
    main()
