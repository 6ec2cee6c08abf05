"""Standard datasets read from their original files: MNIST, Fashion-MNIST, CIFAR-10
(binary version), and scikit-learn's digits; plus checksum-verified downloads."""

from .cifar import CIFAR10, read_cifar_batch
from .digits import Digits
from .download import download_from_mirrors, download_url, file_sha256
from .mnist import MNIST, FashionMNIST, read_idx

__all__ = ["CIFAR10", "Digits", "FashionMNIST", "MNIST", "download_from_mirrors",
           "download_url", "file_sha256", "read_cifar_batch", "read_idx"]
