"""Classification metrics against scikit-learn (calibration error against a NumPy ECE written
out here), for binary, multiclass and multilabel inputs of every kind and edge case, each
checked per batch, accumulated, merged from halves and through state_dict; then errors."""

from __future__ import annotations

import warnings
from functools import partial

import dlfree as dl
from dlfree.metrics import (
    AUROC,
    ROC,
    Accuracy,
    AveragePrecision,
    CalibrationError,
    CohenKappa,
    ConfusionMatrix,
    F1Score,
    FBetaScore,
    HammingDistance,
    JaccardIndex,
    MatthewsCorrCoef,
    Precision,
    PrecisionRecallCurve,
    Recall,
    Specificity,
)

import numpy as np
import pytest
from sklearn import metrics as sk
from sklearn.exceptions import UndefinedMetricWarning

from support.metrics import assert_close, check_streaming

C = 4  # classes (multiclass) and labels (multilabel)
SIZES = (6, 1, 13)  # batch sizes: the one-sample batch is an edge case of its own
IGNORE = {"binary": -1, "multiclass": 0, "multilabel": -1}  # multiclass ignores a real class


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x, axis=1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def as_probabilities(x, normalise):
    """torchmetrics' rule, which the metrics follow: scores outside [0, 1] are logits."""
    return x if np.all((x >= 0) & (x <= 1)) else normalise(x)


# ------------------------------------------------------------------------- data
KINDS = {
    "binary": ["probs", "logits", "labels", "one_class", "ignore"],
    "multiclass": ["probs", "logits", "labels", "multidim", "never_predicted", "ignore"],
    "multilabel": ["probs", "logits", "labels", "multidim", "ignore"],
}


def make_batches(task, kind, rng, sizes=SIZES):
    """(preds, target) NumPy batches of one input kind."""
    batches = []
    for n in sizes:
        if task == "binary":
            target = np.zeros(n, dtype=np.int64) if kind == "one_class" else \
                rng.integers(0, 2, n)
            if kind == "labels":
                preds = rng.integers(0, 2, n)
            elif kind == "logits":  # the first logit lies outside [0, 1] in every batch
                preds = np.r_[4.0, rng.normal(0, 3, n - 1)]
            else:
                preds = rng.random(n) * (0.5 if kind == "one_class" else 1.0)
        elif task == "multiclass":
            target = rng.integers(0, C, (n, 3) if kind == "multidim" else n)
            if kind in ("labels", "never_predicted"):
                preds = rng.integers(0, C - (kind == "never_predicted"), n)
            elif kind == "logits":
                preds = rng.normal(0, 3, (n, C)) + np.r_[4.0, 0, 0, 0]
            else:
                preds = rng.random((n, C, 3) if kind == "multidim" else (n, C))
        else:
            shape = (n, C, 2) if kind == "multidim" else (n, C)
            target = rng.integers(0, 2, shape)
            if kind == "labels":
                preds = rng.integers(0, 2, shape)
            elif kind == "logits":
                preds = np.r_["0,2", np.full(C, 4.0), rng.normal(0, 3, (n - 1, C))]
            else:
                preds = rng.random(shape)
        if kind == "ignore":  # the first sample is always kept, so no batch is empty
            dropped = rng.random(target.shape) < 0.3
            dropped[0] = False
            target = np.where(dropped, IGNORE[task], target)
        batches.append((preds, target))
    return batches


def class_last(array):
    """(N, K, ...) to (M, K), as the metrics read multiclass scores and multilabel inputs."""
    return np.moveaxis(array, 1, -1).reshape(-1, array.shape[1])


def flat_labels(task, preds, target, ignore):
    """(y_true, y_pred) as scikit-learn takes them, ignored positions dropped (multilabel:
    indicator matrices; ignored positions are not dropped there, see the dedicated test)."""
    if task == "multilabel":
        preds, target = class_last(preds), class_last(target)
        if preds.dtype.kind == "f":
            preds = (as_probabilities(preds, sigmoid) > 0.5).astype(np.int64)
        return target, preds
    if task == "multiclass" and preds.ndim == target.ndim + 1:
        preds = preds.argmax(axis=1)
    preds, target = preds.reshape(-1), target.reshape(-1)
    if ignore is not None:
        preds, target = preds[target != ignore], target[target != ignore]
    if preds.dtype.kind == "f":
        preds = (as_probabilities(preds, sigmoid) > 0.5).astype(np.int64)
    return target, preds


