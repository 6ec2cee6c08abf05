"""default_collate and default_convert against torch.utils.data's on the same items, the
one-buffer-per-field batching, and the errors that name the offending field."""

from __future__ import annotations

import collections

import dlfree as dl
from dlfree.data import default_collate, default_convert

import numpy as np
import pytest
import torch
from torch.utils.data import default_collate as torch_collate
from torch.utils.data import default_convert as torch_convert

Point = collections.namedtuple("Point", "xy label")


def assert_same(ours, theirs, where="batch"):
    """Same structure, values and dtypes (strings: ours stay lists, torch may give tuples)."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, dl.Tensor), where
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), where
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=where)
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs), where
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, tuple) and hasattr(theirs, "_fields"):
        assert type(ours) is type(theirs), where
        for name in theirs._fields:
            assert_same(getattr(ours, name), getattr(theirs, name), f"{where}.{name}")
    elif isinstance(theirs, list | tuple) and theirs and isinstance(theirs[0], str | bytes):
        assert ours == list(theirs), where
    elif isinstance(theirs, list | tuple):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, where


def _items(kind: str, rng: np.random.Generator, n: int = 4) -> list:
    if kind == "float32 arrays":
        return [rng.normal(size=(2, 3)).astype(np.float32) for _ in range(n)]
    if kind == "int arrays":
        return [rng.integers(-5, 5, size=(3,)) for _ in range(n)]
    if kind == "uint8 images":
        return [rng.integers(0, 255, size=(1, 4, 4)).astype(np.uint8) for _ in range(n)]
    if kind == "python numbers":
        return [(float(i) / 3, i, i % 2 == 0) for i in range(n)]
    if kind == "numpy scalars":
        return [(np.float32(i / 7), np.int16(i), np.bool_(i > 1)) for i in range(n)]
    if kind == "strings":
        return [(f"id{i}", f"b{i}".encode()) for i in range(n)]
    if kind == "nested":
        return [{"image": rng.normal(size=(2, 2)), "meta": {"name": f"x{i}", "scale": 0.5 * i},
                 "pair": (np.arange(2) + i, [i, i + 1]),
                 "point": Point(rng.normal(size=2).astype(np.float32), i)} for i in range(n)]
    raise AssertionError(kind)


KINDS = ["float32 arrays", "int arrays", "uint8 images", "python numbers", "numpy scalars",
         "strings", "nested"]


@pytest.mark.parametrize("kind", KINDS)
def test_collate_matches_torch(kind, rng):
    items = _items(kind, rng)
    assert_same(default_collate(items), torch_collate(items))


def test_collate_of_tensors_matches_torch(rng):
    arrays = [rng.normal(size=(3, 2)) for _ in range(3)]
    ours = default_collate([(dl.tensor(a), dl.tensor(7)) for a in arrays])
    theirs = torch_collate([(torch.tensor(a), torch.tensor(7)) for a in arrays])
    assert_same(ours, theirs)


def test_mixed_python_numbers_promote_like_torch():
    for items in ([1, 2.5, 3], [True, 2], [2.0, 1]):
        assert_same(default_collate(items), torch_collate(items), str(items))


def test_each_field_is_one_fresh_buffer_not_np_stack(rng, monkeypatch):
    def no_stack(*args, **kwargs):
        raise AssertionError("np.stack copies twice; collate must copy into one buffer")

    monkeypatch.setattr(np, "stack", no_stack)
    items = [rng.normal(size=(2, 3)) for _ in range(5)]
    batch = default_collate(items).numpy()
    assert batch.shape == (5, 2, 3) and batch.flags.c_contiguous
    assert not any(np.shares_memory(batch, item) for item in items)
    np.testing.assert_array_equal(batch, np.array(items))


def test_collate_promotes_dtypes_across_items():
    batch = default_collate([np.zeros(2, np.int32), np.ones(2, np.float32)])
    assert batch.dtype == dl.float64  # numpy's promotion of int32 with float32


@pytest.mark.parametrize("items, error, message", [
    ([{"image": np.zeros((3, 4))}, {"image": np.zeros((3, 4))}, {"image": np.zeros((3, 5))}],
     dl.ShapeError, r"batch\['image'\] has shape \(3, 4\) in item 0 but \(3, 5\) in item 2"),
    ([(np.zeros(2), [np.zeros(1)]), (np.zeros(2), [np.zeros(2)])],
     dl.ShapeError, r"batch\[1\]\[0\] has shape \(1,\) in item 0 but \(2,\) in item 1"),
    ([Point(np.zeros(2), 1), Point(np.zeros(3), 2)],
     dl.ShapeError, r"batch\.xy has shape \(2,\) in item 0 but \(3,\) in item 1"),
    ([(1, 2), (1, 2, 3)], dl.ShapeError, r"batch has 2 elements in item 0 but 3 in item 1"),
    ([{"a": 1}, {"b": 1}], dl.ShapeError, r"keys \['a'\] in item 0 but \['b'\] in item 1"),
    ([{"a": object()}, {"a": object()}], TypeError, r"batch\['a'\] holds a object"),
    ([np.array(["x"]), np.array(["y"])], TypeError, "dtype <U1, which cannot become tensors"),
    ([np.zeros(2), [0.0, 0.0]], TypeError, "a NumPy array in item 0 but a list"),
    ([1, "a"], TypeError, "a number in item 0 but a str in item 1"),
    ([], ValueError, "non-empty list of items"),
])
def test_bad_batches_name_the_field(items, error, message):
    with pytest.raises(error, match=message):
        default_collate(items)


def test_tensors_stay_on_their_device_and_mixed_devices_are_refused(fake_device):
    batch = default_collate([dl.ones(2, device=fake_device), dl.zeros(2, device=fake_device)])
    assert batch.device == fake_device and batch.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    with pytest.raises(dl.DeviceError, match=r"batch is on cpu in item 0 but on datatest:0 in "
                                             r"item 1; move the items to one device"):
        default_collate([dl.zeros(2), dl.zeros(2, device=fake_device)])


def test_mapping_types_are_kept():
    items = [collections.OrderedDict(x=1, y=2.0), collections.OrderedDict(x=3, y=4.0)]
    batch = default_collate(items)
    assert type(batch) is collections.OrderedDict and list(batch) == ["x", "y"]
    counts = collections.defaultdict(int, a=1)
    assert type(default_collate([counts, counts])) is collections.defaultdict


@pytest.mark.parametrize("item", [
    np.arange(6).reshape(2, 3), {"a": np.float32(2.5), "b": "s", "c": 3},
    (np.zeros(2, np.float32), [np.int64(4)]), Point(np.ones(2), 1.5),
])
def test_default_convert_matches_torch(item):
    assert_same(default_convert(item), torch_convert(item))
