"""Parameters as one flat vector and back, as torch.nn.utils (for second-order methods,
flat-vector optimizers and parameter averaging)."""

from __future__ import annotations

from ..autograd import no_grad
from ..ops.shape import cat
from ..tensor import Tensor


def _tensors(parameters, fn: str) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{fn}: parameter {i} is a {type(p).__name__}, not a Tensor")
    return params


def parameters_to_vector(parameters) -> Tensor:
    """The parameters flattened and concatenated, in order (differentiable)."""
    params = _tensors(parameters, "parameters_to_vector")
    if not params:
        raise ValueError("parameters_to_vector: no parameters given")
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise ValueError(f"parameters_to_vector: the parameters are on several devices "
                         f"{sorted(map(str, devices))}; move them to one first")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of `vec` into the parameters, in place."""
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: vec must be a 1-d Tensor, got "
                        f"{getattr(vec, 'shape', type(vec).__name__)}")
    params = _tensors(parameters, "vector_to_parameters")
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise ValueError(f"vector_to_parameters: vec has {vec.numel()} elements, the "
                         f"parameters hold {total}")
    offset = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(p.shape))
            offset += n
