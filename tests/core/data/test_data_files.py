"""Dataset files: MNIST/Fashion-MNIST IDX and CIFAR-10 binary files written here in their real
formats, damaged files refused with clear errors, checksum-verified downloads over file:// and
a local HTTP server, and scikit-learn's digits."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import sys
import tarfile
import threading

from dlfree import CheckpointError
from dlfree.data import DataLoader
from dlfree.data.datasets import (
    CIFAR10,
    MNIST,
    Digits,
    FashionMNIST,
    download_from_mirrors,
    download_url,
)

import numpy as np
import pytest

from support.idx import idx_bytes, write_mnist


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
def test_mnist_files_load(cls, gz, tmp_path, rng):
    images, labels = write_mnist(tmp_path, rng, "t10k", gz=gz)
    data = cls(tmp_path, train=False)
    assert len(data) == 6 and len(data.classes) == 10
    np.testing.assert_array_equal(data.data, images)
    np.testing.assert_array_equal(data.targets, labels)
    image, label = data[4]
    assert image.dtype == np.float32 and image.shape == (1, 28, 28)
    np.testing.assert_allclose(image[0], images[4] / 255, rtol=1e-6)
    assert label == int(labels[4]) and type(label) is int


def test_mnist_transforms_and_torchvisions_layout(tmp_path, rng):
    images, labels = write_mnist(tmp_path / "MNIST" / "raw", rng)
    data = MNIST(tmp_path, transform=lambda im: im.sum(), target_transform=lambda y: y + 100)
    image, label = data[2]
    assert image == pytest.approx((images[2] / 255).sum(), rel=1e-5)
    assert label == int(labels[2]) + 100
    assert FashionMNIST.classes[9] == "Ankle boot" and MNIST.classes[3] == "3 - three"
    x, y = next(iter(DataLoader(MNIST(tmp_path), batch_size=4)))
    assert tuple(x.shape) == (4, 1, 28, 28) and y.tolist() == labels[:4].tolist()


def test_a_truncated_idx_file_is_refused(tmp_path, rng):
    write_mnist(tmp_path, rng, gz=False)
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(CheckpointError, match=r"train-images-idx3-ubyte: 4710 bytes, expected "
                                              r"4720 for the header and \(6, 28, 28\) unsigned "
                                              r"bytes"):
        MNIST(tmp_path)
    path.write_bytes(path.read_bytes()[:7])
    with pytest.raises(CheckpointError, match="7 bytes is too short for an IDX header"):
        MNIST(tmp_path)


def test_a_truncated_gzip_file_is_refused(tmp_path, rng):
    write_mnist(tmp_path, rng)
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-12])
    with pytest.raises(CheckpointError,
                       match="train-labels-idx1-ubyte.gz: not a complete gzip file"):
        MNIST(tmp_path)


def test_garbage_in_a_gz_file_is_refused(tmp_path, rng):
    write_mnist(tmp_path, rng, prefix="t10k")
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(rng.integers(0, 256, size=300, dtype=np.uint8).tobytes())
    with pytest.raises(CheckpointError, match=r"t10k-images-idx3-ubyte.gz: not a gzip file .*"
                                              r"delete it and download it again"):
        MNIST(tmp_path, train=False)


def test_a_wrong_magic_number_is_refused(tmp_path, rng):
    write_mnist(tmp_path, rng, gz=False)
    images, labels = tmp_path / "train-images-idx3-ubyte", tmp_path / "train-labels-idx1-ubyte"
    swapped = images.read_bytes()
    images.write_bytes(labels.read_bytes())
    with pytest.raises(CheckpointError, match=r"train-images-idx3-ubyte: magic number 2049, "
                                              r"expected 2051 \(an IDX images file"):
        MNIST(tmp_path)
    images.write_bytes(swapped)
    labels.write_bytes(swapped)
    with pytest.raises(CheckpointError, match="magic number 2051, expected 2049"):
        MNIST(tmp_path)


def test_images_and_labels_must_agree_and_files_must_exist(tmp_path, rng):
    write_mnist(tmp_path, rng, gz=False)
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(5, np.uint8)))
    with pytest.raises(CheckpointError, match="has 6 images but .* has 5 labels"):
        MNIST(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"t10k-images-idx3-ubyte \(or "
                                                r"t10k-images-idx3-ubyte.gz\) is not in .*"
                                                r"download=True"):
        MNIST(tmp_path, train=False)


def cifar_records(rng, n):
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    images = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
    raw = np.concatenate([labels[:, None], images.reshape(n, -1)], axis=1).tobytes()
    return images, labels, raw


def write_cifar(folder, rng, n=3):
    folder.mkdir(parents=True, exist_ok=True)
    parts = {}
    for name in [*CIFAR10.train_files, *CIFAR10.test_files]:
        images, labels, raw = cifar_records(rng, n)
        (folder / name).write_bytes(raw)
        parts[name] = images, labels
    return parts


@pytest.mark.parametrize("inside", ["cifar-10-batches-bin", "."])
def test_cifar_binary_batches_load(inside, tmp_path, rng):
    parts = write_cifar(tmp_path / inside, rng)
    train, test = CIFAR10(tmp_path), CIFAR10(tmp_path, train=False)
    assert len(train) == 15 and len(test) == 3
    np.testing.assert_array_equal(train.data, np.concatenate(
        [parts[name][0] for name in CIFAR10.train_files]))
    np.testing.assert_array_equal(test.targets, parts["test_batch.bin"][1])
    image, label = train[7]  # the second record of data_batch_3.bin
    assert image.dtype == np.float32 and image.shape == (3, 32, 32)
    np.testing.assert_allclose(image, parts["data_batch_3.bin"][0][1] / 255, rtol=1e-6)
    assert label == int(parts["data_batch_3.bin"][1][1])
    assert train.classes[0] == "airplane" and len(train.classes) == 10


def test_damaged_cifar_files_are_refused(tmp_path, rng):
    write_cifar(tmp_path, rng)
    path = tmp_path / "data_batch_2.bin"
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match=r"data_batch_2.bin: 9218 bytes is not a whole number "
                                         r"of CIFAR records \(3073 bytes each"):
        CIFAR10(tmp_path)
    raw = bytearray(cifar_records(rng, 2)[2])
    raw[3073] = 12
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="record 1 has label 12, expected 0 to 9"):
        CIFAR10(tmp_path)


def test_the_pickled_python_version_is_refused(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    (folder / "data_batch_1").write_bytes(b"\x80\x04 not going to be unpickled")
    with pytest.raises(ValueError, match="Python \\(pickle\\) version .* unpickling can run "
                                         "code; use the binary version"):
        CIFAR10(tmp_path)
    with pytest.raises(FileNotFoundError, match="test_batch.bin not found"):
        CIFAR10(tmp_path / "cifar-10-batches-py" / "x", train=False)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_download_over_file_urls_checks_the_checksum_and_keeps_nothing_bad(tmp_path):
    source = tmp_path / "source.bin"
    source.write_bytes(b"dataset bytes" * 1000)
    target = tmp_path / "out" / "data.bin"
    assert download_url(source.as_uri(), target, sha256(source.read_bytes())) == target
    assert target.read_bytes() == source.read_bytes()
    source.unlink()  # already there with the right checksum: not fetched again
    assert download_url(source.as_uri(), target, sha256(target.read_bytes())) == target

    source.write_bytes(b"tampered")
    other = tmp_path / "fresh"
    with pytest.raises(ValueError, match=f"SHA-256 of the data is {sha256(b'tampered')}, not "
                                         f"the expected {'0' * 64}; the file was not kept"):
        download_url(source.as_uri(), other / "data.bin", "0" * 64)
    assert list(other.iterdir()) == []  # no partial or temporary file left
    with pytest.raises(ValueError, match="sha256 must be 64 hex digits"):
        download_url(source.as_uri(), other / "data.bin", "abc")


@pytest.fixture
def http_folder(tmp_path):
    """A local HTTP server over a folder; yields (folder, base URL)."""
    folder = tmp_path / "served"
    folder.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_download_over_http_and_a_missing_file(http_folder, tmp_path):
    folder, base = http_folder
    (folder / "a.bin").write_bytes(b"payload")
    target = tmp_path / "got" / "a.bin"
    download_url(base + "a.bin", target, sha256(b"payload"))
    assert target.read_bytes() == b"payload"
    with pytest.raises(OSError, match=r"download http://127.0.0.1:\d+/missing.bin failed"):
        download_url(base + "missing.bin", tmp_path / "got" / "missing.bin", "0" * 64)
    assert sorted(p.name for p in (tmp_path / "got").iterdir()) == ["a.bin"]


def test_mnist_download_tries_the_mirrors_in_turn(http_folder, tmp_path, rng, monkeypatch):
    folder, base = http_folder
    images, labels = write_mnist(folder, rng)
    checksums = {p.name: sha256(p.read_bytes()) for p in folder.iterdir()}
    monkeypatch.setattr(MNIST, "mirrors", (base + "nothing-here/", base))
    monkeypatch.setattr(MNIST, "sha256", checksums)
    data = MNIST(tmp_path / "mnist", download=True)
    np.testing.assert_array_equal(data.targets, labels)
    assert sorted(p.name for p in (tmp_path / "mnist").iterdir()) == sorted(checksums)
    monkeypatch.setattr(MNIST, "mirrors", (base + "nothing-here/",))
    monkeypatch.setattr(MNIST, "sha256", {"t10k-images-idx3-ubyte.gz": "0" * 64})
    with pytest.raises(OSError, match=r"could not download t10k-images-idx3-ubyte.gz from any "
                                      r"mirror.*\n  http://.*nothing-here/t10k-images"):
        MNIST(tmp_path / "mnist", train=False, download=True)


def test_cifar_download_unpacks_only_the_batches_folder(tmp_path, rng, monkeypatch):
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        for name in [*CIFAR10.train_files, *CIFAR10.test_files, "../escape.bin"]:
            raw = cifar_records(rng, 2)[2]
            info = tarfile.TarInfo(f"cifar-10-batches-bin/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    source = tmp_path / "cifar-10-binary.tar.gz"
    source.write_bytes(archive.getvalue())
    monkeypatch.setattr(CIFAR10, "url", source.as_uri())
    monkeypatch.setattr(CIFAR10, "sha256", sha256(archive.getvalue()))
    root = tmp_path / "root"
    assert len(CIFAR10(root, download=True)) == 10
    assert not (tmp_path / "escape.bin").exists() and not (root / "escape.bin").exists()
    assert len(CIFAR10(root, train=False)) == 2


def test_digits_loads_from_scikit_learn():
    from sklearn.datasets import load_digits

    data = Digits()
    reference = load_digits()
    assert data.data.shape == (1797, 8, 8) and data.data.dtype == np.uint8
    np.testing.assert_array_equal(data.targets, reference.target)
    image, label = data[100]
    assert image.shape == (1, 8, 8) and image.dtype == np.float32
    np.testing.assert_allclose(image[0], reference.images[100] / 16, rtol=1e-6)
    assert label == int(reference.target[100]) and data.classes == [str(d) for d in range(10)]


def test_digits_without_scikit_learn_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ModuleNotFoundError, match="needs scikit-learn.*pip install scikit-learn"):
        Digits()


def test_download_from_mirrors_reports_every_failure(tmp_path):
    with pytest.raises(OSError) as info:
        download_from_mirrors("x.bin", [(tmp_path / "a").as_uri() + "/",
                                        (tmp_path / "b").as_uri() + "/"], tmp_path, "1" * 64)
    assert str(info.value).count("\n  file://") == 2
