"""Normalisation: batch, layer, group, instance, RMS and local-response norms.

Batch, layer, group and instance norm are one `Normalize` Function: (x - mean) * invstd,
then the affine weight and bias, with statistics over some dims of x. Its backward is the
closed form for all three gradients in one pass over arrays; when a graph is being
recorded (`create_graph=True`) the same formula runs on Tensors, so double backward works.
On the CPU, batch norm's statistics, output and gradients are computed per block of
channels, the blocks shared out among the intra-op threads; each channel is computed
whole by one thread in the same way, so the results are the same for any thread count.
Layer norm's rows, and batch norm's channels, run as numba's compiled loops when it is
installed (`backends/numba_kernels.py`), over the same chunks: batch norm then makes two
reading passes for its statistics and one writing pass for its output (no x - mean
array), and two passes for its gradients.
"""

from __future__ import annotations

import math
import numbers

from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE, no_grad
from ..backends import numba_kernels
from ..errors import ShapeError
from ..tensor import Tensor
from ..threads import for_large_blocks, parallel_for
from ..tracing_state import recorded
from .reduction import vector_norm

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
           "local_response_norm", "normalize"]


class Normalize(Function):
    """(x - mean) * invstd * weight + bias, the statistics given as arrays reduced (with
    keepdims) over `stat_dims`.

    Inputs are x, then the weight and the bias when present (`affine` says which), in
    their own shapes; `affine_shape` is how they broadcast against x. With `from_batch`
    the statistics are x's own, so the gradient flows through them (training); otherwise
    they are constants (running statistics). `centered` (x - mean, a temporary the caller
    made while computing the statistics) becomes the output's memory when given.

    Layer norm on the CPU passes mean=None: then x is rows of the normalized size, and
    forward and backward work through blocks of rows that stay in cache (`_layer_norm_rows`),
    computing the statistics on the way.
    """

    @classmethod
    def data_attributes(cls, params: dict) -> list:
        """Running statistics (not `from_batch`) are constants of the model."""
        return super().data_attributes(params) if params["from_batch"] else []

    def forward(self, x, *params, mean, invstd, centered, stat_dims, affine, affine_shape,
                from_batch, eps):
        self.mean, self.invstd, self.stat_dims, self.eps = mean, invstd, stat_dims, eps
        self.affine, self.affine_shape, self.from_batch = affine, affine_shape, from_batch
        self.affine_dims = tuple(i for i, s in enumerate(affine_shape) if s == 1)
        self.saves = (0, 1) if affine[0] else (0,)
        self.param_shape = params[0].shape if params else None
        self.by_rows = mean is None
        if self.by_rows:
            out, self.mean, self.invstd = _layer_norm_rows(
                self.xp, x, self._rows(x), params[0].reshape(-1) if affine[0] else None,
                params[-1].reshape(-1) if affine[1] else None, eps)
            return out
        if centered is None and invstd.shape == affine_shape and x.ndim > 1:
            loops = numba_kernels.kernels_for(self.xp, "fd", x, mean, invstd, *params)
            if loops is not None:  # per-channel statistics, by numba's loop: one pass
                return _channel_apply(self.xp, loops, x, mean, invstd, *params, affine=affine)
        out = x - mean if centered is None else centered
        if affine[0] and invstd.shape == affine_shape:  # per-channel statistics: one pass
            scale = invstd * params[0].reshape(affine_shape)
            shift = params[-1].reshape(affine_shape) if affine[1] else None

            def run(lo: int, hi: int) -> None:
                out[:, lo:hi] *= scale[:, lo:hi]
                if shift is not None:
                    out[:, lo:hi] += shift[:, lo:hi]
            for_large_blocks(self.xp, out.shape[1], out.nbytes, run)
            return out
        out *= invstd
        if affine[0]:
            out *= params[0].reshape(affine_shape)
        if affine[1]:
            out += params[-1].reshape(affine_shape)
        return out

    def backward(self, g):
        saved = self.saved_tensors
        x, weight = saved[0], saved[1] if self.affine[0] else None
        need_x, *need_affine = self.needs_input_grad
        needs = (need_x, self.affine[0] and need_affine[0], self.affine[1] and need_affine[-1])
        if STATE.enabled:  # recording: Tensor ops, with the statistics as functions of x
            gx, gw, gb = self._tensor_grads(g, x, weight, *needs)
        else:
            arrays = self._array_grads(g._data, x._data, None if weight is None else
                                       weight._data, *needs)
            gx, gw, gb = (None if a is None else Tensor._make(a, self.device) for a in arrays)
        return (gx,) + ((gw,) if self.affine[0] else ()) + ((gb,) if self.affine[1] else ())

    def _array_grads(self, g, x, w, need_x, need_w, need_b) -> tuple:
        """The closed form on arrays, in few passes: the sums of g and g * xhat, then one
        expression for grad_x, updated in place. Returns (grad_x, grad_weight, grad_bias)."""
        if self.by_rows:
            gx, gw, gb = _layer_norm_rows_grads(
                self.xp, g, x, self._rows(x), None if w is None else w.reshape(-1), self.mean,
                self.invstd, need_x, need_w, need_b)
            return gx, self._param_grad(gw, need_w), self._param_grad(gb, need_b)
        xp, stat, affine = self.xp, self.stat_dims, self.affine_dims
        invstd = self.invstd
        w = None if w is None else w.reshape(self.affine_shape)
        per_channel = self.from_batch and affine == stat  # batch norm: reuse the affine sums
        if per_channel and stat == (0, *range(2, x.ndim)) and need_x and xp.__name__ == "numpy":
            return self._channel_grads(g, x, w, need_w, need_b)
        if need_w or (need_x and self.from_batch):
            xhat = x - self.mean
            xhat *= invstd
        gw = _dot_sum(xp, g, xhat, affine) if need_w or (need_x and per_channel) else None
        gb = g.sum(axis=affine, keepdims=True) if need_b or (need_x and per_channel) else None
        if not need_x:
            return None, self._param_grad(gw, need_w), self._param_grad(gb, need_b)
        n = max(_count(x.shape, stat), 1)
        if not self.from_batch:
            gx = g * (invstd if w is None else invstd * w)
        elif per_channel:
            xhat *= gw / n
            gx = g - gb / n
            gx -= xhat
            gx *= invstd if w is None else invstd * w
        else:
            gx = g.copy() if w is None else g * w  # d loss / d xhat, then grad_x in place
            xhat *= _dot_sum(xp, gx, xhat, stat) / n
            gx -= gx.sum(axis=stat, keepdims=True) / n
            gx -= xhat
            gx *= invstd
        return gx, self._param_grad(gw, need_w), self._param_grad(gb, need_b)

    def _channel_grads(self, g, x, w, need_w, need_b) -> tuple:
        """Batch norm's three gradients on NumPy (training, one mean and invstd per
        channel), per block of channels (see the module docstring)."""
        xp, n = self.xp, max(_count(x.shape, self.stat_dims), 1)
        gx = xp.empty(x.shape, x.dtype)
        gw, gb = xp.empty(self.invstd.shape, x.dtype), xp.empty(self.invstd.shape, x.dtype)
        scale = self.invstd if w is None else self.invstd * w
        loops = numba_kernels.kernels_for(xp, "fd", g, x, self.mean, scale)
        g, x, out3 = _channel_rows(g), _channel_rows(x), _channel_rows(gx)
        if loops is not None:
            mean, invstd = self.mean.reshape(-1), self.invstd.reshape(-1)
            scale, gw1, gb1 = scale.reshape(-1), gw.reshape(-1), gb.reshape(-1)

            def fused(lo: int, hi: int) -> None:
                loops.batch_norm_grads(g, x, mean, invstd, scale, out3, gw1, gb1, lo, hi)
            for_large_blocks(xp, x.shape[1], x.nbytes, fused)
            return gx, self._param_grad(gw, need_w), self._param_grad(gb, need_b)
        mean, invstd, scale = _channel_rows(self.mean), _channel_rows(self.invstd), \
            _channel_rows(scale)
        gw3, gb3 = _channel_rows(gw), _channel_rows(gb)

        def run(lo: int, hi: int) -> None:
            c = slice(lo, hi)
            gc, out = g[:, c], out3[:, c]
            xhat = x[:, c] - mean[:, c]
            xhat *= invstd[:, c]
            gw3[:, c] = _channel_sums(xp, gc, xhat)
            gb3[:, c] = _channel_sums(xp, gc)
            xhat *= gw3[:, c] / n
            xp.subtract(gc, gb3[:, c] / n, out=out)
            out -= xhat
            out *= scale[:, c]
        for_large_blocks(xp, x.shape[1], x.nbytes, run)
        return gx, self._param_grad(gw, need_w), self._param_grad(gb, need_b)

    def _tensor_grads(self, g, x, weight, need_x, need_w, need_b) -> tuple:
        """The same closed form with Tensor ops (differentiable in g, x and the weight)."""
        stat, affine = self.stat_dims, self.affine_dims
        if self.from_batch:
            centered = x - x.mean(dim=stat, keepdim=True)
            invstd = ((centered * centered).mean(dim=stat, keepdim=True) + self.eps).rsqrt()
        else:
            centered = x - Tensor._make(self.mean, self.device)
            invstd = Tensor._make(self.invstd, self.device)
        xhat = centered * invstd
        gw = (g * xhat).sum(dim=affine, keepdim=True) if need_w else None
        gb = g.sum(dim=affine, keepdim=True) if need_b else None
        if not need_x:
            return None, self._param_grad(gw, need_w), self._param_grad(gb, need_b)
        dxhat = g if weight is None else g * weight.reshape(self.affine_shape)
        if self.from_batch:
            dxhat = (dxhat - dxhat.mean(dim=stat, keepdim=True)
                     - xhat * (dxhat * xhat).mean(dim=stat, keepdim=True))
        return (dxhat * invstd, self._param_grad(gw, need_w), self._param_grad(gb, need_b))

    def _rows(self, x) -> tuple:
        """The 2-d shape of `x` with one row per normalized slice."""
        lead = x.ndim - len(self.stat_dims)
        return math.prod(x.shape[:lead]), math.prod(x.shape[lead:])

    def _param_grad(self, grad, needed: bool):
        """A weight or bias gradient (summed with keepdims) in the parameter's own shape."""
        return grad.reshape(self.param_shape) if needed else None


