"""Checks that a recommendation's snippet builds the DataLoader that was measured.

Usage: check_snippet.py PYTORCH_LOADER REQUEST SNIPPET [BATCHES]

The measured loader is built the way the PyTorch runtime builds it: by
python/pytorch_loader.py (PYTORCH_LOADER) from the run's request (REQUEST, the JSON
line the runtime was given), seeded as its main() seeds it. The snippet (SNIPPET) runs in
a fresh namespace; for a built-in dataset, whose snippet starts from the user's
`dataset`, that name is bound to the dataset the runtime built. The first BATCHES
(default 3) batches of both loaders must be equal: the same structure, shapes, dtypes
and values. Prints one line and exits 0 when they are, 1 when not.
"""

import importlib.util
import json
import os
import sys

import torch


def load_pytorch_loader(path):
    # The script imports the modules beside it, as the runtime runs it.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("pytorch_loader", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["pytorch_loader"] = module
    spec.loader.exec_module(module)
    return module


def first_batches(loader, count):
    batches = []
    iterator = iter(loader)
    for batch in iterator:
        batches.append(batch)
        if len(batches) == count:
            break
    # The runtime's torchdata.nodes epoch stops its threads when closed.
    if hasattr(iterator, "close"):
        iterator.close()
    return batches


def finish(code):
    """Exits with `code` at once: a snippet's torchdata.nodes threads may still be in
    the middle of a sample, and torch aborts an interpreter shutting down under them."""
    sys.stdout.flush()
    os._exit(code)


def difference(expected, got, where="batch"):
    """Where two batches first differ, or None when they are equal."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{where}: a tensor against {type(got).__name__}"
        if expected.shape != got.shape or expected.dtype != got.dtype:
            return f"{where}: {tuple(expected.shape)} {expected.dtype} against {tuple(got.shape)} {got.dtype}"
        if not torch.equal(expected, got):
            return f"{where}: values differ"
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict) or sorted(expected) != sorted(got):
            return f"{where}: keys {sorted(expected)} against {got!r:.80}"
        for key in expected:
            found = difference(expected[key], got[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(expected) != len(got):
            return f"{where}: {len(expected)} items against {got!r:.80}"
        for index, (a, b) in enumerate(zip(expected, got)):
            found = difference(a, b, f"{where}[{index}]")
            if found:
                return found
        return None
    return None if expected == got else f"{where}: {expected!r:.80} against {got!r:.80}"


def main():
    pytorch_loader = load_pytorch_loader(sys.argv[1])
    with open(sys.argv[2]) as file:
        request = json.load(file)
    with open(sys.argv[3]) as file:
        snippet = file.read()
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 3

    measured = pytorch_loader.build_loader(request, pytorch_loader.build_dataset(request))
    torch.manual_seed(request["seed"])
    expected = first_batches(measured, count)

    namespace = {}
    if request["dataset"]["kind"] != "python":
        namespace["dataset"] = pytorch_loader.build_dataset(request)
    exec(compile(snippet, "snippet", "exec"), namespace)
    got = first_batches(namespace["loader"], count)

    if len(got) != len(expected):
        print(f"the snippet's loader gave {len(got)} batches, the measured one {len(expected)}")
        finish(1)
    for index, (a, b) in enumerate(zip(expected, got)):
        found = difference(a, b, f"batch {index}")
        if found:
            print(f"differs: {found}")
            finish(1)
    print(f"same: {len(got)} batches")
    finish(0)


if __name__ == "__main__":
    main()
