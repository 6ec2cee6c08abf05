"""Scaled dot-product attention, softmax(q kᵀ · scale + mask) v, over all heads at once."""

from __future__ import annotations

import functools
import math

from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..creation import rand
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ..threads import for_blocks
from ..tracing_state import recorded
from ._util import sum_to
from .elementwise import where
from .shape import broadcast_shapes

__all__ = ["scaled_dot_product_attention"]


class Attention(Function):
    """Attention over the last two dims, all heads in batched matmuls, in cache blocks.

    Inputs are query (..., L, E), key (..., S, E), value (..., S, Ev) and, optionally, a
    float mask added to the scores (it gets a gradient). `bias` is a constant additive mask
    (0 or -inf: causal and boolean masks), `causal` says it is the causal one, `dropout`
    the kept-and-rescaled mask applied to the attention weights, and `groups` how many
    query heads share one key/value head. Rows masked out entirely give zeros, as in torch.

    On the CPU, forward runs over blocks of the first batch dim holding about _BLOCK_BYTES
    of scores each (`_batch_blocks`), so that the scores stay in cache from the product with
    K through the softmax to the product with V; the blocks are independent and go to the
    intra-op threads (dlfree.threads). Within a block, K is transposed and scaled once
    (`_scaled_operands`), a bool mask over keys alone (padding) lets the block skip the keys
    after the last one it may see, and without grad or dropout the rows are divided by their
    sums after the product with V rather than before.

    Under a causal mask the first half of the query rows sees only the first half of the
    keys, so each half is computed over the keys it can see (a quarter less work). Backward
    is fused on arrays: dV = Pᵀ dO, dS = P ⊙ (dO Vᵀ − rowsum(dO ⊙ O)), dQ = dS K·scale,
    dK = dSᵀ Q·scale; under create_graph the same formulas run as Tensor ops.

    Products are written straight into their results (no concatenation, no zero-filled
    accumulators), and each result takes the memory layout of the input it belongs to: for
    heads split from one projection, `x.view(B, L, H, E).transpose(1, 2)`, the output and
    the gradients are laid out as (B, L, H, E) too, so that transposing back and merging
    the heads is a view, not a copy (torch's CPU kernel does the same for its output).
    """

    saves = (0, 1, 2)
    save_output = True

    def forward(self, q, k, v, *mask, scale, bias, causal, dropout, groups):
        xp = self.xp
        if mask:
            self.saves = (0, 1, 2, 3)
        k, v = _repeat_heads(xp, k, groups), _repeat_heads(xp, v, groups)
        spans = _spans(q.shape[-2], k.shape[-2], causal)
        extras = [e for e in (bias, *mask) if e is not None]
        batch = tuple(broadcast_shapes(*[a.shape[:-2] for a in (q, k, v, *extras)]))
        score_batch = tuple(broadcast_shapes(*[a.shape[:-2] for a in (q, k, *extras)]))
        out = _empty_like_layout(xp, q, batch + (q.shape[-2], v.shape[-1]))
        keep = bool(self.needs_input_grad)
        # the probabilities are only needed normalised for backward or dropout; otherwise
        # the product with V is divided by the row sums, a pass over (L, Ev), not (L, S)
        late = not keep and dropout is None
        probs = [xp.empty(score_batch + (_length(rows, q.shape[-2]), keys), q.dtype)
                 for rows, keys in spans] if keep else None
        # on a GPU one block, without the host round trip that finding the seen keys takes
        on_cpu = self.device.type == "cpu"
        blocks = _batch_blocks(batch, score_batch, q.shape[-2] * k.shape[-2] * q.itemsize) \
            if on_cpu else [(None, None)]
        # a bool mask over keys alone (padding): each block skips the keys after the last
        # one it may see, whose weights are exactly 0 (attention over unpadded lengths)
        key_mask = on_cpu and bias is not None and not causal and bias.shape[-2] == 1
        seen = [k.shape[-2]] * len(blocks)  # per block: the keys it computes with
        limit = _exp_limit(xp, q.dtype, k.shape[-2])
        dead = []

        def compute(first: int, last: int) -> None:
            for index in range(first, last):
                lo, hi = blocks[index]
                part = functools.partial(_block, lo=lo, hi=hi, batch_dims=len(batch))
                qb, vb, ob, extras_b = part(q), part(v), part(out), [part(e) for e in extras]
                qb, keys_t = _scaled_operands(xp, qb, part(k), scale)
                bound = math.inf if mask else _score_bound(xp, qb, keys_t)
                bounded = bound <= limit
                # dividing after the product with V must not let that product overflow;
                # with the row max subtracted the weights are at most e^0
                divide_late = late and _products_fit(xp, vb, bound if bounded else 0.0,
                                                     k.shape[-2])
                if key_mask:
                    seen[index] = _seen_keys(xp, part(bias))
                for i, (rows, keys) in enumerate(spans):
                    keys = min(keys, seen[index])
                    scores = qb[..., rows, :] @ keys_t[..., :keys]
                    for extra in extras_b:
                        scores = _add(scores, extra[..., rows, :keys] if causal else
                                      extra[..., :keys])
                    p, d, total = _softmax(xp, scores, bool(extras), bounded,
                                           normalize=not divide_late)
                    kept = p if dropout is None else p * part(dropout)[..., rows, :keys]
                    out_rows = ob[..., rows, :]
                    xp.matmul(kept, vb[..., :keys, :], out=out_rows)
                    if divide_late:
                        out_rows /= total
                    if keep:
                        stored = part(probs[i])
                        stored[..., :keys] = p
                        stored[..., keys:] = 0
                    if i == 0 and d is not None:
                        dead.append((lo, hi, d))

        for_blocks(self.device, len(blocks), compute, products=True)
        if keep:
            # only the first span can have dead rows: every causal row sees its first key
            self.spans, self.probs, self.scale = spans, probs, scale
            self.blocks, self.seen = blocks, seen
            self.dead = _gather_dead(xp, dead, blocks, probs[0].shape[:-1] + (1,), len(batch))
            self.bias, self.dropout, self.groups, self.batch = bias, dropout, groups, batch
        return out

    def backward(self, g):
        q, k, v, *rest = self.saved_tensors
        mask, out = (rest[0], rest[1]) if len(rest) == 2 else (None, rest[0])
        grads = self._graph_backward(g, q, k, v, mask) if STATE.enabled else \
            self._fused_backward(g, q, k, v, out, want_ds=mask is not None)
        dq, dk, dv, ds = grads
        needs = self.needs_input_grad
        result = (sum_to(dq, q.shape) if needs[0] else None,
                  _sum_heads(dk, self.groups, k.shape) if needs[1] else None,
                  _sum_heads(dv, self.groups, v.shape) if needs[2] else None)
        if mask is not None:
            result += (sum_to(ds, mask.shape) if needs[3] else None,)
        return result

    def _fused_backward(self, g, q, k, v, out, want_ds: bool) -> tuple:
        """The gradients on arrays, in the forward's blocks of the batch (on the intra-op
        threads), over the keys each block computed with (those a padding mask hides get
        zero gradients). The span that sees the most keys goes first and writes dK and dV;
        the other span adds into their leading rows. dS, wanted for a float mask (which means
        a single span), is the last span's."""
        xp = self.xp
        go, out, q = g._data, out._data, q._data
        k, v = _repeat_heads(xp, k._data, self.groups), _repeat_heads(xp, v._data, self.groups)
        batch, scale = self.batch, self.scale
        dq = _empty_like_layout(xp, q, batch + q.shape[-2:])
        dk = _empty_like_layout(xp, k, batch + k.shape[-2:])
        dv = _empty_like_layout(xp, v, batch + v.shape[-2:])
        ds_all = xp.empty_like(self.probs[-1]) if want_ds else None
        spans = list(zip(self.spans, self.probs, strict=True))[::-1]

        def compute(first_block: int, last_block: int) -> None:
            for index in range(first_block, last_block):
                lo, hi = self.blocks[index]
                part = functools.partial(_block, lo=lo, hi=hi, batch_dims=len(batch))
                go_b, q_b, k_b, v_b = part(go), part(q), part(k), part(v)
                dq_b, dk_b, dv_b = part(dq), part(dk), part(dv)
                # rowsum(dP ⊙ P) equals rowsum(dO ⊙ O), which is cheaper when Ev < S
                delta = xp.einsum("...i,...i->...", go_b, part(out))[..., None]
                first = True
                for (rows, keys), probs in spans:
                    keys = min(keys, self.seen[index])  # the rest have P = 0: no gradient
                    probs, g_rows = part(probs)[..., :keys], go_b[..., rows, :]
                    dropout = None if self.dropout is None else \
                        part(self.dropout)[..., rows, :keys]
                    kept = probs if dropout is None else probs * dropout
                    _key_grad(xp, dv_b, xp.swapaxes(kept, -1, -2), g_rows, keys, first)
                    ds = g_rows @ xp.swapaxes(v_b[..., :keys, :], -1, -2)
                    if dropout is not None:
                        ds *= dropout
                    ds -= delta[..., rows, :]
                    ds *= probs
                    xp.matmul(ds, k_b[..., :keys, :], out=dq_b[..., rows, :])
                    _key_grad(xp, dk_b, xp.swapaxes(ds, -1, -2), q_b[..., rows, :], keys, first)
                    first = False
                if ds_all is not None:
                    part(ds_all)[...] = ds
                dq_b *= dq_b.dtype.type(scale)
                dk_b *= dk_b.dtype.type(scale)

        for_blocks(self.device, len(self.blocks), compute, products=True)
        return tuple(None if a is None else Tensor._make(a, self.device)
                     for a in (dq, dk, dv, ds_all))

    def _graph_backward(self, g, q, k, v, mask) -> tuple:
        """The same gradients from Tensor ops (recomputing P over all keys), so they are
        differentiable."""
        k, v = _repeat_heads_tensor(k, self.groups), _repeat_heads_tensor(v, self.groups)
        scores = (q * self.scale) @ k.mT
        if self.bias is not None:
            scores = scores + Tensor._make(self.bias, self.device)
        if mask is not None:
            scores = scores + mask
        dead = None if self.dead is None else Tensor._make(self.dead, self.device)
        if dead is not None:
            scores = where(dead, 0.0, scores)
        probs = scores.softmax(-1)
        if dead is not None:
            probs = where(dead, 0.0, probs)
        dropout = None if self.dropout is None else Tensor._make(self.dropout, self.device)
        kept = probs if dropout is None else probs * dropout
        dv = kept.mT @ g
        dp = g @ v.mT
        if dropout is not None:
            dp = dp * dropout
        ds = probs * (dp - (dp * probs).sum(-1, keepdim=True))
        return ds @ k * self.scale, ds.mT @ q * self.scale, dv, ds


