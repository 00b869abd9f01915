"""Checks that a recommendation's snippet builds the DataLoader that was measured.

Usage: check_snippet.py PYTORCH_LOADER REQUEST SNIPPET [REQUEST SNIPPET ...]

The measured loader is built the way the PyTorch runtime builds it: by
python/pytorch_loader.py (PYTORCH_LOADER) from the run's request (REQUEST, the JSON
line the runtime was given), seeded as its main() seeds it. The snippet (SNIPPET) runs in
a fresh namespace; for a built-in dataset, whose snippet starts from the user's
`dataset`, that name is bound to the dataset the runtime built. The first 3 batches of
both loaders must be equal: the same structure, shapes, dtypes and values. Each pair of
REQUEST and SNIPPET is checked in turn, in this one process (torch is imported once):
prints one line a pair and exits 0 when every pair's batches are equal, 1 at the first
that differs.
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


def check(pytorch_loader, request_path, snippet_path, count=3):
    """Where the snippet's first `count` batches differ from the measured loader's, or
    None when they are equal."""
    with open(request_path) as file:
        request = json.load(file)
    with open(snippet_path) as file:
        snippet = file.read()

    measured = pytorch_loader.build_loader(request, pytorch_loader.build_dataset(request))
    torch.manual_seed(request["seed"])
    expected = first_batches(measured, count)

    namespace = {}
    if request["dataset"]["kind"] != "python":
        namespace["dataset"] = pytorch_loader.build_dataset(request)
    exec(compile(snippet, "snippet", "exec"), namespace)
    got = first_batches(namespace["loader"], count)

    if len(got) != len(expected):
        return f"the snippet's loader gave {len(got)} batches, the measured one {len(expected)}"
    for index, (a, b) in enumerate(zip(expected, got)):
        found = difference(a, b, f"batch {index}")
        if found:
            return f"differs: {found}"
    return None


def main():
    pytorch_loader = load_pytorch_loader(sys.argv[1])
    pairs = sys.argv[2:]
    if not pairs or len(pairs) % 2:
        print(__doc__.splitlines()[2])
        finish(2)
    for request_path, snippet_path in zip(pairs[::2], pairs[1::2]):
        found = check(pytorch_loader, request_path, snippet_path)
        if found:
            print(f"{snippet_path}: {found}")
            finish(1)
        print(f"{snippet_path}: same: 3 batches")
    finish(0)


if __name__ == "__main__":
    main()
