"""Standard datasets read from their original files: MNIST, Fashion-MNIST, CIFAR-10
(binary version), scikit-learn's digits and tiny-shakespeare; character-level text windows
and a small shipped text; plus checksum-verified downloads."""

from .cifar import CIFAR10, read_cifar_batch
from .digits import Digits
from .download import download_from_mirrors, download_url, file_sha256
from .mnist import MNIST, FashionMNIST, read_idx
from .text import CharText, TinyShakespeare, sonnets

__all__ = ["CIFAR10", "CharText", "Digits", "FashionMNIST", "MNIST", "TinyShakespeare",
           "download_from_mirrors", "download_url", "file_sha256", "read_cifar_batch",
           "read_idx", "sonnets"]
