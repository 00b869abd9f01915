"""A user's map-style Dataset whose `__getitem__` takes `delay_s` (a slow read), as
loaderbench's tests load it with `factory: "make_dataset", args: {"size": N,
"delay_s": S}`: epochs long enough to be cut into windows, with work in flight in the
workers when they are.
"""

import time

from numbered import Numbered


class Sleepy(Numbered):
    def __init__(self, size, delay_s):
        super().__init__(size)
        self.delay_s = delay_s

    def __getitem__(self, index):
        time.sleep(self.delay_s)
        return super().__getitem__(index)


def make_dataset(size, delay_s):
    return Sleepy(size, delay_s)
