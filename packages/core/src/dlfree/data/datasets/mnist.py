"""MNIST and Fashion-MNIST from their IDX files (gzipped or not) in a local folder."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np

from ...errors import CheckpointError
from .download import download_from_mirrors
from .images import LabelledImages

IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dimensions
LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dimension


def _read_bytes(path: Path) -> bytes:
    if path.suffix != ".gz":
        return path.read_bytes()
    try:
        return gzip.decompress(path.read_bytes())
    except gzip.BadGzipFile as e:
        raise CheckpointError(f"{path}: not a gzip file ({e}), although its name ends in "
                              ".gz; delete it and download it again") from None
    except (EOFError, OSError, zlib.error) as e:
        raise CheckpointError(f"{path}: not a complete gzip file ({e}); delete it and "
                              "download it again") from None


def read_idx(path: str | os.PathLike, magic: int) -> np.ndarray:
    """The uint8 array in an IDX file (`.gz` is decompressed). The header must carry
    `magic` (2051 for images, 2049 for labels) and the data must fill exactly the
    dimensions the header gives; otherwise a `CheckpointError` (a ValueError) names the file
    and what is wrong with it."""
    path = Path(path)
    raw = _read_bytes(path)
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    found = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else None
    if found is not None and found != magic:
        kind = {IMAGES_MAGIC: "images", LABELS_MAGIC: "labels"}.get(magic, "IDX")
        raise CheckpointError(f"{path}: magic number {found}, expected {magic} (an IDX {kind} "
                              f"file of unsigned bytes with {ndim} dimension(s)); is this the "
                              "right file?")
    if len(raw) < header:
        raise CheckpointError(f"{path}: {len(raw)} bytes is too short for an IDX header "
                              f"({header} bytes); the file is truncated")
    dims = tuple(int.from_bytes(raw[4 + 4 * k:8 + 4 * k], "big") for k in range(ndim))
    expected = header + int(np.prod(dims))
    if len(raw) != expected:
        raise CheckpointError(f"{path}: {len(raw)} bytes, expected {expected} for the header "
                              f"and {dims} unsigned bytes; the file is truncated or has extra "
                              "data")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


class MNIST(LabelledImages):
    """The MNIST handwritten digits: 60,000 training and 10,000 test images of 28x28.

    `root` is a folder holding `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
    `t10k-images-idx3-ubyte` and `t10k-labels-idx1-ubyte`, each optionally `.gz`
    (torchvision's `root/MNIST/raw` is searched too). `download=True` fetches missing
    files, checking their SHA-256. `data` is the uint8 array (N, 28, 28), `targets` the
    int64 labels; an item is `(image, label)` with the image a float32 array (1, 28, 28)
    scaled to [0, 1] and the label an int, passed through `transform` and
    `target_transform` when given.
    """

    mirrors = ("https://ossci-datasets.s3.amazonaws.com/mnist/",
               "https://storage.googleapis.com/cvdf-datasets/mnist/")
    sha256 = {
        "train-images-idx3-ubyte.gz":
            "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        "train-labels-idx1-ubyte.gz":
            "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        "t10k-images-idx3-ubyte.gz":
            "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        "t10k-labels-idx1-ubyte.gz":
            "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
    }
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root: str | os.PathLike, train: bool = True, transform=None,
                 target_transform=None, download: bool = False):
        self.root = Path(root)
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        prefix = "train" if train else "t10k"
        images_path = self._find(f"{prefix}-images-idx3-ubyte", download)
        labels_path = self._find(f"{prefix}-labels-idx1-ubyte", download)
        self.data = read_idx(images_path, IMAGES_MAGIC)
        self.targets = read_idx(labels_path, LABELS_MAGIC).astype(np.int64)
        if len(self.data) != len(self.targets):
            raise CheckpointError(f"{images_path} has {len(self.data)} images but {labels_path} "
                                  f"has {len(self.targets)} labels; they must come from one "
                                  "release")

    def _find(self, name: str, download: bool) -> Path:
        folders = (self.root, self.root / type(self).__name__ / "raw")
        for folder in folders:
            for candidate in (folder / name, folder / f"{name}.gz"):
                if candidate.is_file():
                    return candidate
        if download:
            return download_from_mirrors(f"{name}.gz", self.mirrors, self.root,
                                         self.sha256[f"{name}.gz"])
        raise FileNotFoundError(f"{type(self).__name__}: {name} (or {name}.gz) is not in "
                                f"{self.root}; put the files there or pass download=True")



class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: 28x28 images of 10 kinds of clothing, in MNIST's file
    format and layout (see MNIST; torchvision's folder is `root/FashionMNIST/raw`)."""

    mirrors = ("https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/"
               "data/fashion/",
               "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/")
    sha256 = {
        "train-images-idx3-ubyte.gz":
            "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        "train-labels-idx1-ubyte.gz":
            "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        "t10k-images-idx3-ubyte.gz":
            "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        "t10k-labels-idx1-ubyte.gz":
            "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
    }
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]