# elements per block of rows: a block of x, of the output and two scratch blocks fit in L2
_BLOCK = 65536
# a thread takes at least this many blocks: less work than that is not worth a thread
_BLOCKS_PER_THREAD = 4


def _row_blocks(rows: int, size: int):
    """Slices of consecutive rows, about _BLOCK elements each."""
    step = max(1, _BLOCK // max(size, 1))
    return [slice(i, min(i + step, rows)) for i in range(0, rows, step)]


def _layer_norm_rows(xp, x, shape: tuple, w, b, eps: float) -> tuple:
    """Each row of `x` seen in 2-d `shape` normalised, times `w` plus `b` (either may be
    None): returns (output in x's shape, mean, invstd), the last two one value per row. The
    blocks of rows are shared out among the intra-op threads."""
    rows, size = shape
    result = xp.empty(x.shape, x.dtype)
    x, out = x.reshape(shape), result.reshape(shape)
    mean, invstd = xp.empty(rows, x.dtype), xp.empty(rows, x.dtype)
    ones = xp.ones(size, x.dtype)
    blocks = _row_blocks(rows, size)
    loops = None if x.size == 0 else numba_kernels.kernels_for(xp, "fd", x, w, b)

    def run(first: int, last: int) -> None:
        if loops is not None:
            r = slice(blocks[first].start, blocks[last - 1].stop)
            loops.layer_norm_rows(x[r], ones if w is None else w, xp.zeros_like(ones)
                                  if b is None else b, x.dtype.type(eps), out[r], mean[r],
                                  invstd[r])
            return
        for r in blocks[first:last]:
            xb, ob, mb, ib = x[r], out[r], mean[r], invstd[r]
            xp.vecdot(xb, ones, out=mb)  # row sums as dot products: one SIMD pass
            mb *= 1 / max(size, 1)
            xp.subtract(xb, mb[:, None], out=ob)
            xp.vecdot(ob, ob, out=ib)
            # 1 / sqrt(sum / size + eps), as sqrt(size) / sqrt(sum + size * eps)
            ib += size * eps
            xp.sqrt(ib, out=ib)
            xp.divide(math.sqrt(size), ib, out=ib)
            ob *= ib[:, None]
            if w is not None:
                ob *= w
            if b is not None:
                ob += b

    parallel_for(len(blocks), run, min_chunk=_BLOCKS_PER_THREAD)
    return result, mean, invstd


def _layer_norm_rows_grads(xp, g, x, shape: tuple, w, mean, invstd, need_x, need_w,
                           need_b) -> tuple:
    """(grad_x, grad_w, grad_b) of `_layer_norm_rows` for output gradient `g`, each None
    where not needed, in one pass over the blocks of rows (grad_x in x's shape). The blocks
    are shared out among the intra-op threads, each summing its own part of grad_w and
    grad_b, which are added up at the end.

    With c = x - mean, a = invstd and n the row size, per row:
    grad_x = a * g * w - a * sum(g * w) / n - a**3 * sum(g * w * c) / n * c.
    """
    rows, size = shape
    gx = xp.empty(x.shape, x.dtype) if need_x else None
    g, x, gx_rows = g.reshape(shape), x.reshape(shape), None if gx is None else gx.reshape(shape)
    blocks = _row_blocks(rows, size)
    block_rows = blocks[0].stop if blocks else 0
    scale = -1 / max(size, 1)
    parts: dict = {}  # first block of a chunk -> that chunk's (grad_w, grad_b) sums

    loops = None if x.size == 0 else numba_kernels.kernels_for(xp, "fd", x, g, w)

    def run(first: int, last: int) -> None:
        gw = xp.zeros(size, x.dtype) if need_w else None
        gb = xp.zeros(size, x.dtype) if need_b else None
        if loops is not None:
            r = slice(blocks[first].start, blocks[last - 1].stop)
            unused = xp.empty(0, x.dtype)
            loops.layer_norm_rows_grads(
                g[r], x[r], xp.ones(size, x.dtype) if w is None else w, mean[r], invstd[r],
                unused.reshape(0, 0) if gx_rows is None else gx_rows[r],
                unused if gw is None else gw, unused if gb is None else gb, need_x, need_w,
                need_b)
            parts[first] = gw, gb
            return
        centered, product = (xp.empty((block_rows, size), x.dtype) for _ in range(2))
        column = xp.empty(size, x.dtype)
        for r in blocks[first:last]:
            gr, a, k = g[r], invstd[r], r.stop - r.start
            c, gc = centered[:k], product[:k]
            xp.subtract(x[r], mean[r][:, None], out=c)
            if need_b:
                xp.add.reduce(gr, axis=0, out=column)
                gb += column
            if not (need_w or need_x):
                continue
            xp.multiply(gr, c, out=gc)
            if need_w:
                xp.matmul(a, gc, out=column)  # sum over rows of g * c * a: g * xhat
                gw += column
            if not need_x:
                continue
            gwc, gw_sum = (xp.vecdot(gc, w), xp.vecdot(gr, w)) if w is not None else \
                (xp.add.reduce(gc, axis=1), xp.add.reduce(gr, axis=1))
            out = gx_rows[r]
            if w is None:
                xp.multiply(gr, a[:, None], out=out)
            else:
                xp.multiply(gr, w, out=out)
                out *= a[:, None]
            c *= (a * a * a * gwc * scale)[:, None]
            out += c
            out += (a * gw_sum * scale)[:, None]
        parts[first] = gw, gb

    parallel_for(len(blocks), run, min_chunk=_BLOCKS_PER_THREAD, products=True)
    # added in the order of the rows, so that a run gives the same sums every time
    ordered = [parts[k] for k in sorted(parts)]
    gw = _added(xp, [p[0] for p in ordered], size, x.dtype) if need_w else None
    gb = _added(xp, [p[1] for p in ordered], size, x.dtype) if need_b else None
    return gx, gw, gb


def _added(xp, arrays: list, size: int, dtype):
    """The sum of the (size,) `arrays`, zeros when there are none."""
    total = xp.zeros(size, dtype)
    for a in arrays:
        total += a
    return total


def _dot_sum(xp, a, b, dims: tuple):
    """sum(a * b) over `dims` (keepdims) in one pass, without the product array."""
    letters = "abcdefghijklmnopqrstuvwxyz"[:a.ndim]
    kept = "".join(c for i, c in enumerate(letters) if i not in dims)
    out = xp.einsum(f"{letters},{letters}->{kept}", a, b)
    return out.reshape(tuple(1 if i in dims else s for i, s in enumerate(a.shape)))


def _count(shape: tuple, dims: tuple) -> int:
    return math.prod(shape[d] for d in dims)


def _channel_rows(a):
    """(N, C, *) `a` as (N, C, L), or a (1, C, 1, ...) statistic as (1, C, 1): every
    channel's block then has one shape, so its sums run in one order whatever the block."""
    return a.reshape(a.shape[0], a.shape[1], math.prod(a.shape[2:]))


def _channel_sums(xp, a, b=None):
    """sum(a), or sum(a * b), per channel of (N, k, L) arrays, as (1, k, 1): over L for
    each row, then over N, each a dot product of contiguous rows, so that a channel's sum
    runs in one order whatever block it is in."""
    ones = xp.ones(a.shape[2], a.dtype)
    rows = xp.empty((a.shape[1], a.shape[0]), a.dtype)  # (k, N), each channel's row in one piece
    xp.vecdot(a.transpose(1, 0, 2), ones if b is None else b.transpose(1, 0, 2), out=rows)
    return xp.vecdot(rows, xp.ones(a.shape[0], a.dtype))[None, :, None]


def _channel_apply(xp, loops, x, mean, invstd, *params, affine: tuple):
    """(x - mean) · invstd · weight + bias with one mean and invstd per channel (dim 1)
    of NumPy array `x`, in one pass by numba's loop, per block of channels."""
    c = x.shape[1]
    scale = invstd.reshape(c) * params[0].reshape(c) if affine[0] else invstd.reshape(c)
    shift = params[-1].reshape(c) if affine[1] else xp.zeros(c, x.dtype)
    out = xp.empty(x.shape, x.dtype)
    x3, out3, mean = _channel_rows(x), _channel_rows(out), mean.reshape(c)

    def run(lo: int, hi: int) -> None:
        loops.batch_norm_apply(x3, mean, scale, shift, out3, lo, hi)
    for_large_blocks(xp, c, x.nbytes, run)
    return out


def _channel_moments(xp, x, eps: float) -> tuple:
    """`_moments` over every dim but the channels (dim 1) of NumPy array `x`, per block
    of channels; with numba's loops, without x - mean (returned as None)."""
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    loops = numba_kernels.kernels_for(xp, "fd", x)
    if loops is not None:
        mean, var, x3 = xp.empty(x.shape[1], x.dtype), xp.empty(x.shape[1], x.dtype), \
            _channel_rows(x)

        def moments(lo: int, hi: int) -> None:
            loops.batch_norm_moments(x3, mean, var, lo, hi)
        for_large_blocks(xp, x.shape[1], x.nbytes, moments)
        mean, var = mean.reshape(shape), var.reshape(shape)
        return mean, var, 1 / xp.sqrt(var + x.dtype.type(eps)), None
    mean, var, centered = xp.empty(shape, x.dtype), xp.empty(shape, x.dtype), xp.empty_like(x)
    count = max(x.size // max(x.shape[1], 1), 1)
    x3, mean3, var3, centered3 = (_channel_rows(a) for a in (x, mean, var, centered))

    def run(lo: int, hi: int) -> None:
        m, c = mean3[:, lo:hi], centered3[:, lo:hi]
        xp.divide(_channel_sums(xp, x3[:, lo:hi]), count, out=m)
        xp.subtract(x3[:, lo:hi], m, out=c)
        var3[:, lo:hi] = _channel_sums(xp, c, c) / count
    for_large_blocks(xp, x.shape[1], x.nbytes, run)
    return mean, var, 1 / xp.sqrt(var + x.dtype.type(eps)), centered


def _moments(xp, x, dims: tuple, eps: float) -> tuple:
    """Mean, biased variance, 1/sqrt(var + eps) (keepdims) and x - mean, for array `x`."""
    mean = x.mean(axis=dims, keepdims=True)
    centered = x - mean
    var = _dot_sum(xp, centered, centered, dims) / max(_count(x.shape, dims), 1)
    return mean, var, 1 / xp.sqrt(var + x.dtype.type(eps)), centered


def _normalize(input: Tensor, weight, bias, *, mean, invstd, stat_dims, affine_shape,
               from_batch, eps, centered=None) -> Tensor:
    params = [p for p in (weight, bias) if p is not None]
    return Normalize.apply(input, *params, mean=mean, invstd=invstd, centered=centered,
                           stat_dims=stat_dims, affine=(weight is not None, bias is not None),
                           affine_shape=affine_shape, from_batch=from_batch, eps=eps)


def _check_param(t, name: str, expected: tuple, op: str, what: str) -> None:
    if t is not None and tuple(t.shape) != expected:
        raise ShapeError(f"{op}: {name} of shape {tuple(t.shape)} does not fit; valid: shape "
                         f"{expected} ({what})")


def _check_channels(input: Tensor, op: str) -> int:
    if input.ndim < 2:
        raise ShapeError(f"{op}: expected an input of shape (N, C, *) with at least 2 dims, got "
                         f"shape {tuple(input.shape)}")
    return input.shape[1]


def _update_running(running: Tensor | None, batch_value, momentum: float) -> None:
    """running = (1 - momentum) * running + momentum * batch_value, in place (as torch)."""
    if running is None:
        return
    value = Tensor._make(batch_value.reshape(running.shape).astype(running._data.dtype),
                         running._device)
    with no_grad():
        running.copy_(running * (1 - momentum) + value * momentum)


# ------------------------------------------------------------------- batch norm
# the running statistics are updated in place: autocast never casts them
@recorded
@autocast_policy("float32", exclude=("running_mean", "running_var"))
def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) of an (N, C, *) input over the batch and the rest.

    In training the batch statistics are used, and `running_mean`/`running_var` (when
    given) move toward them by `momentum` in place, the variance unbiased as in torch.
    Otherwise the running statistics normalise.
    """
    op = "batch_norm"
    c = _check_channels(input, op)
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_param(t, name, (c,), op, f"one value per channel of input {tuple(input.shape)}")
    stat_dims = (0,) + tuple(range(2, input.ndim))
    affine_shape = (1, c) + (1,) * (input.ndim - 2)
    n = _count(input.shape, stat_dims)
    centered = None
    if training:
        if n == 1:
            raise ValueError(f"{op}: expected more than 1 value per channel when training, got "
                             f"input of shape {tuple(input.shape)}")
        if n == 0:  # an empty batch: nothing to normalise, and the running stats stay
            xp = input._device.xp
            mean = xp.zeros(affine_shape, input._data.dtype)
            invstd = xp.ones(affine_shape, input._data.dtype)
        else:
            xp = input._device.xp
            mean, var, invstd, centered = _channel_moments(xp, input._data, eps) \
                if xp.__name__ == "numpy" else _moments(xp, input._data, stat_dims, eps)
            _update_running(running_mean, mean, momentum)
            _update_running(running_var, var * (n / (n - 1)), momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError(f"{op}: running_mean and running_var are needed when "
                             "training=False; pass them, or training=True to use batch statistics")
        mean = running_mean._data.reshape(affine_shape).astype(input._data.dtype, copy=False)
        var = running_var._data.reshape(affine_shape).astype(input._data.dtype, copy=False)
        invstd = 1 / input._device.xp.sqrt(var + var.dtype.type(eps))
    return _normalize(input, weight, bias, mean=mean, invstd=invstd, stat_dims=stat_dims,
                      affine_shape=affine_shape, from_batch=training, eps=eps,
                      centered=centered)


# ------------------------------------------------------------------- layer norm
def _normalized_dims(input: Tensor, normalized_shape, op: str) -> tuple:
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else \
        tuple(normalized_shape)
    k = len(shape)
    if k == 0 or k > input.ndim or tuple(input.shape[input.ndim - k:]) != shape:
        raise ShapeError(f"{op}: normalized_shape {shape} does not match the input of shape "
                         f"{tuple(input.shape)}; valid: its last dims, e.g. "
                         f"{tuple(input.shape[-1:])}")
    return shape, tuple(range(input.ndim - k, input.ndim))


@recorded
@autocast_policy("float32")
def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the last dims (`normalized_shape`), each sample on its own."""
    op = "layer_norm"
    shape, dims = _normalized_dims(input, normalized_shape, op)
    _check_param(weight, "weight", shape, op, "normalized_shape")
    _check_param(bias, "bias", shape, op, "normalized_shape")
    mean = invstd = centered = None  # on the CPU, computed by Normalize in blocks of rows
    if input._device.type != "cpu":
        mean, _, invstd, centered = _moments(input._device.xp, input._data, dims, eps)
    return _normalize(input, weight, bias, mean=mean, invstd=invstd, stat_dims=dims,
                      affine_shape=(1,) * (input.ndim - len(shape)) + shape, from_batch=True,
                      eps=eps, centered=centered)


@autocast_policy("float32")
def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x**2) + eps) over the last dims (`normalized_shape`), times `weight`;
    `eps` defaults to the machine epsilon of the input's dtype, as in torch."""
    op = "rms_norm"
    shape, dims = _normalized_dims(input, normalized_shape, op)
    _check_param(weight, "weight", shape, op, "normalized_shape")
    if eps is None:
        eps = float(input._device.xp.finfo(input._data.dtype).eps)
    out = input * ((input * input).mean(dim=dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


# ------------------------------------------------------------ group and instance
@recorded
@autocast_policy("float32")
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise each group of C / num_groups channels of an (N, C, *) input per sample."""
    op = "group_norm"
    c = _check_channels(input, op)
    if num_groups <= 0 or c % num_groups:
        raise ShapeError(f"{op}: the {c} channels of input {tuple(input.shape)} are not "
                         f"divisible into num_groups={num_groups}; valid: a divisor of {c}")
    _check_param(weight, "weight", (c,), op, "one value per channel")
    _check_param(bias, "bias", (c,), op, "one value per channel")
    n, spatial = input.shape[0], tuple(input.shape[2:])
    grouped = input.reshape(n, num_groups, c // num_groups, math.prod(spatial))
    mean, _, invstd, centered = _moments(input._device.xp, grouped._data, (2, 3), eps)
    out = _normalize(grouped, weight, bias, mean=mean, invstd=invstd, stat_dims=(2, 3),
                     affine_shape=(1, num_groups, c // num_groups, 1), from_batch=True, eps=eps,
                     centered=centered)
    return out.reshape((n, c) + spatial)


@recorded
def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample of an (N, C, *) input over its spatial dims.

    With `use_input_stats` the running statistics (when given) move toward the batch
    average of the per-sample statistics; without it they normalise instead.
    """
    op = "instance_norm"
    c = _check_channels(input, op)
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_param(t, name, (c,), op, "one value per channel")
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    stat_dims = tuple(range(2, input.ndim))
    n = _count(input.shape, stat_dims)
    if n <= 1:
        raise ValueError(f"{op}: expected more than 1 spatial element when training, got "
                         f"input of shape {tuple(input.shape)}")
    mean, var, invstd, centered = _moments(input._device.xp, input._data, stat_dims, eps)
    if input.shape[0]:
        _update_running(running_mean, mean.mean(axis=0), momentum)
        _update_running(running_var, (var * (n / (n - 1))).mean(axis=0), momentum)
    return _normalize(input, weight, bias, mean=mean, invstd=invstd, stat_dims=stat_dims,
                      affine_shape=(1, c) + (1,) * len(stat_dims), from_batch=True, eps=eps,
                      centered=centered)


# ------------------------------------------------------------- other normalisers
def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x**2 over `size` neighbouring channels) ** beta.

    The window around channel c spans channels c - size//2 to c + (size-1)//2, zero-padded,
    and always divides by `size`, as torch's average pooling does.
    """
    op = "local_response_norm"
    if input.ndim < 3:
        raise ShapeError(f"{op}: expected an input of 3 or more dims (N, C, *), got shape "
                         f"{tuple(input.shape)}")
    if size < 1:
        raise ValueError(f"{op}: size must be a positive integer, got {size}")
    xp = input._device.xp
    ch = xp.arange(input.shape[1])
    offset = ch[:, None] - ch[None, :]  # source channel minus target channel
    band = (offset >= -(size // 2)) & (offset <= (size - 1) // 2)
    window = Tensor._make(band.astype(input._data.dtype), input._device)
    summed = ((input * input).movedim(1, -1) @ window).movedim(-1, 1)
    return input / (summed * (alpha / size) + k) ** beta


@autocast_policy("float32", exclude=("out",))
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """x divided by its p-norm along `dim`, the norm clamped below at `eps`."""
    result = input / vector_norm(input, p, dim, keepdim=True).clamp(min=eps)
    return result if out is None else out.copy_(result)
