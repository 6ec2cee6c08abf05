"""Regression metrics: errors (MSE, MAE, MAPE), explained variance and R², correlations
(Pearson, Spearman) and cosine similarity, all streaming with exact merges."""

from __future__ import annotations

import numbers

import dlfree as dl

import numpy as np

from ._math import safe_divide
from .metric import Metric

MULTIOUTPUT = ("raw_values", "uniform_average", "variance_weighted")
NAN = float("nan")


def _check_outputs(metric: str, num_outputs) -> int:
    if not isinstance(num_outputs, numbers.Integral) or isinstance(num_outputs, bool) or \
            num_outputs < 1:
        raise ValueError(f"{metric}: num_outputs must be an int >= 1, got {num_outputs!r}")
    return int(num_outputs)


def _columns(metric: str, preds, target, num_outputs: int, xp):
    """preds and target as float64 (M, num_outputs) arrays; 1 output flattens any shape."""
    if preds.shape != target.shape:
        raise dl.ShapeError(f"{metric}: preds shape {tuple(preds.shape)} and target shape "
                            f"{tuple(target.shape)} must be equal")
    if num_outputs > 1 and (preds.ndim != 2 or preds.shape[1] != num_outputs):
        raise dl.ShapeError(f"{metric}: with num_outputs={num_outputs}, preds and target must "
                            f"be (N, {num_outputs}), got {tuple(preds.shape)}")
    return (preds.reshape(-1, num_outputs).astype(xp.float64),
            target.reshape(-1, num_outputs).astype(xp.float64))


class _OutputsMetric(Metric):
    """A metric over `num_outputs` columns: a scalar result for one, a vector for several."""

    def __init__(self, num_outputs: int = 1):
        super().__init__()
        self.num_outputs = _check_outputs(type(self).__name__, num_outputs)

    def _inputs(self, preds, target):
        preds, target = self.as_arrays(preds, target)
        return _columns(type(self).__name__, preds, target, self.num_outputs, self._device.xp)

    def _per_output(self, values):
        return self.as_result(values[0] if self.num_outputs == 1 else values)


class _MeanErrorMetric(_OutputsMetric):
    """The mean of an elementwise error, per output: a summed error and a count."""

    def __init__(self, num_outputs: int = 1):
        super().__init__(num_outputs)
        self.add_state("total", np.zeros(self.num_outputs), "sum")
        self.add_state("count", np.zeros((), dtype=np.int64), "sum")

    def _error(self, preds, target, xp):
        raise NotImplementedError

    def update(self, preds, target) -> None:
        preds, target = self._inputs(preds, target)
        self.total = self.total + self._error(preds, target, self._device.xp).sum(axis=0)
        self.count = self.count + preds.shape[0]

    def _mean(self):
        return safe_divide(self.total, self.count, self._device.xp, NAN)

    def compute(self):
        return self._per_output(self._mean())


class MeanSquaredError(_MeanErrorMetric):
    """The mean squared error, or its root with squared=False; per output when
    num_outputs > 1 (preds and target (N, num_outputs))."""

    def __init__(self, squared: bool = True, num_outputs: int = 1):
        self.squared = bool(squared)
        super().__init__(num_outputs)

    def _error(self, preds, target, xp):
        return (preds - target) ** 2

    def compute(self):
        mean = self._mean()
        return self._per_output(mean if self.squared else self._device.xp.sqrt(mean))


class MeanAbsoluteError(_MeanErrorMetric):
    """The mean absolute error; per output when num_outputs > 1."""

    def _error(self, preds, target, xp):
        return xp.abs(preds - target)


class MeanAbsolutePercentageError(_MeanErrorMetric):
    """The mean of |preds - target| / max(|target|, eps), eps the float64 machine epsilon
    (as scikit-learn), a fraction rather than a percentage; per output when num_outputs > 1."""

    def _error(self, preds, target, xp):
        return xp.abs(preds - target) / xp.maximum(xp.abs(target), np.finfo(np.float64).eps)


