"""Regression metrics against scikit-learn and scipy.stats, one and several outputs, on
random data, data far from zero (streaming moments must not cancel), ties and constant
targets, each per batch, accumulated, merged from halves and through state_dict; then
errors."""

from __future__ import annotations

from functools import partial

import dlfree as dl
from dlfree.metrics import (
    CosineSimilarity,
    ExplainedVariance,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    PearsonCorrCoef,
    R2Score,
    SpearmanCorrCoef,
)

import numpy as np
import pytest
import scipy.stats
from sklearn import metrics as sk

from support.metrics import assert_close, check_streaming

SIZES = (7, 1, 12)
KINDS = ["random", "offset", "ties", "constant_target"]


def make_batches(kind, outputs, rng, sizes=SIZES):
    """(preds, target) batches, shaped (n,) for one output and (n, outputs) otherwise."""
    batches = []
    for n in sizes:
        shape = (n,) if outputs == 1 else (n, outputs)
        target = rng.normal(size=shape)
        preds = target + rng.normal(scale=0.8, size=shape)
        if kind == "offset":  # values near 1e6 with unit spread
            target, preds = target + 1e6, preds + 1e6
        elif kind == "ties":
            target, preds = np.round(target), np.round(preds)
        elif kind == "constant_target":
            target = np.full(shape, 3.0)
        batches.append((preds, target))
    return batches


def columns(preds, target):
    return preds.reshape(len(preds), -1), target.reshape(len(target), -1)


def per_column(fn, preds, target, outputs):
    """scipy's correlation per column; NaN with fewer than two samples or a constant column
    (where scipy warns and gives NaN)."""
    preds, target = columns(preds, target)
    values = [fn(preds[:, k], target[:, k])[0]
              if len(preds) > 1 and np.ptp(preds[:, k]) > 0 and np.ptp(target[:, k]) > 0
              else np.nan for k in range(preds.shape[1])]
    return values[0] if outputs == 1 else np.array(values)


def raw(fn):
    """A scikit-learn error per output (raw_values) or, for one output, on flat arrays."""
    def oracle(outputs, preds, target):
        if outputs == 1:
            return fn(target.reshape(-1), preds.reshape(-1))
        return fn(target, preds, multioutput="raw_values")
    return oracle


def r2_oracle(multioutput, adjusted, outputs, preds, target):
    """scikit-learn's R² (NaN below two samples, where it warns), adjusted by the textbook
    formula 1 - (1 - R²)(n - 1)/(n - k - 1) (NaN where n <= k + 1)."""
    n = len(target)
    nan = np.full(outputs, np.nan) if outputs > 1 and multioutput == "raw_values" else np.nan
    if n < 2 or (adjusted and n <= adjusted + 1):
        return nan
    value = np.squeeze(sk.r2_score(target, preds, multioutput=multioutput))  # 1 output: 0-d
    return 1 - (1 - value) * (n - 1) / (n - adjusted - 1) if adjusted else value


METRICS = {
    "mse": (MeanSquaredError, raw(sk.mean_squared_error)),
    "rmse": (partial(MeanSquaredError, squared=False), raw(sk.root_mean_squared_error)),
    "mae": (MeanAbsoluteError, raw(sk.mean_absolute_error)),
    "mape": (MeanAbsolutePercentageError, raw(sk.mean_absolute_percentage_error)),
    "pearson": (PearsonCorrCoef,
                lambda outputs, p, t: per_column(scipy.stats.pearsonr, p, t, outputs)),
    "spearman": (SpearmanCorrCoef,
                 lambda outputs, p, t: per_column(scipy.stats.spearmanr, p, t, outputs)),
}
for _average in ("raw_values", "uniform_average", "variance_weighted"):
    METRICS[f"r2-{_average}"] = (partial(R2Score, multioutput=_average),
                                 partial(r2_oracle, _average, 0))
    METRICS[f"ev-{_average}"] = (
        partial(ExplainedVariance, multioutput=_average),
        lambda outputs, p, t, _a=_average: np.squeeze(
            sk.explained_variance_score(t, p, multioutput=_a)))
METRICS["r2-adjusted"] = (partial(R2Score, adjusted=2), partial(r2_oracle, "uniform_average", 2))


@pytest.mark.parametrize("outputs", [1, 3])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", METRICS)
def test_regression_metrics_match_references(name, kind, outputs, rng):
    build, oracle = METRICS[name]
    batches = make_batches(kind, outputs, rng)
    check_streaming(lambda: build(num_outputs=outputs), batches, partial(oracle, outputs))


def test_r2_and_explained_variance_of_a_constant_target_follow_sklearn(rng):
    target = np.full(6, 2.0)
    for preds in (target.copy(), target + rng.normal(size=6)):
        assert_close(R2Score()(preds, target), sk.r2_score(target, preds))
        assert_close(ExplainedVariance()(preds, target),
                     sk.explained_variance_score(target, preds))


def test_streaming_moments_stay_accurate_far_from_zero(rng):
    # Sums of squares near 1e16 would cancel to garbage; the merged centred moments do not.
    target = rng.normal(size=200) + 1e8
    preds = target + rng.normal(scale=0.5, size=200)
    metrics = [R2Score(), PearsonCorrCoef(), ExplainedVariance()]
    for start in range(0, 200, 7):
        for metric in metrics:
            metric.update(preds[start:start + 7], target[start:start + 7])
    expected = [sk.r2_score(target, preds), scipy.stats.pearsonr(preds, target)[0],
                sk.explained_variance_score(target, preds)]
    for metric, value in zip(metrics, expected):
        assert_close(metric.compute(), value)


@pytest.mark.parametrize("reduction", ["sum", "mean", "none"])
def test_cosine_similarity_matches_sklearn(reduction, rng):
    batches = [(rng.normal(size=(n, 5)), rng.normal(size=(n, 5))) for n in SIZES]
    batches[0][0][2] = 0.0  # a zero vector: similarity 0

    def oracle(preds, target):
        values = np.diag(sk.pairwise.cosine_similarity(preds, target))
        return {"sum": values.sum(), "mean": values.mean(), "none": values}[reduction]

    check_streaming(lambda: CosineSimilarity(reduction), batches, oracle)


@pytest.mark.parametrize("build, error, message", [
    (lambda: MeanSquaredError(num_outputs=0), ValueError, "num_outputs must be an int >= 1"),
    (lambda: R2Score(multioutput="mean"), ValueError,
     "unknown multioutput 'mean'; valid: 'raw_values', 'uniform_average', 'variance_weighted'"),
    (lambda: R2Score(adjusted=-1), ValueError, "adjusted must be an int >= 0"),
    (lambda: CosineSimilarity("max"), ValueError, "unknown reduction 'max'"),
])
def test_bad_arguments_are_named(build, error, message):
    with pytest.raises(error, match=message):
        build()


@pytest.mark.parametrize("metric, preds, target, message", [
    (MeanSquaredError(), np.zeros(3), np.zeros(4), r"preds shape \(3,\) and target shape \(4,\)"),
    (PearsonCorrCoef(num_outputs=2), np.zeros((4, 3)), np.zeros((4, 3)),
     r"with num_outputs=2, preds and target must be \(N, 2\), got \(4, 3\)"),
    (CosineSimilarity(), np.zeros(3), np.zeros(3),
     r"must both be \(N, D\), got preds \(3,\) and target \(3,\)"),
])
def test_bad_inputs_are_named(metric, preds, target, message):
    with pytest.raises(dl.ShapeError, match=message):
        metric.update(preds, target)
