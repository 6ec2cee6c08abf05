"""Agreement between predicted and actual labels beyond chance: Matthews' correlation
coefficient and Cohen's kappa, both from the confusion matrix."""

from __future__ import annotations

from .._math import safe_divide
from .confusion import ConfusionMatrixBase

KAPPA_WEIGHTS = ("linear", "quadratic", "none")


class MatthewsCorrCoef(ConfusionMatrixBase):
    """Matthews' correlation coefficient (multiclass: Gorodkin's R_K), in [-1, 1]; 0 where
    it is undefined (all predictions or all targets in one class), as scikit-learn does.
    For multilabel, the per-label 2x2 matrices are summed first. Arguments as
    `ConfusionMatrix`."""

    def compute(self):
        xp = self._device.xp
        confmat = self.confmat.sum(axis=0) if self.task == "multilabel" else self.confmat
        confmat = confmat.astype(xp.float64)
        actual, predicted = confmat.sum(axis=1), confmat.sum(axis=0)
        correct, total = xp.trace(confmat), confmat.sum()
        covariance = correct * total - (actual * predicted).sum()
        spread = (total ** 2 - (predicted ** 2).sum()) * (total ** 2 - (actual ** 2).sum())
        return self.as_result(safe_divide(covariance, xp.sqrt(spread), xp))


class CohenKappa(ConfusionMatrixBase):
    """Cohen's kappa: observed agreement beyond the agreement expected by chance, 1 for
    perfect agreement; NaN where chance agreement is already perfect. weights: "none"/None
    (every disagreement counts 1), "linear" (|i - j|) or "quadratic" ((i - j)^2) for
    ordinal classes. Tasks "binary" and "multiclass"; arguments as `ConfusionMatrix`."""

    tasks = ("binary", "multiclass")

    def __init__(self, task: str, num_classes: int | None = None, threshold: float = 0.5,
                 ignore_index: int | None = None, weights: str | None = None):
        weights = "none" if weights is None else weights
        if weights not in KAPPA_WEIGHTS:
            raise ValueError(f"CohenKappa: unknown weights {weights!r}; valid: "
                             f"{', '.join(map(repr, KAPPA_WEIGHTS))} or None")
        self.weights = weights
        super().__init__(task, num_classes=num_classes, threshold=threshold,
                         ignore_index=ignore_index)

    def compute(self):
        xp = self._device.xp
        observed = self.confmat.astype(xp.float64)
        expected = safe_divide(xp.outer(observed.sum(axis=1), observed.sum(axis=0)),
                               observed.sum(), xp)
        index = xp.arange(observed.shape[0])
        distance = xp.abs(index[:, None] - index[None, :]).astype(xp.float64)
        cost = {"none": (distance > 0).astype(xp.float64), "linear": distance,
                "quadratic": distance ** 2}[self.weights]
        disagreement = safe_divide((cost * observed).sum(), (cost * expected).sum(), xp,
                                   fill=float("nan"))
        return self.as_result(1.0 - disagreement)