def cases(tasks=("binary", "multiclass", "multilabel"), averages=("micro", "macro",
                                                                   "weighted", "none")):
    """(task, kind, average) triples; binary has no average."""
    out = []
    for task in tasks:
        for kind in KINDS[task]:
            if task == "multilabel" and kind == "ignore":
                continue
            for average in (["micro"] if task == "binary" else averages):
                out.append(pytest.param(task, kind, average, id=f"{task}-{kind}-{average}"))
    return out


def task_args(task, kind):
    args = {"multiclass": {"num_classes": C}, "multilabel": {"num_labels": C}}.get(task, {})
    if kind.endswith("ignore"):
        args["ignore_index"] = IGNORE[task]
    return args


# ------------------------------------------------------------ stat-score metrics
def counts(task, y_true, y_pred):
    """scikit-learn's per-class (tn, fp, fn, tp)."""
    labels = list(range(C)) if task == "multiclass" else None
    matrices = sk.multilabel_confusion_matrix(y_true, y_pred, labels=labels)
    return matrices[:, 0, 0], matrices[:, 0, 1], matrices[:, 1, 0], matrices[:, 1, 1]


def average_rule(score, pooled, task, average, tn, fp, fn, tp):
    """The averaging the metrics document, written out: macro leaves out multiclass classes
    absent from preds and target; weighted is by support tp + fn."""
    if average == "micro":
        return pooled
    if average == "none":
        return score
    weights = (tp + fn) if average == "weighted" else \
        ((tp + fp + fn) > 0 if task == "multiclass" else np.ones_like(tp))
    return (weights * score).sum() / weights.sum() if weights.sum() else 0.0


def ratio(num, den):
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    return np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)


SKLEARN = {"Precision": sk.precision_score, "Recall": sk.recall_score, "F1Score": sk.f1_score,
           "FBetaScore": partial(sk.fbeta_score, beta=2.0), "JaccardIndex": sk.jaccard_score}
STAT_METRICS = {"Accuracy": Accuracy, "HammingDistance": HammingDistance,
                "Precision": Precision, "Recall": Recall, "F1Score": F1Score,
                "FBetaScore": partial(FBetaScore, beta=2.0), "Specificity": Specificity,
                "JaccardIndex": JaccardIndex}


def sklearn_stat(name, task, average, y_true, y_pred):
    """scikit-learn's value of stat-score metric `name`."""
    if name == "HammingDistance":
        return 1.0 - sklearn_stat("Accuracy", task, average, y_true, y_pred)
    if task == "binary":
        if name == "Accuracy":
            return sk.accuracy_score(y_true, y_pred)
        if name == "Specificity":
            return sk.recall_score(y_true, y_pred, pos_label=0, zero_division=0)
        return SKLEARN[name](y_true, y_pred, zero_division=0)
    if name in SKLEARN or (name == "Accuracy" and task == "multiclass"):
        if name == "Accuracy" and average == "micro":
            return sk.accuracy_score(y_true, y_pred)
        fn = sk.recall_score if name == "Accuracy" else SKLEARN[name]
        labels = list(range(C)) if task == "multiclass" and average == "none" else None
        return fn(y_true, y_pred, average=None if average == "none" else average,
                  labels=labels, zero_division=0)
    tn, fp, fn, tp = counts(task, y_true, y_pred)
    if name == "Accuracy":  # multilabel: per label (tp + tn) / all; micro is 1 - Hamming loss
        score = ratio(tp + tn, tp + tn + fp + fn)
        return average_rule(score, 1 - sk.hamming_loss(y_true, y_pred), task, average,
                            tn, fp, fn, tp)
    return average_rule(ratio(tn, tn + fp), ratio(tn.sum(), (tn + fp).sum()), task, average,
                        tn, fp, fn, tp)


@pytest.mark.parametrize("name", STAT_METRICS)
@pytest.mark.parametrize("task, kind, average", cases())
def test_stat_score_metrics_match_sklearn(name, task, kind, average, rng):
    args = task_args(task, kind)
    ignore = args.get("ignore_index")
    make = partial(STAT_METRICS[name], task, average=average, **args)
    check_streaming(make, make_batches(task, kind, rng), lambda p, t: sklearn_stat(
        name, task, average, *flat_labels(task, p, t, ignore)))


