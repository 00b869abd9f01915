"""A user's map-style Dataset whose `__getitem__` prints, as people debug theirs: a
dict (a line that starts with `{`), a progress line, and text with no newline, through
Python's buffered stdout. loaderbench's tests load it with
`factory: "make_dataset", args: {"size": N}`: the run's reports are unharmed and every
sample is counted.
"""

import sys

from numbered import Numbered


class Printing(Numbered):
    def __getitem__(self, index):
        print({"index": index})
        print(f"loading sample {index}")
        sys.stdout.write("x")
        return super().__getitem__(index)


def make_dataset(size):
    return Printing(size, divide_by=255)
