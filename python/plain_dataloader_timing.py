"""A plain DataLoader timing loop, the yardstick for pytorch_loader.py's figures.

Reads the same request on stdin, builds the same dataset and DataLoader, and times each
epoch the way a training script would: no per-batch reports, nothing else. A user's own
dataset (kind `python`) is imported here as a training script would import it, and so is
a user's own step (step kind `python`): the loop calls it on every batch, as a plain
PyTorch training loop calls its step. Prints one JSON object: the first batch and every
epoch, in seconds.
"""

import importlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_loader  # noqa: E402
import pytorch_steps  # noqa: E402


def user_factory(spec):
    """The factory named in `spec`, from the user's module imported from its folder."""
    folder, name = os.path.split(os.path.abspath(spec["path"]))
    sys.path.insert(0, folder)
    module = importlib.import_module(os.path.splitext(name)[0])
    return getattr(module, spec["factory"])


def user_step(request):
    """The user's step, factory(**args), or None without a python step."""
    kind, spec = pytorch_steps.step_spec(request)
    if kind != "python":
        return None
    return user_factory(spec)(**spec.get("args", {}))


def user_dataset(request):
    """The user's module imported from its folder, and factory(**args)."""
    spec = request["dataset"]
    dataset = user_factory(spec)(**spec["args"])
    samples = request.get("samples")
    if samples is not None and samples < len(dataset):
        dataset = pytorch_loader.Subset(dataset, range(samples))
    return dataset


def main():
    request = json.loads(sys.stdin.readline())
    device = pytorch_loader.torch.device(request["knobs"]["device"])
    if request["dataset"]["kind"] == "python":
        dataset = user_dataset(request)
    else:
        dataset = pytorch_loader.build_dataset(request)
    loader = pytorch_loader.build_loader(request, dataset)  # with the user's collate_fn
    loader.worker_init_fn = None  # no reports: only the loop is timed
    pytorch_loader.torch.manual_seed(request["seed"])
    step = user_step(request)
    first_batch, epochs = None, []
    for epoch in range(request["epochs"]):
        start = time.perf_counter()
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            if step is not None:
                step([images, labels])
            if first_batch is None:
                first_batch = time.perf_counter() - start
        epochs.append(time.perf_counter() - start)
    print(json.dumps({"first_batch_s": first_batch, "epochs": epochs}))


if __name__ == "__main__":
    main()