def _spans(n_queries: int, n_keys: int, causal: bool) -> list:
    """(query rows, number of leading keys they see): all rows with all keys, or under a
    causal mask (query i sees keys j <= i) each half of the rows with the keys it can see."""
    if not causal:
        return [(slice(None), n_keys)]
    half = n_queries // 2
    if not half:
        return [(slice(None), min(n_queries, n_keys))]
    return [(slice(0, half), min(half, n_keys)), (slice(half, None), min(n_queries, n_keys))]


def _length(rows: slice, n: int) -> int:
    return len(range(n)[rows])


# scores per cache block: with the keys, values and output of the block, they stay in a
# core's L2 cache between the product with K, the softmax passes and the product with V
_BLOCK_BYTES = 1 << 20


def _batch_blocks(batch: tuple, score_batch: tuple, matrix_bytes: int) -> list:
    """(lo, hi) ranges of the first batch dim, each with about _BLOCK_BYTES of scores, that
    forward computes one after the other (cache blocking, not a loop per batch item: the
    block grows as the matrices shrink). One block, (None, None), when there is no batch
    dim or the scores do not vary along it."""
    if not batch or len(score_batch) < len(batch) or score_batch[0] != batch[0]:
        return [(None, None)]
    per_item = math.prod(score_batch[1:]) * matrix_bytes
    step = max(1, _BLOCK_BYTES // max(per_item, 1))
    return [(lo, min(lo + step, batch[0])) for lo in range(0, batch[0], step)]


def _block(a, lo, hi, batch_dims: int):
    """`a`'s part lo:hi along the first of `batch_dims` batch dims (before its last two), or
    `a` itself where it broadcasts along that dim (size 1 or absent)."""
    if lo is None or a.ndim - 2 < batch_dims or a.shape[0] == 1:
        return a
    return a[lo:hi]


def _gather_dead(xp, dead: list, blocks: list, shape: tuple, batch_dims: int):
    """The blocks' masks of rows with every key masked out as one array of `shape`, or None
    when no block has such rows."""
    if not dead:
        return None
    if len(blocks) == 1:
        return dead[0][2]
    full = xp.zeros(shape, dtype=bool)
    for lo, hi, d in dead:
        _block(full, lo, hi, batch_dims)[...] = d
    return full


def _seen_keys(xp, bias) -> int:
    """How many leading keys some query may see under `bias`, a mask over keys alone
    (..., 1, S) of 0 (seen) and -inf: one past the last key that any row leaves unmasked."""
    seen = xp.flatnonzero((bias.reshape(-1, bias.shape[-1]) == 0).any(axis=0))
    return int(seen[-1]) + 1 if seen.size else 0


def _key_grad(xp, total, a, b, keys: int, first: bool) -> None:
    """a @ b, a gradient for the first `keys` keys, written into `total` (the first span,
    zeroing the keys no query sees) or added to it."""
    if first:
        xp.matmul(a, b, out=total[..., :keys, :])
        total[..., keys:, :] = 0
    else:
        total[..., :keys, :] += a @ b


def _empty_like_layout(xp, like, shape: tuple):
    """An uninitialised array of `shape` and `like`'s dtype. Where `like` is laid out as
    (..., L, H, E) in memory and seen as (..., H, L, E), the typical split of a projection
    into heads, so is the result; otherwise it is C-contiguous."""
    if len(shape) < 4 or like.ndim < 4 or like.strides[-3] >= like.strides[-2]:
        return xp.empty(shape, dtype=like.dtype)
    heads_last = shape[:-3] + (shape[-2], shape[-3], shape[-1])
    return xp.swapaxes(xp.empty(heads_last, dtype=like.dtype), -2, -3)


def _add(scores, extra):
    """scores + extra, in place when `extra` does not enlarge the scores by broadcasting."""
    if extra.ndim <= scores.ndim and all(
            e in (1, s) for e, s in zip(extra.shape[::-1], scores.shape[::-1], strict=False)):
        scores += extra
        return scores
    return scores + extra


# from this many query rows on, K is copied transposed; below, as when decoding one token
# at a time, the copy would cost about as much as the product itself
_TRANSPOSED_COPY_ROWS = 8


def _scaled_operands(xp, q, k, scale: float) -> tuple:
    """(q, kᵀ) with `scale` applied to one of them, so that q @ kᵀ are the scaled scores.

    For many query rows kᵀ is a C-contiguous copy, (..., E, S), scaled on the way: BLAS
    multiplies by it about twice as fast as by a transposed view when E is a head's small
    width, and the scale costs no pass over the (L, S) scores. For a few rows q is scaled
    and kᵀ stays a view."""
    if q.shape[-2] < _TRANSPOSED_COPY_ROWS:
        return q * q.dtype.type(scale), xp.swapaxes(k, -1, -2)
    scaled = xp.empty(k.shape[:-2] + (k.shape[-1], k.shape[-2]), dtype=k.dtype)
    xp.copyto(scaled, xp.swapaxes(k, -1, -2))  # a strided copy, then a contiguous multiply:
    scaled *= k.dtype.type(scale)  # twice as fast as one multiply from the strided view
    return q, scaled


def _softmax(xp, scores, masked: bool, bounded: bool, normalize: bool = True) -> tuple:
    """Softmax over the last dim, in place; rows that are all -inf become zeros. Returns the
    probabilities, a mask of those rows (None when there are none) and the row sums (1 in
    dead rows). With `normalize=False` the exponentials are left undivided by the sums.

    `bounded` promises every finite score lies within `_exp_limit`: exp can then neither
    overflow nor underflow, so the row max need not be subtracted (the result is the same).
    """
    if not bounded:
        top = scores.max(axis=-1, keepdims=True)
        scores -= xp.where(xp.isneginf(top), 0, top).astype(scores.dtype, copy=False) \
            if masked else top
    probs = xp.exp(scores, out=scores)
    total = xp.einsum("...i->...", probs)[..., None]
    dead = None
    if masked:  # a row sums to 0 only when every entry is masked out
        dead = total == 0
        if bool(dead.any()):
            total[dead] = 1
        else:
            dead = None
    if normalize:
        probs /= total
    return probs, dead, total


_BOUND = 60.0  # the largest |score| the fast path takes in any dtype (e^±60 suits float32)


def _exp_limit(xp, dtype, n_keys: int) -> float:
    """The largest |score| for which softmax needs no max subtraction in `dtype`: e^-limit
    stays a normal number and n_keys terms of e^limit sum below the largest one (60 in
    float32; about 5 in float16, whose range is narrow)."""
    info = xp.finfo(dtype)
    return min(_BOUND, -math.log(float(info.tiny)) - 1,
               math.log(float(info.max)) - math.log(max(n_keys, 1)) - 1)


def _score_bound(xp, q, scaled_keys) -> float:
    """A bound on |q_i · scaled_keys_j| for all i, j, by Cauchy-Schwarz on the norms
    (`scaled_keys` is (..., E, S), as from `_scaled_operands`)."""
    if not q.size or not scaled_keys.size:
        return 0.0
    q_norm = float(xp.einsum("...i,...i->...", q, q).max())
    k_norm = float(xp.einsum("...ij,...ij->...j", scaled_keys, scaled_keys).max())
    return math.sqrt(q_norm * k_norm)


def _products_fit(xp, v, bound: float, n_keys: int) -> bool:
    """Whether n_keys weights of at most e^bound times values of v sum below v's dtype's
    largest number: then the rows can be divided by their sums after the product with V."""
    if not v.size:
        return True
    largest = max(abs(float(v.max())), abs(float(v.min())))  # no |v| temporary
    if largest == 0:
        return True
    top = math.log(float(xp.finfo(v.dtype).max))
    return math.isfinite(largest) and \
        bound + math.log(max(n_keys, 1)) + math.log(largest) < top - 1


def _repeat_heads(xp, array, groups: int):
    """Each key/value head repeated `groups` times along dim -3 (torch's repeat_interleave)."""
    return array if groups == 1 else xp.repeat(array, groups, axis=-3)


def _repeat_heads_tensor(t: Tensor, groups: int) -> Tensor:
    if groups == 1:
        return t
    shape = tuple(t.shape)
    spread = t.unsqueeze(-3).expand(shape[:-2] + (groups,) + shape[-2:])
    return spread.reshape(shape[:-3] + (shape[-3] * groups,) + shape[-2:])


def _sum_heads(grad: Tensor, groups: int, shape: tuple) -> Tensor:
    """The gradient of repeated heads summed back onto each key/value head, then down to
    `shape` over broadcast batch dims."""
    if groups == 1:
        return sum_to(grad, tuple(shape))
    repeated = tuple(shape[:-3]) + (shape[-3] * groups,) + tuple(shape[-2:])
    grad = sum_to(grad, repeated)
    return grad.reshape(tuple(shape[:-2]) + (groups,) + tuple(shape[-2:])).sum(-3)


def _check_inputs(query, key, value, enable_gqa: bool, op: str) -> tuple:
    """Validate dtypes and shapes; return how many query heads share a key/value head and
    the broadcast batch dims of the scores."""
    dtypes = {t.dtype for t in (query, key, value)}
    if len(dtypes) > 1 or query._data.dtype.kind != "f":
        raise DTypeError(f"{op}: query, key and value must have one floating dtype, got "
                         f"{query.dtype!r}, {key.dtype!r} and {value.dtype!r}")
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise ShapeError(f"{op}: query, key and value need at least 2 dims (..., L, E), got "
                         f"{shapes}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"{op}: expected query (..., L, E), key (..., S, E) and value "
                         f"(..., S, Ev), got {shapes}")
    groups = 1
    if enable_gqa:
        if min(query.ndim, key.ndim, value.ndim) < 3 or key.shape[-3] != value.shape[-3] or \
                query.shape[-3] % key.shape[-3]:
            raise ShapeError(f"{op}: with enable_gqa, the query heads (dim -3) must be a "
                             f"multiple of the key/value heads, which must agree; got {shapes}")
        groups = query.shape[-3] // key.shape[-3]
    try:
        batch = broadcast_shapes(query.shape[:-2], _heads(key, groups), _heads(value, groups))
    except ShapeError:
        raise ShapeError(f"{op}: the batch and head dims of {shapes} do not broadcast; pass "
                         "enable_gqa=True to share key/value heads among query heads") from None
    return groups, tuple(batch)


def _additive_mask(xp, allowed, dtype):
    """0 where `allowed`, -inf elsewhere, made in `dtype` directly (no float64 temporary)."""
    return xp.where(allowed, dtype.type(0), dtype.type(-math.inf))


def _heads(t: Tensor, groups: int) -> tuple:
    shape = tuple(t.shape[:-2])
    return shape if groups == 1 else shape[:-1] + (shape[-1] * groups,)


@recorded
@autocast_policy("lower")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False) -> Tensor:
    """softmax(query keyᵀ · scale + mask) value, as torch's function.

    `attn_mask` is a bool mask (True takes part) or a float mask added to the scores; it
    broadcasts to (..., L, S). `is_causal` masks keys after each query (top-left aligned),
    instead of `attn_mask`. `scale` defaults to 1/sqrt(E).
    `dropout_p` drops attention weights with dl's seeded generator. `enable_gqa` lets
    groups of query heads share each key/value head (dim -3).
    """
    op = "scaled_dot_product_attention"
    groups, batch = _check_inputs(query, key, value, enable_gqa, op)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: pass either attn_mask or is_causal=True, not both (as torch); "
                         "to combine them, fold the causal mask into attn_mask")
    xp, dtype = query._device.xp, query._data.dtype
    length, source = query.shape[-2], key.shape[-2]
    scores_shape = batch + (length, source)
    bias = None
    if is_causal:
        bias = _additive_mask(xp, xp.tri(length, source, dtype=bool), dtype)
    inputs = [query, key, value]
    if attn_mask is not None:
        try:
            broadcast_shapes(attn_mask.shape, scores_shape)
        except ShapeError:
            raise ShapeError(f"{op}: attn_mask of shape {tuple(attn_mask.shape)} does not "
                             f"broadcast to the attention scores {scores_shape}") from None
        if attn_mask._data.dtype.kind == "b":
            bias = _additive_mask(xp, attn_mask._data, dtype)
        elif attn_mask._data.dtype.kind == "f":
            inputs.append(attn_mask.to(query.dtype))
        else:
            raise DTypeError(f"{op}: attn_mask must be bool or floating, got {attn_mask.dtype!r}")
    dropout = None
    if dropout_p > 0:
        kept = rand(scores_shape, dtype=query.dtype, device=query.device)._data >= dropout_p
        dropout = kept.astype(dtype) * dtype.type(1 / (1 - dropout_p) if dropout_p < 1 else 0)
    return Attention.apply(*inputs, scale=1 / math.sqrt(query.shape[-1]) if scale is None
                           else scale, bias=bias, causal=is_causal, dropout=dropout,
                           groups=groups)
