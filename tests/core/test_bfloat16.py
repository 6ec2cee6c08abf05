"""bfloat16 on the CPU through ml_dtypes, against torch.bfloat16: rounding, promotion, ops
(bfloat16 in, bfloat16 out), autocast, safetensors BF16 both ways, model files; and the
errors without ml_dtypes or on CuPy. bfloat16 holds 8 significant bits, so values are
compared with rtol 2**-7 where the two libraries may round in a different order, and 2**-5
for softmax, which torch computes in float32 and rounds once while it runs here in bfloat16
step by step."""

from __future__ import annotations

import subprocess
import sys

import dlfree as dl

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from support.devices import DEVICES
from support.torch_copy import torch_to_dl

BF16_TOL = {"rtol": 2**-7, "atol": 1e-6}


def _bits(values) -> np.ndarray:
    """The raw 16-bit patterns of a bfloat16 tensor of either library."""
    if isinstance(values, torch.Tensor):
        return values.view(torch.int16).numpy()
    return values.numpy().view(np.int16)


def test_conversion_rounds_as_torch():
    a = np.random.default_rng(0).standard_normal(1000).astype(np.float32) * 100
    a[:4] = [np.inf, -np.inf, 1 + 2**-8, 1 + 3 * 2**-8]  # ties to even both ways
    np.testing.assert_array_equal(_bits(dl.tensor(a).bfloat16()),
                                  _bits(torch.tensor(a).bfloat16()))
    assert dl.tensor(a).to(dl.bfloat16).dtype == dl.bfloat16 == dl.dtypes.as_dtype("bfloat16")
    assert dl.bfloat16.is_floating_point and dl.bfloat16.itemsize == 2


@pytest.mark.parametrize("other", ["float16", "float32", "float64", "int64", "bool", "bfloat16",
                                   1, 2.5, True])
def test_promotion_is_torchs(other):
    ours_b, theirs_b = dl.ones(2, dtype=dl.bfloat16), torch.ones(2, dtype=torch.bfloat16)
    if isinstance(other, str):
        ours_o, theirs_o = dl.ones(2, dtype=other), torch.ones(2, dtype=getattr(torch, other))
    else:
        ours_o = theirs_o = other
    assert str((ours_b + ours_o).dtype).split(".")[1] == str((theirs_b + theirs_o).dtype
                                                             ).split(".")[1]
    zero_d = dl.tensor(1.0, dtype=dl.float64)
    assert (ours_b * zero_d).dtype == dl.bfloat16  # a 0-d tensor of the same kind yields


def test_ops_keep_bfloat16_and_match_torch():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((16, 4))
    x, w = dl.tensor(a).bfloat16().requires_grad_(), dl.tensor(b.astype(np.float32)).bfloat16()
    tx = torch.tensor(a).bfloat16().requires_grad_()
    tw = torch.tensor(b.astype(np.float32)).bfloat16()
    for ours, theirs, rtol in [(x @ w, tx @ tw, 2**-7), (x.exp(), tx.exp(), 2**-7),
                               (x.softmax(-1), tx.softmax(-1), 2**-5),
                               (x.sum(0), tx.sum(0), 2**-7), (x.mean(), tx.mean(), 2**-7)]:
        assert ours.dtype == dl.bfloat16
        np.testing.assert_allclose(ours.float().detach().numpy(),
                                   theirs.float().detach().numpy(), rtol=rtol, atol=1e-6)
    (x @ w).sum().backward()
    (tx @ tw).sum().backward()
    assert x.grad.dtype == dl.bfloat16
    np.testing.assert_allclose(x.grad.float().numpy(), tx.grad.float().numpy(), **BF16_TOL)


def test_autocast_to_bfloat16_matches_torch_cpu_autocast():
    torch.manual_seed(0)
    tm, dm = torch.nn.Linear(6, 3), dl.nn.Linear(6, 3)
    torch_to_dl(tm, dm)
    a = np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32)
    with dl.amp.autocast(dtype=dl.bfloat16):
        ours = dm(dl.tensor(a))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        theirs = tm(torch.tensor(a))
    assert ours.dtype == dl.bfloat16 and theirs.dtype == torch.bfloat16
    np.testing.assert_allclose(ours.float().detach().numpy(), theirs.float().detach().numpy(),
                               rtol=2**-6, atol=2**-7)


