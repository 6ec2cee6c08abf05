"""Classification metrics for binary, multiclass and multilabel tasks."""

from .accuracy import Accuracy, HammingDistance
from .agreement import CohenKappa, MatthewsCorrCoef
from .calibration import CalibrationError
from .confusion import ConfusionMatrix
from .jaccard import JaccardIndex
from .precision_recall import F1Score, FBetaScore, Precision, Recall, Specificity
from .ranking import AUROC, ROC, AveragePrecision, PrecisionRecallCurve

__all__ = ["Accuracy", "HammingDistance", "CohenKappa", "MatthewsCorrCoef", "CalibrationError",
           "ConfusionMatrix", "JaccardIndex", "F1Score", "FBetaScore", "Precision", "Recall",
           "Specificity", "AUROC", "ROC", "AveragePrecision", "PrecisionRecallCurve"]