@pytest.mark.parametrize("name", ["Precision", "Recall", "F1Score", "JaccardIndex"])
@pytest.mark.parametrize("average", ["macro", "none"])
def test_zero_division_one_matches_sklearn(name, average, rng):
    preds, target = rng.integers(0, C - 1, 30), rng.integers(1, C, 30)  # class 0 never true
    value = STAT_METRICS[name]("multiclass", num_classes=C, average=average,
                               zero_division=1)(preds, target)
    labels = list(range(C)) if average == "none" else None
    assert_close(value, SKLEARN[name](target, preds, average=None if average == "none" else
                                      average, labels=labels, zero_division=1))


@pytest.mark.parametrize("top_k", [1, 2, 3])
def test_top_k_accuracy_matches_sklearn(top_k, rng):
    batches = make_batches("multiclass", "probs", rng, sizes=(8, 1, 15))
    check_streaming(lambda: Accuracy("multiclass", num_classes=C, top_k=top_k), batches,
                    lambda p, t: sk.top_k_accuracy_score(t, p, k=top_k, labels=range(C)))


def test_top_k_per_class_recall_matches_the_rule(rng):
    preds, target = rng.random((40, C)), rng.integers(0, C, 40)
    in_top2 = np.argsort(-preds, axis=1)[:, :2] == target[:, None]
    expected = [in_top2.any(axis=1)[target == c].mean() for c in range(C)]
    assert_close(Recall("multiclass", num_classes=C, top_k=2, average=None)(preds, target),
                 expected)


@pytest.mark.parametrize("name", ["Accuracy", "Precision", "Recall"])
@pytest.mark.parametrize("average", ["micro", "macro", "none"])
def test_multilabel_ignore_index_drops_positions(name, average, rng):
    preds, target = rng.random((40, C)), rng.integers(0, 2, (40, C))
    target[rng.random(target.shape) < 0.3] = -1
    per_label = []
    for label in range(C):
        keep = target[:, label] != -1
        per_label.append((target[keep, label], (preds[keep, label] > 0.5).astype(int)))
    if average == "micro":
        y_true, y_pred = (np.concatenate(parts) for parts in zip(*per_label))
        expected = sklearn_stat(name, "binary", "micro", y_true, y_pred)
    else:
        scores = [sklearn_stat(name, "binary", "micro", t, p) for t, p in per_label]
        expected = np.mean(scores) if average == "macro" else scores
    metric = STAT_METRICS[name]("multilabel", num_labels=C, average=average, ignore_index=-1)
    assert_close(metric(preds, target), expected)


# ------------------------------------------------------ confusion-matrix metrics
@pytest.mark.parametrize("normalize", [None, "true", "pred", "all"])
@pytest.mark.parametrize("task, kind, average", cases(averages=("none",)))
def test_confusion_matrix_matches_sklearn(task, kind, average, normalize, rng):
    args = task_args(task, kind)

    def oracle(preds, target):
        y_true, y_pred = flat_labels(task, preds, target, args.get("ignore_index"))
        if task != "multilabel":
            labels = [0, 1] if task == "binary" else list(range(C))
            with warnings.catch_warnings():  # sklearn warns on the one-sample batch
                warnings.simplefilter("ignore", UserWarning)
                return sk.confusion_matrix(y_true, y_pred, labels=labels, normalize=normalize)
        matrices = sk.multilabel_confusion_matrix(y_true, y_pred).astype(np.float64)
        axes = {"true": -1, "pred": -2, "all": (-2, -1)}
        if normalize is None:
            return matrices
        return ratio(matrices, matrices.sum(axis=axes[normalize], keepdims=True))

    check_streaming(partial(ConfusionMatrix, task, normalize=normalize, **args),
                    make_batches(task, kind, rng), oracle)


def test_unnormalized_confusion_matrix_holds_integer_counts(rng):
    result = ConfusionMatrix("multiclass", num_classes=C)(rng.random((9, C)),
                                                          rng.integers(0, C, 9))
    assert result.dtype == dl.int64 and int(result.sum()) == 9


