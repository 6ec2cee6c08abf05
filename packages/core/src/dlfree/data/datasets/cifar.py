"""CIFAR-10 from its binary version (`cifar-10-batches-bin/*.bin`); the Python version is
pickled, and unpickling can run code, so it is refused."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import numpy as np

from ...io import atomic_write
from .download import download_url
from .images import LabelledImages

RECORD_BYTES = 1 + 3 * 32 * 32  # a label byte, then the red, green and blue 32x32 planes
FOLDER = "cifar-10-batches-bin"


def read_cifar_batch(path: str | os.PathLike, num_classes: int = 10
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The images (uint8, N x 3 x 32 x 32) and labels (int64) of one CIFAR binary batch file.
    A size that is not a whole number of 3,073-byte records, or a label outside
    [0, num_classes), is a ValueError naming the file."""
    path = Path(path)
    raw = path.read_bytes()
    if not raw or len(raw) % RECORD_BYTES:
        raise ValueError(f"{path}: {len(raw)} bytes is not a whole number of CIFAR records "
                         f"({RECORD_BYTES} bytes each: 1 label byte + 3x32x32 pixels); the "
                         "file is truncated or is not a CIFAR-10 binary batch")
    records = np.frombuffer(raw, dtype=np.uint8).reshape(-1, RECORD_BYTES)
    labels = records[:, 0].astype(np.int64)
    if labels.max() >= num_classes:
        bad = int(np.argmax(labels >= num_classes))
        raise ValueError(f"{path}: record {bad} has label {labels[bad]}, expected 0 to "
                         f"{num_classes - 1}; is this a CIFAR-10 binary batch?")
    return records[:, 1:].reshape(-1, 3, 32, 32), labels


class CIFAR10(LabelledImages):
    """CIFAR-10: 50,000 training and 10,000 test colour images of 32x32 in 10 classes.

    `root` holds the binary version's files (`data_batch_1.bin` ... `data_batch_5.bin`,
    `test_batch.bin`), directly or in `cifar-10-batches-bin/`. `download=True` fetches and
    unpacks `cifar-10-binary.tar.gz`, checking its SHA-256. `data` is uint8 (N, 3, 32, 32),
    `targets` int64; an item is `(image, label)` with the image a float32 array
    (3, 32, 32) scaled to [0, 1] and the label an int, passed through `transform` and
    `target_transform` when given.
    """

    url = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
    sha256 = "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"
    train_files = tuple(f"data_batch_{k}.bin" for k in range(1, 6))
    test_files = ("test_batch.bin",)
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
               "truck"]

    def __init__(self, root: str | os.PathLike, train: bool = True, transform=None,
                 target_transform=None, download: bool = False):
        self.root = Path(root)
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        names = self.train_files if train else self.test_files
        folder = self._folder(names, download)
        parts = [read_cifar_batch(folder / name) for name in names]
        self.data = np.concatenate([images for images, _ in parts])
        self.targets = np.concatenate([labels for _, labels in parts])

    def _folder(self, names: tuple[str, ...], download: bool) -> Path:
        for folder in (self.root / FOLDER, self.root):
            if all((folder / name).is_file() for name in names):
                return folder
        for folder in (self.root / "cifar-10-batches-py", self.root):
            if (folder / "data_batch_1").is_file() or (folder / "test_batch").is_file():
                raise ValueError(
                    f"CIFAR10: {folder} holds the Python (pickle) version of CIFAR-10, which "
                    "dl.free does not load because unpickling can run code; use the binary "
                    f"version instead ({self.url}, or download=True)")
        if download:
            archive = download_url(self.url, self.root / "cifar-10-binary.tar.gz", self.sha256)
            _extract_batches(archive, self.root / FOLDER)
            return self.root / FOLDER
        raise FileNotFoundError(f"CIFAR10: {', '.join(names)} not found in {self.root} or "
                                f"{self.root / FOLDER}; put the binary version's files there "
                                "or pass download=True")



def _extract_batches(archive: Path, folder: Path) -> None:
    """Write the regular files of the archive's `cifar-10-batches-bin/` into `folder`, by
    their base names only, so no entry can be written outside it."""
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            parent, _, name = member.name.rpartition("/")
            if member.isfile() and parent.removeprefix("./") == FOLDER and name:
                atomic_write(folder / name, tar.extractfile(member).read())
