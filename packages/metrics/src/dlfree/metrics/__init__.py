"""dlfree.metrics: streaming metrics that accumulate, merge and compute (dlfree-metrics)."""

from . import detection
from .classification import (
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
from .detection import (
    MeanAveragePrecision,
    box_area,
    box_convert,
    box_iou,
    complete_box_iou,
    distance_box_iou,
    generalized_box_iou,
)
from .metric import Metric, MetricCollection
from .regression import (
    CosineSimilarity,
    ExplainedVariance,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    PearsonCorrCoef,
    R2Score,
    SpearmanCorrCoef,
)
from .segmentation import DiceScore, GeneralizedDiceScore, MeanIoU, PixelAccuracy
from .version import __version__
