"""The composite steps of a graph, one `Module` each: `Split` (parallel branches merged),
`Loop` (a body repeated), `Gate` (soft routing), `Switch` (hard routing) and `Map` (a body
over the items of a dimension).

Each is a registered layer, so a graph holding them saves and loads as a model file; its
children are named by position or role (`2.0.weight`, `3.router.weight`). Every step takes
the stream and, after it, the tagged values the graph passes it (`using`).
"""

from __future__ import annotations

import numbers

import dlfree as dl
import dlfree.functional as F
from dlfree import ShapeError, Tensor

from ..containers import ModuleList
from ..module import Module
from .errors import GraphError

__all__ = ["Split", "Loop", "Gate", "Switch", "Map", "MERGES"]


def _same_shapes(parts, how: str) -> None:
    shapes = [tuple(p.shape) for p in parts]
    if any(s != shapes[0] for s in shapes):
        raise ShapeError(f"merge({how!r}) needs branches of one shape, got "
                         f"{' and '.join(map(str, shapes))}")


def _merge_add(parts):
    _same_shapes(parts, "add")
    out = parts[0]
    for part in parts[1:]:
        out = out + part
    return out


def _merge_mean(parts):
    _same_shapes(parts, "mean")
    return _merge_add(parts) / len(parts)


def _merge_cat(parts):
    leading = {tuple(p.shape[:-1]) for p in parts}
    if len(leading) > 1:
        raise ShapeError("merge('cat') joins the last dimension and needs the others equal, "
                         f"got {' and '.join(str(tuple(p.shape)) for p in parts)}")
    return dl.cat(parts, dim=-1)


MERGES = {"add": _merge_add, "mean": _merge_mean, "cat": _merge_cat}


def _check_modules(modules, what: str, least: int = 1) -> list:
    modules = list(modules)
    if len(modules) < least:
        raise GraphError(f"{what} needs at least {least} module{'s' if least > 1 else ''}, "
                         f"got {len(modules)}")
    for m in modules:
        if not callable(m):
            raise GraphError(f"{what}: {type(m).__name__} is not a module or callable")
    return modules


class Split(Module):
    """Parallel branches on the same input, merged by "add", "mean", "cat" (last dim) or a
    callable taking the list of branch outputs."""

    def __init__(self, branches, merge="add"):
        super().__init__()
        branches = _check_modules(branches, "split()", least=2)
        if isinstance(merge, str):
            if merge not in MERGES:
                raise GraphError(f"merge({merge!r}): valid merges are {', '.join(MERGES)} "
                                 "or a callable taking the list of branch outputs")
            self._merge = MERGES[merge]
        elif callable(merge):
            self._merge = merge
        else:
            raise GraphError(f"merge() takes a name or a callable, got {type(merge).__name__}")
        for i, branch in enumerate(branches):
            self.add_module(str(i), branch)

    def forward(self, x, *refs):
        return self._merge([branch(x, *refs) for branch in self._modules.values()])


class Loop(Module):
    """The body applied repeatedly to the stream: `n` times, or while `cond(x)` holds
    (checked before each pass), or until it holds (checked after each), at most `max_iter`
    times. Autograd records every pass, so gradients flow back through all of them."""

    MODES = ("for_n", "while", "until")

    def __init__(self, body, mode: str = "for_n", n: int = 1, cond=None, max_iter: int = 100):
        super().__init__()
        if mode not in self.MODES:
            raise GraphError(f"loop mode must be one of {', '.join(self.MODES)}, got {mode!r}")
        count = n if mode == "for_n" else max_iter
        what = "for_n(n)" if mode == "for_n" else f"{mode}(cond, max_iter)"
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
            raise GraphError(f"loop().{what}: the count must be an integer >= 1, got {count!r}")
        if mode != "for_n" and not callable(cond):
            raise GraphError(f"loop().{what}: cond must be a module or callable returning a "
                             f"bool or a one-element tensor, got {type(cond).__name__}")
        self.body = body
        self.mode, self.n, self.max_iter = mode, int(n), int(max_iter)
        self.cond = cond  # a Module is registered as a child, a plain callable kept as is
        self.iterations = 0  # how many passes the last call made

    def forward(self, x, *refs):
        body, cond = self.body, self.cond
        if self.mode == "for_n":
            for _ in range(self.n):
                x = body(x, *refs)
            self.iterations = self.n
            return x
        done = 0
        if self.mode == "while":
            while done < self.max_iter and bool(cond(x)):
                x = body(x, *refs)
                done += 1
        else:
            while done < self.max_iter:
                x = body(x, *refs)
                done += 1
                if bool(cond(x)):
                    break
        self.iterations = done
        return x


