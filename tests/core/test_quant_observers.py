"""MinMaxObserver qparams against torch.ao.quantization.MinMaxObserver."""

from dlfree.quantization import MinMaxObserver

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