@pytest.mark.parametrize("task, kind, average", cases(averages=("none",)))
def test_matthews_corrcoef_matches_sklearn(task, kind, average, rng):
    args = task_args(task, kind)

    def oracle(preds, target):
        y_true, y_pred = flat_labels(task, preds, target, args.get("ignore_index"))
        with warnings.catch_warnings():  # sklearn warns where one class is all there is
            warnings.simplefilter("ignore", UserWarning)
            return sk.matthews_corrcoef(np.ravel(y_true), np.ravel(y_pred))

    check_streaming(partial(MatthewsCorrCoef, task, **args), make_batches(task, kind, rng),
                    oracle)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("task, kind, average", cases(("binary", "multiclass"), ("none",)))
def test_cohen_kappa_matches_sklearn(task, kind, average, weights, rng):
    args = task_args(task, kind)

    def oracle(preds, target):
        y_true, y_pred = flat_labels(task, preds, target, args.get("ignore_index"))
        labels = [0, 1] if task == "binary" else list(range(C))
        with warnings.catch_warnings():  # undefined where chance agreement is perfect: NaN
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            return sk.cohen_kappa_score(y_true, y_pred, weights=weights, labels=labels)

    check_streaming(partial(CohenKappa, task, weights=weights, **args),
                    make_batches(task, kind, rng), oracle)


# ------------------------------------------------------------------ calibration
def reference_calibration_error(confidence, correct, n_bins, norm):
    """Bins [i/n, (i+1)/n), the last one closed; per bin |accuracy - mean confidence|,
    weighted by the bin's share of samples (l1), root-mean-squared (l2) or the largest."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    gaps, shares = [], []
    for b in range(n_bins):
        upper = confidence <= edges[b + 1] if b == n_bins - 1 else confidence < edges[b + 1]
        in_bin = (confidence >= edges[b]) & upper
        if in_bin.any():
            gaps.append(abs(correct[in_bin].mean() - confidence[in_bin].mean()))
            shares.append(in_bin.mean())
    gaps, shares = np.array(gaps), np.array(shares)
    if norm == "l1":
        return (gaps * shares).sum()
    if norm == "l2":
        return np.sqrt((gaps ** 2 * shares).sum())
    return gaps.max()


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("n_bins", [5, 15])
@pytest.mark.parametrize("task, kind", [("binary", "probs"), ("binary", "logits"),
                                        ("binary", "ignore"), ("multiclass", "probs"),
                                        ("multiclass", "logits"), ("multiclass", "ignore")])
def test_calibration_error_matches_the_written_out_ece(task, kind, n_bins, norm, rng):
    args = task_args(task, kind)
    ignore = args.get("ignore_index")

    def oracle(preds, target):
        if ignore is not None:
            keep = target != ignore
            preds, target = preds[keep], target[keep]
        if task == "binary":
            confidence, correct = as_probabilities(preds, sigmoid), target
        else:
            probs = as_probabilities(preds, softmax)
            confidence, correct = probs.max(axis=1), probs.argmax(axis=1) == target
        return reference_calibration_error(confidence, correct.astype(float), n_bins, norm)

    batches = make_batches(task, kind, rng)
    check_streaming(partial(CalibrationError, task, n_bins=n_bins, norm=norm, **args),
                    batches, oracle)


def test_calibration_error_puts_bin_edges_in_the_upper_bin():
    # 0.2 and 0.4 are edges of 5 bins; 1.0 falls in the last bin
    confidence = np.array([0.2, 0.4, 1.0, 0.0])
    target = np.array([1, 0, 1, 0])
    expected = reference_calibration_error(confidence, target.astype(float), 5, "max")
    assert_close(CalibrationError("binary", n_bins=5, norm="max")(confidence, target), expected)


# ------------------------------------------------------------- ranking metrics
RANK_KINDS = {"binary": ["probs", "logits", "ties", "ignore"],
              "multiclass": ["probs", "logits", "ties", "ignore"],
              "multilabel": ["probs", "ties", "multidim", "ignore"]}
GRID = np.linspace(0.0, 1.0, 11)


def rank_batches(task, kind, rng, sizes=SIZES):
    """Float-score batches; with "ties" or "grid", scores take values of GRID only."""
    base = {"ties": "probs", "grid": "probs", "grid_ignore": "ignore"}.get(kind, kind)
    batches = make_batches(task, base, rng, sizes)
    if base != kind:
        batches = [(GRID[rng.integers(0, GRID.size, p.shape)], t) for p, t in batches]
    return batches


def score_columns(task, preds, target, ignore):
    """(y_true, y_score, valid): (M, K) columns, one per class (one against the rest) or
    label, with probabilities as the metrics compute them."""
    if task == "binary":
        keep = target.reshape(-1) != ignore if ignore is not None else slice(None)
        preds, target = preds.reshape(-1)[keep], target.reshape(-1)[keep]
        return target[:, None], as_probabilities(preds, sigmoid)[:, None], None
    if task == "multiclass":
        target = target.reshape(-1)
        preds = class_last(preds)
        if ignore is not None:
            preds, target = preds[target != ignore], target[target != ignore]
        onehot = (target[:, None] == np.arange(C)).astype(int)
        return onehot, as_probabilities(preds, softmax), None
    preds, target = class_last(preds), class_last(target)
    valid = None if ignore is None else target != ignore
    return target, as_probabilities(preds, sigmoid), valid


def per_column(score_fn, y_true, y_score, valid, needs_negatives):
    """scikit-learn's score per column where it is defined (positives, and negatives for
    AUROC), NaN elsewhere; with the column's number of positives."""
    values, positives = [], []
    for k in range(y_true.shape[1]):
        keep = slice(None) if valid is None else valid[:, k]
        t, s = y_true[keep, k], y_score[keep, k]
        defined = t.sum() > 0 and (not needs_negatives or (t == 0).sum() > 0)
        values.append(score_fn(t, s) if defined else np.nan)
        positives.append(t.sum())
    return np.array(values), np.array(positives, dtype=np.float64)


