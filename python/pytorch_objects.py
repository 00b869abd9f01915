"""How much of a Dataset is Python objects: the bytes of the objects reachable from it
whose reference counts reading them writes (lists, dicts, tuples, sets, strings, numbers,
instances). A forked DataLoader worker starts sharing every page with its parent and
copies a page when it first writes to it, so as it reads these objects (and as its
garbage collector walks them) it copies their pages one by one: this is the memory each
worker may end up holding a copy of (pytorch/pytorch#13246). The data of numpy arrays and
tensors is not counted (reading an element writes nothing), nor are classes, modules and
functions. Containers of more than SAMPLE items are measured on SAMPLE of them, spread
evenly through the container, and scaled: an estimate in milliseconds, where walking 600,000
records would take seconds.
"""

import sys
import types

import numpy as np
import torch

SAMPLE = 256
DEPTH = 32

_SKIPPED = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    np.ndarray,
    torch.Tensor,
)


def python_object_bytes(root):
    """The estimated bytes of Python objects reachable from `root` (see the module); None
    where a user's object cannot be walked (an attribute that raises)."""
    try:
        return _object_bytes(root)
    except Exception:  # noqa: BLE001 - user objects may raise anything; then unknown
        return None


def _object_bytes(root):
    seen = set()

    def size(obj, depth):
        if depth > DEPTH or id(obj) in seen or isinstance(obj, _SKIPPED):
            return 0
        seen.add(id(obj))
        own = sys.getsizeof(obj, 0)
        items = children(obj)
        if len(items) > SAMPLE:
            step = len(items) / SAMPLE
            sampled = [items[int(i * step)] for i in range(SAMPLE)]
            scale = len(items) / SAMPLE
        else:
            sampled, scale = items, 1.0
        return own + scale * sum(size(item, depth + 1) for item in sampled)

    return int(size(root, 0))


def children(obj):
    """What `obj` holds: a container's items, an instance's attributes."""
    if isinstance(obj, dict):
        return [part for item in obj.items() for part in item]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, (str, bytes, int, float, complex, bool)) or obj is None:
        return []
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        return list(attributes.values())
    slots = [getattr(obj, name, None) for name in getattr(type(obj), "__slots__", ())]
    return [s for s in slots if s is not None]
