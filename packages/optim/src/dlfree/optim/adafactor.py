"""Adafactor: adaptive steps from factored second moments, in sublinear memory.

Shazeer and Stern, "Adafactor: Adaptive Learning Rates with Sublinear Memory Cost",
ICML 2018 (arXiv:1804.04235), Algorithms 4 and 5, in the form and with the defaults of
HuggingFace transformers' widely used `Adafactor` (also fairseq's).
"""

from __future__ import annotations

import math

from dlfree import zeros, zeros_like

from ._foreach import add_to_param_, norm
from .optimizer import Optimizer


class Adafactor(Optimizer):
    """Adam-like steps whose second moment of a matrix is kept as row and column means.

    Per step t, with g the gradient and eps = (eps1, eps2):

        rho = min(1e-6 * t if warmup_init else 1e-2, 1 / sqrt(t)) if relative_step, else lr
        alpha = max(eps2, RMS(p)) * rho if scale_parameter, else rho
        beta2_t = 1 - t**decay_rate
        G = g**2 + eps1
        for p with 2 or more dimensions (factored over the last two):
            R = beta2_t * R + (1 - beta2_t) * mean of G over columns   (one per row)
            C = beta2_t * C + (1 - beta2_t) * mean of G over rows      (one per column)
            u = g / sqrt(R * C / mean(R))
        otherwise:
            V = beta2_t * V + (1 - beta2_t) * G;   u = g / sqrt(V)
        u = alpha * u / max(1, RMS(u) / clip_threshold)
        with beta1: m = beta1 * m + (1 - beta1) * u, and m is the step
        p -= step + weight_decay * alpha * p

    RMS(x) is sqrt(mean(x**2)). R and C are kept with their reduced axis (size 1), so
    the state of a parameter shaped (..., n, m) is (..., n, 1) and (..., 1, m). The
    defaults are HF's: lr=None with relative_step=True; pass relative_step=False (and
    warmup_init=False) to use a fixed lr instead.
    """

    def __init__(self, params, lr: float | None = None, eps=(1e-30, 1e-3),
                 clip_threshold: float = 1.0, decay_rate: float = -0.8,
                 beta1: float | None = None, weight_decay: float = 0.0,
                 scale_parameter: bool = True, relative_step: bool = True,
                 warmup_init: bool = False):
        super().__init__(params, dict(lr=lr, eps=eps, clip_threshold=clip_threshold,
                                      decay_rate=decay_rate, beta1=beta1,
                                      weight_decay=weight_decay, scale_parameter=scale_parameter,
                                      relative_step=relative_step, warmup_init=warmup_init))

    def _validate(self, group: dict) -> None:
        self._check_flags(group, "relative_step", "warmup_init", "scale_parameter")
        if group["relative_step"]:
            if group["lr"] is not None:
                raise ValueError(f"{self._name}: lr must be None with relative_step=True (the "
                                 f"step size is computed from the step count), got "
                                 f"{group['lr']!r}; pass relative_step=False for a fixed lr")
        else:
            if group["lr"] is None:
                raise ValueError(f"{self._name}: relative_step=False needs an lr > 0, got None")
            self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
            if group["warmup_init"]:
                raise ValueError(f"{self._name}: warmup_init=True needs relative_step=True")
        eps = group["eps"]
        if not isinstance(eps, tuple | list) or len(eps) != 2:
            raise ValueError(f"{self._name}: eps must be a pair (eps1, eps2), got {eps!r}")
        self._check("eps[0]", eps[0], lambda v: v > 0, "> 0")
        self._check("eps[1]", eps[1], lambda v: v >= 0, ">= 0")
        self._check("clip_threshold", group["clip_threshold"], lambda v: v > 0, "> 0")
        self._check("decay_rate", group["decay_rate"], lambda v: -1 <= v <= 0, "in [-1, 0]")
        if group["beta1"] is not None:
            self._check("beta1", group["beta1"], lambda v: 0 <= v < 1, "None or in [0, 1)")
        self._check("weight_decay", group["weight_decay"], lambda v: v >= 0, ">= 0")

    def _update(self, group: dict, params: list) -> None:
        eps1, eps2 = group["eps"]
        beta1, weight_decay = group["beta1"], group["weight_decay"]
        for p in params:
            xp, kernels = p.device.xp, p.device.backend
            state = self.state[p]
            if not state:
                state["step"] = 0
                shape = tuple(p.shape)
                if len(shape) >= 2:
                    state["exp_avg_sq_row"] = zeros(shape[:-1] + (1,), dtype=p.dtype,
                                                    device=p.device)
                    state["exp_avg_sq_col"] = zeros(shape[:-2] + (1,) + shape[-1:],
                                                    dtype=p.dtype, device=p.device)
                else:
                    state["exp_avg_sq"] = zeros_like(p)
            if beta1 is not None and "exp_avg" not in state:
                state["exp_avg"] = zeros_like(p)
            state["step"] += 1
            step = state["step"]
            x, grad = p.array, p.grad.array

            alpha = self._step_size(group, step)
            if group["scale_parameter"]:
                # A device scalar, so a GPU is not synchronised per tensor.
                alpha = (xp.maximum(norm(xp, x) / math.sqrt(x.size), eps2) *
                         alpha).astype(x.dtype)
            beta2t = 1 - step ** group["decay_rate"]

            update = self._scratch(p)
            xp.multiply(grad, grad, out=update)
            xp.add(update, eps1, out=update)
            if "exp_avg_sq_row" in state:
                row, col = state["exp_avg_sq_row"].array, state["exp_avg_sq_col"].array
                for average, axis in ((row, -1), (col, -2)):
                    xp.multiply(average, beta2t, out=average)
                    kernels.add_scaled(average, xp.mean(update, axis=axis, keepdims=True),
                                       1 - beta2t)
                row_factor = xp.sqrt(row / xp.mean(row, axis=-2, keepdims=True))
                xp.multiply(row_factor, xp.sqrt(col), out=update)
                xp.divide(grad, update, out=update)
            else:
                average = state["exp_avg_sq"].array
                xp.multiply(average, beta2t, out=average)
                kernels.add_scaled(average, update, 1 - beta2t)
                xp.sqrt(average, out=update)
                xp.divide(grad, update, out=update)

            rms = norm(xp, update) / math.sqrt(update.size)
            clip = xp.maximum(rms / group["clip_threshold"], 1).astype(x.dtype)
            xp.divide(update, clip, out=update)
            xp.multiply(update, alpha, out=update)
            step_direction = update
            if beta1 is not None:
                exp_avg = state["exp_avg"].array
                xp.multiply(exp_avg, beta1, out=exp_avg)
                kernels.add_scaled(exp_avg, update, 1 - beta1)
                step_direction = exp_avg
            if weight_decay != 0:
                # Decoupled decay scaled like the step, folded into what p subtracts.
                if step_direction is update:
                    kernels.add_scaled(update, x, weight_decay * alpha)
                else:
                    xp.multiply(x, weight_decay * alpha, out=update)
                    xp.add(update, step_direction, out=update)
                    step_direction = update
            add_to_param_(p, step_direction, -1)

    @staticmethod
    def _step_size(group: dict, step: int) -> float:
        """rho: the relative step size, or the fixed lr when relative_step is off."""
        if not group["relative_step"]:
            return group["lr"]
        ceiling = 1e-6 * step if group["warmup_init"] else 1e-2
        return min(ceiling, 1 / math.sqrt(step))