def ranking_average(values, positives, average):
    """The averaging the ranking metrics document: NaN classes left out."""
    if average == "none":
        return values
    defined = ~np.isnan(values)
    weights = defined * (positives if average == "weighted" else 1.0)
    return (weights * np.where(defined, values, 0)).sum() / weights.sum() \
        if weights.sum() else np.nan


RANKING = {"AUROC": (AUROC, sk.roc_auc_score, True),
           "AveragePrecision": (AveragePrecision, sk.average_precision_score, False)}


def ranking_cases(binned=False):
    out = []
    for task, kinds in RANK_KINDS.items():
        for kind in (["grid", "grid_ignore"] if binned else kinds):
            averages = ["macro"] if task == "binary" else \
                ["macro", "weighted", "none"] + (["micro"] if task == "multilabel" else [])
            for average in averages:
                out.append(pytest.param(task, kind, average, id=f"{task}-{kind}-{average}"))
    return out


def ranking_oracle(name, task, average, ignore):
    _, score_fn, needs_negatives = RANKING[name]

    def oracle(preds, target):
        y_true, y_score, valid = score_columns(task, preds, target, ignore)
        if average == "micro":
            keep = np.ones(y_true.shape, bool) if valid is None else valid
            y_true, y_score, valid = y_true[keep][:, None], y_score[keep][:, None], None
        values, positives = per_column(score_fn, y_true, y_score, valid, needs_negatives)
        return values[0] if task == "binary" or average == "micro" else \
            ranking_average(values, positives, average)

    return oracle


@pytest.mark.parametrize("name", RANKING)
@pytest.mark.parametrize("task, kind, average", ranking_cases())
def test_exact_ranking_metrics_match_sklearn(name, task, kind, average, rng):
    args = task_args(task, kind)
    check_streaming(partial(RANKING[name][0], task, average=average, **args),
                    rank_batches(task, kind, rng),
                    ranking_oracle(name, task, average, args.get("ignore_index")))


@pytest.mark.parametrize("name", RANKING)
@pytest.mark.parametrize("thresholds", [11, list(GRID[::-1])])
@pytest.mark.parametrize("task, kind, average", ranking_cases(binned=True))
def test_binned_ranking_metrics_equal_exact_when_thresholds_hold_every_score(
        name, task, kind, average, thresholds, rng):
    args = task_args(task, kind)
    check_streaming(partial(RANKING[name][0], task, thresholds=thresholds, average=average,
                            **args),
                    rank_batches(task, kind, rng),
                    ranking_oracle(name, task, average, args.get("ignore_index")))