def test_safetensors_bf16_both_ways_and_model_files(tmp_path):
    values = torch.tensor([1.5, -2.0, 3.25e10]).bfloat16()
    save_file({"w": values}, tmp_path / "torch.safetensors")
    loaded = dl.load(tmp_path / "torch.safetensors")["w"]
    assert loaded.dtype == dl.bfloat16
    np.testing.assert_array_equal(_bits(loaded), _bits(values))
    dl.save({"w": loaded}, tmp_path / "ours.safetensors")
    assert load_file(tmp_path / "ours.safetensors")["w"].dtype == torch.bfloat16
    model = dl.nn.Linear(2, 2).to(dl.bfloat16)
    dl.save(model, tmp_path / "m")
    assert dl.load(tmp_path / "m").weight.dtype == dl.bfloat16
    assert dl.load(tmp_path / "m", dtype=dl.float32).weight.dtype == dl.float32


def test_without_ml_dtypes_each_use_names_the_extra(tmp_path):
    save_file({"w": torch.ones(1).bfloat16()}, tmp_path / "b.safetensors")
    script = f"""
import sys
sys.modules["ml_dtypes"] = None  # as if it were not installed
import dlfree as dl
for attempt in (lambda: dl.bfloat16, lambda: dl.ones(1).bfloat16(),
                lambda: dl.ones(1).to("bfloat16"), lambda: dl.amp.autocast(dtype="bfloat16"),
                lambda: dl.load({str(tmp_path / "b.safetensors")!r})):
    try:
        attempt()
    except (AttributeError, dl.DTypeError) as e:
        assert "pip install 'dlfree[bfloat16]'" in str(e), e
    else:
        raise SystemExit("no error")
print(dl.ones(1).float().dtype)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "dlfree.float32"


CUPY_REFUSES = (r"bfloat16 tensors live on the CPU only: cupy cannot hold bfloat16; convert "
                r"with \.float\(\) \(float32\) or \.half\(\) \(float16\) before moving to cuda")


def test_the_cuda_backend_declares_that_it_cannot_hold_bfloat16():
    """On the CPU: the declaration, and the refusal it gives before any CuPy import, need no
    GPU (the cupy-device test below moves a real tensor)."""
    from dlfree.backends import CupyBackend, NumpyBackend

    cuda, cpu = CupyBackend(), NumpyBackend()
    assert set(cuda.unheld_dtypes) == {"bfloat16"} and cpu.unheld_dtypes == {}
    for spec in ("bfloat16", dl.bfloat16, dl.bfloat16.np):
        with pytest.raises(dl.DTypeError, match=CUPY_REFUSES):
            cuda.check_dtype(spec)
        cpu.check_dtype(spec)  # the CPU holds it
    for held in (dl.float16, dl.float32, np.dtype("float16"), np.dtype("int64")):
        cuda.check_dtype(held)
    with pytest.raises(dl.DTypeError, match=CUPY_REFUSES):
        cuda.asarray(dl.ones(2).bfloat16().numpy())


@pytest.mark.parametrize("device", [d for d in DEVICES if d.id == "cupy"])
def test_cupy_refuses_bfloat16_clearly(device):
    with pytest.raises(dl.DTypeError, match=CUPY_REFUSES):
        dl.ones(2).bfloat16().to(device)
    with pytest.raises(dl.DTypeError, match=CUPY_REFUSES):
        dl.ones(2, device=device).bfloat16()
    with pytest.raises(dl.DTypeError, match=CUPY_REFUSES):
        dl.zeros(2, dtype=dl.bfloat16, device=device)
    with pytest.raises(dl.DTypeError, match="CPU only"):
        dl.amp.autocast("cuda", dtype=dl.bfloat16)
