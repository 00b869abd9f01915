"""A user's own map-style Dataset over a folder of JPEG files, as loaderbench's worker
kind tests load it with `dataset: (kind: python, path: ".../jpeg_user.py", factory:
"make_dataset", args: {"root": DIR})`: each sample decoded by PIL and put through
torchvision transforms (resize, to tensor, normalize), its label its index, so that the
batches say which samples they hold. `delay_s` waits that long in every `__getitem__`
(releasing the GIL, as reading from storage does), to make a sample take steady time.
"""

import os
import time

from PIL import Image
from torch.utils.data import Dataset
from torchvision import transforms as T


class JpegUser(Dataset):
    def __init__(self, root, delay_s):
        self.files = sorted(os.path.join(root, name) for name in os.listdir(root) if name.endswith(".jpg"))
        self.transform = T.Compose([T.Resize(16), T.ToTensor(), T.Normalize((0.5,) * 3, (0.25,) * 3)])
        self.delay_s = delay_s

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        if self.delay_s:
            time.sleep(self.delay_s)
        with open(self.files[index], "rb") as f:
            image = Image.open(f).convert("RGB")
        return self.transform(image), index


def make_dataset(root, delay_s=0.0):
    return JpegUser(root, delay_s)