class _MomentsMetric(_OutputsMetric):
    """A metric from streaming counts, means and centred (co)moments per output.

    Batches and shards are combined with Chan et al.'s pairwise update (the sum of squared
    deviations gains delta^2 n_a n_b / n), which stays accurate where sums of raw powers
    would cancel catastrophically, and merges exactly.
    """

    def __init__(self, variables: tuple, pairs: tuple = (), num_outputs: int = 1):
        super().__init__(num_outputs)
        self._variables, self._pairs = variables, pairs
        zeros = np.zeros(self.num_outputs)
        self.add_state("count", np.zeros((), dtype=np.int64), "sum")
        for v in variables:
            self.add_state(f"mean_{v}", zeros, "mean", weight="count")
            self.add_state(f"m2_{v}", zeros, "sum")
        for a, b in pairs:
            self.add_state(f"c_{a}{b}", zeros, "sum")

    def _fold(self, values: dict, **sums) -> None:
        """Combine a batch: `values` maps each variable to its (M, outputs) array; `sums`
        holds the batch's contribution to the other ("sum") states."""
        xp = self._device.xp
        size = next(iter(values.values())).shape[0]
        if size == 0:
            return
        centred = {v: x - x.mean(axis=0) for v, x in values.items()}
        batch = {"count": xp.asarray(size, dtype=xp.int64), **sums}
        for v, x in values.items():
            batch[f"mean_{v}"] = x.mean(axis=0)
            batch[f"m2_{v}"] = (centred[v] ** 2).sum(axis=0)
        for a, b in self._pairs:
            batch[f"c_{a}{b}"] = (centred[a] * centred[b]).sum(axis=0)
        self._merge_states(batch)

    def _merge_states(self, states: dict) -> None:
        xp = self._device.xp
        factor = safe_divide(self.count * states["count"], self.count + states["count"], xp)
        delta = {v: states[f"mean_{v}"] - getattr(self, f"mean_{v}") for v in self._variables}
        extra = {f"m2_{v}": delta[v] ** 2 * factor for v in self._variables}
        extra.update({f"c_{a}{b}": delta[a] * delta[b] * factor for a, b in self._pairs})
        super()._merge_states(states)
        for name, value in extra.items():
            setattr(self, name, getattr(self, name) + value)


class _ExplainedMetric(_MomentsMetric):
    """The common part of R² and explained variance: 1 - unexplained / total variation per
    output, combined by `multioutput`, with scikit-learn's rule for a constant target."""

    def __init__(self, variables: tuple, num_outputs: int, multioutput: str):
        if multioutput not in MULTIOUTPUT:
            raise ValueError(f"{type(self).__name__}: unknown multioutput {multioutput!r}; "
                             f"valid: {', '.join(map(repr, MULTIOUTPUT))}")
        self.multioutput = multioutput
        super().__init__(variables, num_outputs=num_outputs)

    def _assemble(self, unexplained, total):
        xp = self._device.xp
        raw = xp.where(total != 0, 1.0 - safe_divide(unexplained, total, xp),
                       xp.where(unexplained == 0, 1.0, 0.0))
        if self.multioutput == "raw_values":
            return raw if self.num_outputs > 1 else raw[0]
        if self.multioutput == "variance_weighted" and bool(xp.any(total != 0)):
            return (raw * total).sum() / total.sum()
        return raw.mean()


class R2Score(_ExplainedMetric):
    """The coefficient of determination R² = 1 - SS_res / SS_tot.

    With adjusted=k > 0, the adjusted R² for k regressors, 1 - (1 - R²)(n - 1)/(n - k - 1)
    (NaN where n <= k + 1). multioutput: "raw_values" (per output), "uniform_average" or
    "variance_weighted" (weighted by each target's variance). As in scikit-learn, a
    constant target scores 1 if predicted exactly and 0 otherwise, and fewer than two
    samples give NaN.
    """

    def __init__(self, num_outputs: int = 1, adjusted: int = 0,
                 multioutput: str = "uniform_average"):
        if not isinstance(adjusted, numbers.Integral) or isinstance(adjusted, bool) or \
                adjusted < 0:
            raise ValueError(f"R2Score: adjusted must be an int >= 0, got {adjusted!r}")
        self.adjusted = int(adjusted)
        super().__init__(("target",), num_outputs, multioutput)
        self.add_state("sse", np.zeros(self.num_outputs), "sum")

    def update(self, preds, target) -> None:
        preds, target = self._inputs(preds, target)
        self._fold({"target": target}, sse=((target - preds) ** 2).sum(axis=0))

    def compute(self):
        xp = self._device.xp
        value = self._assemble(self.sse, self.m2_target)
        if self.adjusted:
            n = int(self.count)
            if n > self.adjusted + 1:
                value = 1.0 - (1.0 - value) * (n - 1) / (n - self.adjusted - 1)
            else:
                value = xp.full_like(value, NAN)
        if int(self.count) < 2:
            value = xp.full_like(value, NAN)
        return self.as_result(value)


class ExplainedVariance(_ExplainedMetric):
    """Explained variance, 1 - Var(target - preds) / Var(target). multioutput as for
    `R2Score`; as in scikit-learn, a constant target scores 1 if the error is constant and 0
    otherwise. NaN before any sample."""

    def __init__(self, num_outputs: int = 1, multioutput: str = "uniform_average"):
        super().__init__(("target", "error"), num_outputs, multioutput)

    def update(self, preds, target) -> None:
        preds, target = self._inputs(preds, target)
        self._fold({"target": target, "error": target - preds})

    def compute(self):
        value = self._assemble(self.m2_error, self.m2_target)
        if int(self.count) == 0:
            value = self._device.xp.full_like(value, NAN)
        return self.as_result(value)


