"""Observer qparams against torch.ao.quantization's observers."""

from dlfree.quantization import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    PerChannelMinMaxObserver,
)

import numpy as np
import pytest
import torch

TORCH_DTYPES = {"qint8": torch.qint8, "quint8": torch.quint8}
TORCH_SCHEMES = {
    "per_tensor_affine": torch.per_tensor_affine,
    "per_tensor_symmetric": torch.per_tensor_symmetric,
}


@pytest.mark.filterwarnings("ignore:Please use quant_min:UserWarning")
@pytest.mark.parametrize("dtype", ["qint8", "quint8"])
@pytest.mark.parametrize("qscheme", ["per_tensor_affine", "per_tensor_symmetric"])
@pytest.mark.parametrize("reduce_range", [False, True])
@pytest.mark.parametrize("shift", [-2.0, 0.3, 3.0])
def test_minmax_qparams_match_torch(dtype, qscheme, reduce_range, shift):
    if reduce_range and dtype == "quint8" and qscheme == "per_tensor_symmetric":
        with pytest.raises(ValueError, match="reduce_range is not supported"):
            MinMaxObserver(dtype=dtype, qscheme=qscheme, reduce_range=True)
        return
    rng = np.random.default_rng(0)
    ours = MinMaxObserver(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range)
    ref = torch.ao.quantization.MinMaxObserver(
        dtype=TORCH_DTYPES[dtype], qscheme=TORCH_SCHEMES[qscheme], reduce_range=reduce_range
    )
    for _ in range(3):
        x = (rng.standard_normal((4, 7)) + shift).astype(np.float32)
        ours(x)
        ref(torch.from_numpy(x))
    scale, zp = ours.calculate_qparams()
    rscale, rzp = ref.calculate_qparams()
    np.testing.assert_allclose(scale, rscale.item(), rtol=1e-6)
    assert int(zp) == int(rzp.item())


def test_minmax_rejects_bad_dtype_and_empty():
    with pytest.raises(ValueError, match="dtype must be one of"):
        MinMaxObserver(dtype="int4")
    with pytest.raises(RuntimeError, match="no data observed"):
        MinMaxObserver().calculate_qparams()


@pytest.mark.filterwarnings("ignore:Please use quant_min:UserWarning")
@pytest.mark.parametrize("dtype", ["qint8", "quint8"])
@pytest.mark.parametrize("qscheme", ["per_tensor_affine", "per_tensor_symmetric"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_moving_average_qparams_match_torch(dtype, qscheme, reduce_range):
    if reduce_range and dtype == "quint8" and qscheme == "per_tensor_symmetric":
        return
    rng = np.random.default_rng(1)
    ours = MovingAverageMinMaxObserver(averaging_constant=0.1, dtype=dtype, qscheme=qscheme,
                                       reduce_range=reduce_range)
    ref = torch.ao.quantization.MovingAverageMinMaxObserver(
        averaging_constant=0.1, dtype=TORCH_DTYPES[dtype], qscheme=TORCH_SCHEMES[qscheme],
        reduce_range=reduce_range,
    )
    for step in range(6):
        x = (rng.standard_normal((8, 5)) * (1 + step) + 0.5).astype(np.float32)
        ours(x)
        ref(torch.from_numpy(x))
    np.testing.assert_allclose(ours.min_val, ref.min_val.item(), rtol=1e-6)
    scale, zp = ours.calculate_qparams()
    rscale, rzp = ref.calculate_qparams()
    np.testing.assert_allclose(scale, rscale.item(), rtol=1e-6)
    assert int(zp) == int(rzp.item())


@pytest.mark.filterwarnings("ignore:Please use quant_min:UserWarning")
@pytest.mark.parametrize("dtype", ["qint8", "quint8"])
@pytest.mark.parametrize("qscheme", ["per_channel_affine", "per_channel_symmetric"])
@pytest.mark.parametrize("reduce_range", [False, True])
@pytest.mark.parametrize("ch_axis", [0, 1, -1])
def test_per_channel_qparams_match_torch(dtype, qscheme, reduce_range, ch_axis):
    if reduce_range and dtype == "quint8" and qscheme == "per_channel_symmetric":
        with pytest.raises(ValueError, match="reduce_range is not supported"):
            PerChannelMinMaxObserver(dtype=dtype, qscheme=qscheme, reduce_range=True)
        return
    rng = np.random.default_rng(2)
    ours = PerChannelMinMaxObserver(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                                    reduce_range=reduce_range)
    ref = torch.ao.quantization.PerChannelMinMaxObserver(
        ch_axis=ch_axis, dtype=TORCH_DTYPES[dtype],
        qscheme={"per_channel_affine": torch.per_channel_affine,
                 "per_channel_symmetric": torch.per_channel_symmetric}[qscheme],
        reduce_range=reduce_range,
    )
    shift = np.array([-2.0, 0.0, 0.4, 3.0], np.float32)
    for _ in range(3):
        x = rng.standard_normal((4, 4, 3, 4)).astype(np.float32) + shift
        ours(x)
        ref(torch.from_numpy(x))
    scale, zp = ours.calculate_qparams()
    rscale, rzp = ref.calculate_qparams()
    np.testing.assert_allclose(scale, rscale.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(zp, rzp.numpy())


def test_observers_reject_bad_arguments():
    with pytest.raises(ValueError, match="qscheme must be one of"):
        PerChannelMinMaxObserver(qscheme="per_tensor_affine")
    with pytest.raises(ValueError, match="averaging_constant must be in"):
        MovingAverageMinMaxObserver(averaging_constant=0.0)
    obs = PerChannelMinMaxObserver(ch_axis=3)
    with pytest.raises(ValueError, match="ch_axis 3 is out of range"):
        obs(np.zeros((2, 2), np.float32))
    obs = PerChannelMinMaxObserver()
    obs(np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="saw 3 channels before, got 2"):
        obs(np.zeros((2, 2), np.float32))
