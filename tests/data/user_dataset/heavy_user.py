"""The seed-heavy pipeline as a user's own PyTorch Dataset, for benches/worker_kinds.rs:
`dataset: (kind: python, path: ".../heavy_user.py", factory: "make_dataset",
args: {"root": DIR}, collate: Some("make_collate"))`.

mnist_user.py's Dataset over MNIST-format IDX files in `root`, each sample a PIL image
through the ops of loaderbench's heavy pipeline written with torchvision, as a training
script would: rotation within ±30°, elastic deformation (alpha 50, sigma 5), a 5-tap
Gaussian blur with sigma 0.1–2.0, then ToTensor and Normalize.
"""

from torchvision import transforms as T

from mnist_user import MnistUser, make_collate  # noqa: F401 (the preset names it)


def make_dataset(root):
    steps = T.Compose(
        [
            T.RandomRotation(30),
            T.ElasticTransform(alpha=50.0, sigma=5.0),
            T.GaussianBlur(5, sigma=(0.1, 2.0)),
            T.ToTensor(),
            T.Normalize((0.2860,), (0.3530,)),
        ]
    )
    return MnistUser(root, steps, None, 0, False, 0.0)
