"""The hook implementations through which dlfree-metrics registers what it provides,
exactly as a third-party plugin would (entry point `metrics` in the `dlfree` group)."""

from __future__ import annotations

from dlfree import hookimpl

from . import classification, detection, regression, segmentation

METRICS = (
    *(getattr(classification, name) for name in classification.__all__),
    regression.MeanSquaredError, regression.MeanAbsoluteError,
    regression.MeanAbsolutePercentageError, regression.R2Score, regression.ExplainedVariance,
    regression.PearsonCorrCoef, regression.SpearmanCorrCoef, regression.CosineSimilarity,
    segmentation.DiceScore, segmentation.MeanIoU, segmentation.PixelAccuracy,
    segmentation.GeneralizedDiceScore, detection.MeanAveragePrecision,
)


@hookimpl
def dlfree_register_metrics(register):
    for metric in METRICS:
        register(metric)
