"""The map-style Dataset that the user datasets of loaderbench's tests build on: `size`
samples, sample `index` a 1×28×28 float image holding `index % 256` divided by
`divide_by`, with the label `index % 10`. Each test module subclasses it for what it
shows (the runtime puts a module's folder first on sys.path, so they import it by name).
"""

import torch
from torch.utils.data import Dataset


class Numbered(Dataset):
    def __init__(self, size, divide_by=1):
        self.size = size
        self.divide_by = divide_by

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        image = torch.full((1, 28, 28), index % 256, dtype=torch.float32) / self.divide_by
        return image, index % 10