@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_averaged_ranking_metrics_match_sklearn_averages(task, average, rng):
    preds, target = make_batches(task, "probs", rng, sizes=(60,))[0]
    preds = preds / preds.sum(axis=1, keepdims=True)  # sklearn's ovr wants rows summing to 1
    if task == "multiclass":
        auroc = sk.roc_auc_score(target, preds, multi_class="ovr", average=average)
        y_true = (target[:, None] == np.arange(C)).astype(int)
    else:
        auroc, y_true = sk.roc_auc_score(target, preds, average=average), target
    ap = sk.average_precision_score(y_true, preds, average=average)
    args = task_args(task, "probs")
    assert_close(AUROC(task, average=average, **args)(preds, target), auroc)
    assert_close(AveragePrecision(task, average=average, **args)(preds, target), ap)


def test_ranking_metrics_are_nan_for_a_class_without_positives():
    preds = np.array([[0.1, 0.9], [0.8, 0.6], [0.4, 0.2]])
    target = np.array([[0, 1], [1, 1], [0, 1]])  # label 1 has no negatives
    auroc = AUROC("multilabel", num_labels=2, average=None)(preds, target)
    assert np.isnan(auroc.numpy()[1]) and auroc.numpy()[0] == 1.0
    assert_close(AUROC("multilabel", num_labels=2)(preds, target), 1.0)
    assert np.isnan(float(AveragePrecision("binary")(preds[:, 0], np.zeros(3, int))))


CURVES = {"ROC": (ROC, partial(sk.roc_curve, drop_intermediate=False)),
          "PrecisionRecallCurve": (PrecisionRecallCurve, sk.precision_recall_curve)}


@pytest.mark.parametrize("name", CURVES)
@pytest.mark.parametrize("task, kind", [(task, kind) for task, kinds in RANK_KINDS.items()
                                        for kind in kinds])
def test_exact_curves_match_sklearn(name, task, kind, rng):
    args = task_args(task, kind)
    metric_cls, curve_fn = CURVES[name]

    def oracle(preds, target):
        y_true, y_score, valid = score_columns(task, preds, target, args.get("ignore_index"))
        curves = []
        for k in range(y_true.shape[1]):
            keep = slice(None) if valid is None else valid[:, k]
            with warnings.catch_warnings():  # a class without positives or negatives
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                warnings.simplefilter("ignore", UserWarning)
                curves.append(curve_fn(y_true[keep, k], y_score[keep, k]))
        return curves[0] if task == "binary" else tuple(map(list, zip(*curves)))

    check_streaming(partial(metric_cls, task, **args),
                    rank_batches(task, kind, rng, sizes=(9, 2, 14)), oracle)


def binned_rule(scores, positive, thresholds):
    """Positives and negatives scoring at or above each threshold, written out."""
    at_or_above = scores[None, :] >= thresholds[:, None]
    return (at_or_above & positive).sum(axis=1), (at_or_above & ~positive).sum(axis=1)


@pytest.mark.parametrize("task", ["binary", "multiclass", "multilabel"])
def test_binned_curves_match_the_counting_rule(task, rng):
    thresholds = np.array([0.0, 0.25, 0.5, 0.8])
    preds, target = make_batches(task, "probs", rng, sizes=(40,))[0]
    y_true, y_score, _ = score_columns(task, preds, target, None)
    fpr, tpr, precision, recall = [], [], [], []
    for k in range(y_true.shape[1]):
        positive = y_true[:, k] == 1
        tps, fps = binned_rule(y_score[:, k], positive, thresholds)
        fpr.append((fps / (~positive).sum())[::-1])
        tpr.append((tps / positive.sum())[::-1])
        predicted = tps + fps
        precision.append(np.r_[np.where(predicted > 0, tps / np.maximum(predicted, 1), 1), 1])
        recall.append(np.r_[tps / positive.sum(), 0])
    pick = (lambda v: v[0]) if task == "binary" else np.stack
    args = task_args(task, "probs")
    assert_close(ROC(task, thresholds=thresholds, **args)(preds, target),
                 (pick(fpr), pick(tpr), thresholds[::-1]))
    assert_close(PrecisionRecallCurve(task, thresholds=thresholds, **args)(preds, target),
                 (pick(precision), pick(recall), thresholds))


