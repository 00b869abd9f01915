"""A user's map-style Dataset whose `__getitem__` writes bytes that are not UTF-8 to
stderr (a C library's warning in another encoding, say), as loaderbench's tests load it
with `factory: "make_dataset", args: {"size": N}`: the run reads the child's stderr as
bytes and goes on.
"""

import sys

from numbered import Numbered


class NoisyStderr(Numbered):
    def __getitem__(self, index):
        sys.stderr.buffer.write(b"\xff\xfe warning\n")
        sys.stderr.buffer.flush()
        return super().__getitem__(index)


def make_dataset(size):
    return NoisyStderr(size, divide_by=255)