def _expand_weights(w: Tensor, ndim: int) -> Tensor:
    """(batch, experts) routing weights shaped to broadcast over (batch, ..., experts)."""
    return w.reshape(w.shape[0], *([1] * (ndim - 2)), w.shape[-1])


class Gate(Module):
    """Soft routing: `softmax(router(x))` weights the experts' outputs, summed; every expert
    runs on every sample. The router maps the stream to (batch, experts) logits."""

    def __init__(self, router, experts):
        super().__init__()
        self.router = router
        self.experts = ModuleList(_check_modules(experts, "gate()", least=1))

    def forward(self, x, *refs):
        logits = self.router(x)
        count = len(self.experts)
        if logits.ndim != 2 or logits.shape[-1] != count:
            raise ShapeError(f"gate(): the router must give (batch, {count}) logits for "
                             f"{count} experts, got shape {tuple(logits.shape)}")
        outs = dl.stack([expert(x, *refs) for expert in self.experts], dim=-1)
        return (outs * _expand_weights(F.softmax(logits, dim=-1), outs.ndim)).sum(-1)


class Switch(Module):
    """Hard routing: the selector picks one branch and only the chosen branch runs. The
    selector returns an int (or one-element tensor) for the whole batch, a (batch,) integer
    tensor, or (batch, branches) scores whose argmax picks per sample; with per-sample
    choices each branch runs on its own samples and the rows go back in batch order."""

    def __init__(self, selector, branches):
        super().__init__()
        self.selector = selector
        self.branches = ModuleList(_check_modules(branches, "switch()", least=2))

    def _choices(self, x):
        choice = self.selector(x)
        count = len(self.branches)
        if isinstance(choice, Tensor) and choice.numel() > 1:
            if choice.is_floating_point():
                if choice.ndim != 2 or choice.shape[1] != count:
                    raise ShapeError(f"switch(): float selector output must be (batch, "
                                     f"{count}) scores, got shape {tuple(choice.shape)}")
                choice = choice.argmax(dim=1)
            if choice.ndim != 1 or choice.shape[0] != x.shape[0]:
                raise ShapeError(f"switch(): per-sample choices must be ({x.shape[0]},), got "
                                 f"shape {tuple(choice.shape)}")
            rows = [int(r) for r in choice.tolist()]
            bad = [r for r in rows if not 0 <= r < count]
        else:
            rows = int(choice.item() if isinstance(choice, Tensor) else choice)
            bad = [] if 0 <= rows < count else [rows]
        if bad:
            raise GraphError(f"switch(): the selector chose branch {bad[0]}, valid choices are "
                             f"0..{count - 1}")
        return rows

    def forward(self, x, *refs):
        rows = self._choices(x)
        if isinstance(rows, int):
            return self.branches[rows](x, *refs)
        chosen = sorted(set(rows))
        if len(chosen) == 1:
            return self.branches[chosen[0]](x, *refs)
        order, parts = [], []
        for b in chosen:
            picked = [i for i, r in enumerate(rows) if r == b]
            order.extend(picked)
            index = dl.tensor(picked, device=x.device)
            parts.append(self.branches[b](x.index_select(0, index),
                                          *(r.index_select(0, index) for r in refs)))
        inverse = [0] * len(order)
        for position, row in enumerate(order):
            inverse[row] = position
        return dl.cat(parts, dim=0).index_select(0, dl.tensor(inverse, device=x.device))


class Map(Module):
    """One body over the items of a dimension: `each` (of the stream, dim 1 by default),
    `over` (of a tagged tensor, passed first among the refs), results stacked on that
    dimension; or `slices` (n equal slices of the stream on `dim`, results joined there)."""

    MODES = ("each", "over", "slices")

    def __init__(self, body, mode: str = "each", dim: int = 1, n: int = 1):
        super().__init__()
        if mode not in self.MODES:
            raise GraphError(f"map mode must be one of {', '.join(self.MODES)}, got {mode!r}")
        if mode == "slices" and (isinstance(n, bool) or not isinstance(n, numbers.Integral)
                                 or n < 1):
            raise GraphError(f"map().slices(n): n must be an integer >= 1, got {n!r}")
        self.body = body
        self.mode, self.dim, self.n = mode, int(dim), int(n)

    def forward(self, x, *refs):
        body, dim = self.body, self.dim
        if self.mode == "slices":
            if x.shape[dim] % self.n:
                raise ShapeError(f"map().slices({self.n}): dimension {dim} of shape "
                                 f"{tuple(x.shape)} does not split into {self.n} equal slices")
            return dl.cat([body(part, *refs) for part in x.chunk(self.n, dim)], dim=dim)
        if self.mode == "over":
            x, refs = refs[0], refs[1:]
        return dl.stack([body(item, *refs) for item in x.unbind(dim)], dim=dim)
