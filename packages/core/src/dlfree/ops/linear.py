"""The functional linear layers: linear (x Wᵀ + b) and bilinear (x1 W x2 + b)."""

from __future__ import annotations

from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor

__all__ = ["linear", "bilinear"]


class Linear(Function):
    """x @ weight.T (+ bias) for a 2-d x: one matrix product forward, two backward."""

    def forward(self, x, weight, *bias):
        need_x, need_w = self.needs_input_grad[:2] if self.needs_input_grad else (False, False)
        self.saves = ((1,) if need_x else ()) + ((0,) if need_w else ())
        out = x @ weight.T
        if bias:
            out += bias[0]
        return out

    def backward(self, g):
        need = self.needs_input_grad
        saved = self.saved_tensors
        weight = saved[0] if need[0] else None
        x = saved[-1] if need[1] else None
        if STATE.enabled:  # recording: the same products as Tensor ops, for double backward
            grads = (g @ weight if need[0] else None, g.T @ x if need[1] else None)
            return grads + ((g.sum(0) if need[2] else None,) if len(need) > 2 else ())
        g = g._data
        grads = (g @ weight._data if need[0] else None, g.T @ x._data if need[1] else None)
        if len(need) > 2:
            # the bias gradient, the column sums of g, as one matrix-vector product: a BLAS
            # call that reads g once, three times faster than a reduction over axis 0
            grads += (self.xp.ones(g.shape[0], dtype=g.dtype) @ g if need[2] else None,)
        return tuple(None if a is None else Tensor._make(a, self.device) for a in grads)


@autocast_policy("lower")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, for weight of shape (out_features, in_features) and input
    of shape (*, in_features)."""
    op = "linear"
    if weight.ndim != 2 or input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} and weight of shape "
                         f"{tuple(weight.shape)} do not fit; valid: weight (out_features, "
                         f"in_features) with in_features the input's last dim")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(f"{op}: bias of shape {tuple(bias.shape)} does not fit weight of shape "
                         f"{tuple(weight.shape)}; valid: ({weight.shape[0]},)")
    params = (weight,) if bias is None else (weight, bias)
    for p in params:
        if p._data.dtype != input._data.dtype:
            raise DTypeError(f"{op}: input is {input.dtype!r} but a parameter is {p.dtype!r}; "
                             "valid: the same floating dtype for all")
    if input.ndim == 2:
        return Linear.apply(input, *params)
    out = Linear.apply(input.reshape(-1, weight.shape[1]), *params)
    return out.reshape(tuple(input.shape[:-1]) + (weight.shape[0],))


@autocast_policy("promote")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """y_o = input1 @ weight[o] @ input2 + bias_o, for weight (out, in1, in2) and inputs
    (*, in1) and (*, in2) with the same leading dims."""
    op = "bilinear"
    if weight.ndim != 3 or input1.ndim == 0 or input2.ndim == 0 or \
            tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]) or \
            (input1.shape[-1], input2.shape[-1]) != tuple(weight.shape[1:]):
        raise ShapeError(f"{op}: input1 {tuple(input1.shape)}, input2 {tuple(input2.shape)} and "
                         f"weight {tuple(weight.shape)} do not fit; valid: inputs (*, in1) and "
                         "(*, in2) with the same leading dims, weight (out, in1, in2)")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(f"{op}: bias of shape {tuple(bias.shape)} does not fit weight of shape "
                         f"{tuple(weight.shape)}; valid: ({weight.shape[0]},)")
    out_f, in1, in2 = weight.shape
    x1, x2 = input1.reshape(-1, in1), input2.reshape(-1, in2)
    # (B, in1) @ (in1, out * in2): every output's bilinear form in one matrix product
    left = (x1 @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    out = (left * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(tuple(input1.shape[:-1]) + (out_f,))