class PearsonCorrCoef(_MomentsMetric):
    """Pearson's correlation coefficient per output, from streaming means and centred
    moments; NaN where preds or target is constant."""

    def __init__(self, num_outputs: int = 1):
        super().__init__(("preds", "target"), (("preds", "target"),), num_outputs)

    def update(self, preds, target) -> None:
        preds, target = self._inputs(preds, target)
        self._fold({"preds": preds, "target": target})

    def compute(self):
        xp = self._device.xp
        r = safe_divide(self.c_predstarget, xp.sqrt(self.m2_preds * self.m2_target), xp, NAN)
        return self._per_output(xp.clip(r, -1.0, 1.0))


def rank_columns(x, xp):
    """Ranks (1-based) within each column of `x` (M, D); ties get their average rank."""
    m, d = x.shape
    if m == 0:
        return x.astype(xp.float64)
    columns = x.T
    order = xp.argsort(columns, axis=1)
    ordered = xp.take_along_axis(columns, order, axis=1)
    starts = xp.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    flat_starts = starts.reshape(-1)
    first = xp.flatnonzero(flat_starts)
    last = xp.concatenate([first[1:], xp.asarray([m * d], dtype=first.dtype)]) - 1
    group_rank = (first % m + last % m) / 2.0 + 1.0
    ranks = xp.empty((d, m), dtype=xp.float64)
    ranks[xp.arange(d)[:, None], order] = group_rank[xp.cumsum(flat_starts) - 1].reshape(d, m)
    return ranks.T


class SpearmanCorrCoef(_OutputsMetric):
    """Spearman's rank correlation per output: Pearson's on the ranks, ties averaged. Ranks
    need every value, so the state keeps them ("cat"); NaN where preds or target is
    constant."""

    def __init__(self, num_outputs: int = 1):
        super().__init__(num_outputs)
        self.add_state("preds", [], "cat")
        self.add_state("target", [], "cat")

    def update(self, preds, target) -> None:
        preds, target = self._inputs(preds, target)
        self.preds = [*self.preds, preds]
        self.target = [*self.target, target]

    def compute(self):
        xp = self._device.xp
        empty = xp.zeros((0, self.num_outputs))
        preds = rank_columns(xp.concatenate(self.preds) if self.preds else empty, xp)
        target = rank_columns(xp.concatenate(self.target) if self.target else empty, xp)
        if preds.shape[0]:
            preds, target = preds - preds.mean(axis=0), target - target.mean(axis=0)
        r = safe_divide((preds * target).sum(axis=0),
                        xp.sqrt((preds ** 2).sum(axis=0) * (target ** 2).sum(axis=0)), xp, NAN)
        return self._per_output(xp.clip(r, -1.0, 1.0))


class CosineSimilarity(Metric):
    """The cosine similarity of each row of preds with the same row of target (N, D),
    reduced over rows by `reduction`: "sum", "mean" or "none"/None (every row's value). A
    zero vector has similarity 0, as in scikit-learn."""

    def __init__(self, reduction: str | None = "sum"):
        super().__init__()
        reduction = "none" if reduction is None else reduction
        if reduction not in ("sum", "mean", "none"):
            raise ValueError(f"CosineSimilarity: unknown reduction {reduction!r}; valid: "
                             "'sum', 'mean', 'none' or None")
        self.reduction = reduction
        if reduction == "none":
            self.add_state("values", [], "cat")
        else:
            self.add_state("total", np.zeros(()), "sum")
            self.add_state("count", np.zeros((), dtype=np.int64), "sum")

    def update(self, preds, target) -> None:
        preds, target = self.as_arrays(preds, target)
        xp = self._device.xp
        if preds.shape != target.shape or preds.ndim != 2:
            raise dl.ShapeError(f"CosineSimilarity: preds and target must both be (N, D), got "
                                f"preds {tuple(preds.shape)} and target {tuple(target.shape)}")
        preds, target = preds.astype(xp.float64), target.astype(xp.float64)
        norms = xp.sqrt((preds ** 2).sum(axis=1) * (target ** 2).sum(axis=1))
        cosine = safe_divide((preds * target).sum(axis=1), norms, xp)
        if self.reduction == "none":
            self.values = [*self.values, cosine]
        else:
            self.total = self.total + cosine.sum()
            self.count = self.count + cosine.shape[0]

    def compute(self):
        xp = self._device.xp
        if self.reduction == "none":
            return self.as_result(xp.concatenate(self.values) if self.values else xp.zeros(0))
        if self.reduction == "sum":
            return self.as_result(self.total)
        return self.as_result(safe_divide(self.total, self.count, xp, NAN))
