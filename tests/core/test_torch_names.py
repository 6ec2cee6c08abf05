"""The names ported torch programs reach for: module homes (`dl.utils.data`,
`dl.nn.functional`, `dl.cuda.amp`), dtype aliases, `type`/`new_*`, legacy constructors,
`randint`'s overloads, formatting 0-d tensors, `dl.accelerator`, `dl.backends` flags and
`dl.compile`; each compared with what torch does for the same call."""

from __future__ import annotations

import importlib

import dlfree as dl

import numpy as np
import pytest
import torch


@pytest.mark.parametrize("ours, theirs", [
    ("dlfree.utils.data", "torch.utils.data"), ("dlfree.nn.functional", "torch.nn.functional"),
    ("dlfree.cuda.amp", "torch.cuda.amp"), ("dlfree.nn.utils.rnn", "torch.nn.utils.rnn"),
])
def test_modules_import_under_torch_paths(ours, theirs):
    module, reference = importlib.import_module(ours), importlib.import_module(theirs)
    wanted = {"torch.utils.data": ["DataLoader", "Dataset", "TensorDataset", "random_split"],
              "torch.nn.functional": ["relu", "cross_entropy", "softmax", "linear"],
              "torch.cuda.amp": ["GradScaler", "autocast"],
              "torch.nn.utils.rnn": ["pad_sequence", "pack_padded_sequence",
                                     "pad_packed_sequence", "pack_sequence"]}[theirs]
    for name in wanted:
        assert hasattr(reference, name) and hasattr(module, name), name
    assert importlib.import_module("dlfree.nn.functional") is dl.functional
    assert importlib.import_module("dlfree.utils.data") is dl.data
    assert dl.amp.GradScaler is dl.cuda.amp.GradScaler


@pytest.mark.parametrize("name", ["float", "int", "long", "half", "double", "short", "bool"])
def test_dtype_aliases_are_torchs(name):
    assert getattr(dl, name).name == str(getattr(torch, name)).removeprefix("torch.")


def test_type_and_type_as_and_new_constructors_follow_torch():
    for dtype in ("float32", "float64", "int64", "int32", "uint8", "bool"):
        t, r = dl.zeros(2, dtype=dtype), torch.zeros(2, dtype=getattr(torch, dtype))
        assert t.type() == r.type().replace("torch.", "dlfree.")
        assert t.type("torch.LongTensor").dtype == dl.int64
        assert t.type(dl.float64).dtype == dl.float64
    with pytest.raises(dl.DTypeError, match="unknown tensor type.*FloatTensor"):
        dl.ones(1).type("torch.QuatTensor")
    x, rx = dl.ones(2, dtype=dl.float64), torch.ones(2, dtype=torch.float64)
    for method, args in [("new_zeros", (2, 3)), ("new_ones", ((3,),)), ("new_empty", (4,)),
                         ("new_full", ((2,), 7.0)), ("new_tensor", ([1, 2],))]:
        ours, theirs = getattr(x, method)(*args), getattr(rx, method)(*args)
        assert ours.shape == tuple(theirs.shape) and ours.dtype.name == "float64", method
        if method != "new_empty":
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert x.new_zeros(2, dtype=dl.int32).dtype == dl.int32
    assert dl.zeros(1).type_as(x).dtype == dl.float64


def test_legacy_constructors_and_isinstance():
    assert dl.LongTensor([1, 2]).dtype == dl.int64 and dl.FloatTensor(2, 3).shape == (2, 3)
    np.testing.assert_array_equal(dl.ByteTensor([3]).numpy(), torch.ByteTensor([3]).numpy())
    assert isinstance(dl.ones(2), dl.FloatTensor) and not isinstance(dl.ones(2), dl.LongTensor)
    assert isinstance(torch.ones(2), torch.FloatTensor)  # the behaviour mirrored
    with pytest.raises(TypeError, match="sizes .* or one sequence"):
        dl.FloatTensor([1], [2])


def test_query_functions_and_compile():
    t = dl.ones(2, 3)
    assert dl.is_tensor(t) and not dl.is_tensor(np.ones(2)) and dl.numel(t) == 6
    assert dl.is_floating_point(t) and not dl.is_floating_point(dl.arange(3))
    model = dl.nn.Linear(2, 2)
    assert dl.compile(model) is model and dl.compile(mode="max-autotune")(model) is model
    assert t.pin_memory() is t and not t.is_pinned()


def test_randint_overloads_match_torch_shapes_and_ranges():
    for args in [(10, (3,)), (3, 10, (2, 2)), (5, (0,))]:
        ours, theirs = dl.randint(*args), torch.randint(*args)
        assert ours.shape == tuple(theirs.shape) and ours.dtype == dl.int64
    drawn = dl.randint(3, 6, (2000,)).numpy()
    assert drawn.min() == 3 and drawn.max() == 5
    assert dl.randint(4, size=(2,)).shape == (2,)


@pytest.mark.parametrize("spec", [".4f", "", "e", "8.2f", "+.1%"])
def test_a_0d_tensor_formats_as_torchs_does(spec):
    value = 0.123456
    assert format(dl.tensor(value), spec) == format(torch.tensor(value), spec)
    assert f"{dl.tensor(7):>4}" == f"{torch.tensor(7):>4}"


def test_formatting_a_dimensioned_tensor_with_a_spec_is_refused():
    with pytest.raises(TypeError, match=r"only 0-d tensors"):
        f"{dl.ones(2):.2f}"
    with pytest.raises(TypeError):
        f"{torch.ones(2):.2f}"
    assert f"{dl.ones(2)}" == repr(dl.ones(2))


def test_accelerator_and_backend_flags():
    on_gpu = dl.cuda.is_available()
    assert dl.accelerator.is_available() is on_gpu
    assert (dl.accelerator.current_accelerator() is None) is not on_gpu
    assert dl.accelerator.device_count() == dl.cuda.device_count()
    assert dl.accelerator.current_device_index() == (0 if on_gpu else -1)
    dl.backends.cudnn.benchmark = True
    dl.backends.cuda.matmul.allow_tf32 = True
    assert dl.backends.cudnn.benchmark and dl.backends.cuda.matmul.allow_tf32
    dl.backends.cudnn.benchmark = False
    dl.backends.cuda.matmul.allow_tf32 = False
    assert not dl.backends.mps.is_available()


def test_parameters_vector_round_trip_matches_torch():
    torch.manual_seed(0)
    tm = torch.nn.Linear(3, 2)
    dm = dl.nn.Linear(3, 2)
    dm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    ours = dl.nn.utils.parameters_to_vector(dm.parameters())
    theirs = torch.nn.utils.parameters_to_vector(tm.parameters())
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    dl.nn.utils.vector_to_parameters(dl.arange(8, dtype=dl.float32), dm.parameters())
    torch.nn.utils.vector_to_parameters(torch.arange(8, dtype=torch.float32), tm.parameters())
    np.testing.assert_array_equal(dm.weight.detach().numpy(), tm.weight.detach().numpy())
    with pytest.raises(ValueError, match="vec has 3 elements, the parameters hold 8"):
        dl.nn.utils.vector_to_parameters(dl.ones(3), dm.parameters())