# ----------------------------------------------------------------------- errors
@pytest.mark.parametrize("build, error, message", [
    (lambda: Accuracy("multi"), ValueError,
     "unknown task 'multi'; valid: 'binary', 'multiclass', 'multilabel'"),
    (lambda: Precision("multiclass"), ValueError, "task='multiclass' needs num_classes"),
    (lambda: Recall("multilabel"), ValueError, "task='multilabel' needs num_labels"),
    (lambda: F1Score("multiclass", num_classes=3, average="mean"), ValueError,
     "unknown average 'mean'; valid: 'micro', 'macro', 'weighted', 'none' or None"),
    (lambda: Accuracy("binary", threshold=1.5), ValueError, r"threshold must be a number in"),
    (lambda: Accuracy("multiclass", num_classes=3, top_k=4), ValueError, "exceeds num_classes"),
    (lambda: Accuracy("binary", top_k=2), ValueError, "top_k > 1 applies to task='multiclass'"),
    (lambda: FBetaScore("binary", beta=0), ValueError, "beta must be a number > 0"),
    (lambda: Precision("binary", zero_division=0.5), ValueError, "zero_division must be 0 or 1"),
    (lambda: ConfusionMatrix("binary", normalize="rows"), ValueError, "unknown normalize"),
    (lambda: CohenKappa("multilabel"), ValueError, "unknown task 'multilabel'"),
    (lambda: CohenKappa("binary", weights="cubic"), ValueError, "unknown weights 'cubic'"),
    (lambda: CalibrationError("binary", norm="l3"), ValueError, "unknown norm 'l3'"),
    (lambda: CalibrationError("binary", n_bins=0), ValueError, "n_bins must be an int >= 1"),
    (lambda: AUROC("multiclass", num_classes=3, average="micro"), ValueError,
     "unknown average 'micro'"),
    (lambda: AUROC("binary", thresholds=1), ValueError, "must be >= 2"),
    (lambda: AUROC("binary", thresholds=[0.2, 1.5]), ValueError, r"numbers in \[0, 1\]"),
    (lambda: ROC("binary", thresholds=[0.5, 0.5]), ValueError, "must be distinct"),
    (lambda: Accuracy("binary", ignore_index=0.5), ValueError, "ignore_index must be an int"),
])
def test_bad_arguments_are_named(build, error, message):
    with pytest.raises(error, match=message):
        build()


@pytest.mark.parametrize("metric, preds, target, error, message", [
    (Accuracy("binary"), np.zeros(3), np.zeros(4, int), dl.ShapeError,
     r"preds shape \(3,\) and target shape \(4,\)"),
    (Accuracy("multiclass", num_classes=3), np.zeros((4, 2)), np.zeros(4, int), dl.ShapeError,
     r"preds shape \(4, 2\) and target shape \(4,\).*preds \(N, 3, \.\.\.\)"),
    (Accuracy("multilabel", num_labels=3), np.zeros((4, 3)), np.zeros((4, 2), int),
     dl.ShapeError, r"preds shape \(4, 3\) and target shape \(4, 2\)"),
    (Accuracy("binary"), np.zeros(3), np.array([0, 1, 2]), ValueError,
     r"target holds values such as \[2\]; valid: integers in \[0, 1\]"),
    (Accuracy("multiclass", num_classes=3), np.array([0, 1, 5]), np.zeros(3, int), ValueError,
     r"preds holds values such as \[5\]; valid: integers in \[0, 2\]"),
    (Accuracy("multiclass", num_classes=3), np.zeros(3), np.zeros(3, int), dl.DTypeError,
     "preds shaped like target must be integer labels"),
    (AUROC("binary"), np.zeros(3, int), np.zeros(3, int), dl.DTypeError,
     "preds must be floating scores"),
    (AUROC("multiclass", num_classes=3), np.zeros(3, int), np.zeros(3, int), dl.ShapeError,
     r"expected preds \(N, 3, \.\.\.\) with target \(N, \.\.\.\)"),
])
def test_bad_inputs_are_named(metric, preds, target, error, message):
    with pytest.raises(error, match=message):
        metric.update(preds, target)
