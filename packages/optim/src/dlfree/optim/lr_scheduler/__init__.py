"""Learning-rate schedulers with torch.optim.lr_scheduler's names and semantics, plus a
composable linear warm-up (`LinearWarmup`)."""

from .base import LRScheduler
from .compose import ChainedScheduler, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from .cyclic import CyclicLR
from .decay import ConstantLR, ExponentialLR, LinearLR, MultiStepLR, PolynomialLR, StepLR
from .lambda_lr import LambdaLR, MultiplicativeLR
from .one_cycle import OneCycleLR
from .plateau import ReduceLROnPlateau
from .warmup import LinearWarmup

__all__ = [
    "LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "ConstantLR", "LinearLR",
    "PolynomialLR", "LambdaLR", "MultiplicativeLR", "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR", "ReduceLROnPlateau",
    "SequentialLR", "ChainedScheduler", "LinearWarmup",
]
