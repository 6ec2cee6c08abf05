"""AdamW, as torch.optim.AdamW: Loshchilov & Hutter, "Decoupled Weight Decay
Regularization", ICLR 2019.
"""

from __future__ import annotations

from .adam import Adam


class AdamW(Adam):
    """Adam whose weight decay shrinks the parameters directly (p -= lr * wd * p)
    instead of adding an L2 term to the gradient; `weight_decay` defaults to 1e-2."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)
