"""Capsule networks (Sabour, Frosst & Hinton 2017, "Dynamic Routing Between Capsules").

A capsule is a vector whose length is the probability that an entity is present and whose
direction describes it. `PrimaryCapsules` cuts a convolution's channels into capsules,
`RoutingCapsules` routes them to higher capsules by agreement, `CapsuleMarginLoss` scores
the output capsules' lengths and `CapsuleDecoder` reconstructs the input from the capsule
of the true (or the most likely) class. Matrix capsules with EM routing (Hinton et al.
2018) are not provided.
"""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import functional as F

from . import init
from .containers import ModuleList
from .layers._common import check_count
from .layers.conv import Conv2d
from .layers.linear import Linear
from .layers.loss import _Loss
from .module import Module

__all__ = ["squash", "capsule_margin_loss", "PrimaryCapsules", "RoutingCapsules",
           "CapsuleMarginLoss", "CapsuleDecoder"]

LAYERS = ("PrimaryCapsules", "RoutingCapsules", "CapsuleDecoder")
LOSSES = ("CapsuleMarginLoss",)


def squash(s, dim: int = -1, eps: float = 1e-8):
    """v = |s|^2 / (1 + |s|^2) * s / |s| along `dim`: short vectors shrink to almost zero,
    long ones to just below unit length; `eps` keeps the zero vector's gradient finite."""
    sq = (s * s).sum(dim, keepdim=True)
    return s * (sq / (1 + sq) / (sq + eps).sqrt())


def capsule_margin_loss(lengths, target, m_plus: float = 0.9, m_minus: float = 0.1,
                        lambda_: float = 0.5, reduction: str = "mean"):
    """sum_k T_k max(0, m+ - |v_k|)^2 + lambda (1 - T_k) max(0, |v_k| - m-)^2 per sample,
    with T the one-hot `target` (class indices) and `lengths` (B, K) the capsule lengths
    (or the capsules (B, K, D) themselves); averaged ("mean"), summed or per sample."""
    if lengths.ndim == 3:
        lengths = (lengths * lengths).sum(-1).sqrt()
    present = F.one_hot(target, lengths.shape[1]).to(lengths.dtype)
    loss = present * F.relu(m_plus - lengths) ** 2 + \
        lambda_ * (1 - present) * F.relu(lengths - m_minus) ** 2
    per_sample = loss.sum(1)
    if reduction == "none":
        return per_sample
    return per_sample.sum() if reduction == "sum" else per_sample.mean()


class PrimaryCapsules(Module):
    """A Conv2d whose out_capsules * capsule_dim channels are read as capsules: the output
    is (B, out_capsules * H' * W', capsule_dim), squashed."""

    def __init__(self, in_channels: int, out_capsules: int, capsule_dim: int,
                 kernel_size=9, stride=2, padding=0):
        super().__init__()
        self.out_capsules = check_count(out_capsules, "out_capsules", "PrimaryCapsules")
        self.capsule_dim = check_count(capsule_dim, "capsule_dim", "PrimaryCapsules")
        self.conv = Conv2d(in_channels, out_capsules * capsule_dim, kernel_size, stride,
                           padding)

    def forward(self, x):
        out = self.conv(x)
        b, _, h, w = out.shape
        caps = out.reshape(b, self.out_capsules, self.capsule_dim, h, w)
        caps = caps.permute(0, 1, 3, 4, 2).reshape(b, self.out_capsules * h * w,
                                                   self.capsule_dim)
        return squash(caps)

    def extra_repr(self) -> str:
        return f"out_capsules={self.out_capsules}, capsule_dim={self.capsule_dim}"


class RoutingCapsules(Module):
    """Capsules from capsules by dynamic routing: each input capsule i predicts each output
    capsule j as u_ij = W_ij u_i; the logits b_ij start at 0 and, for
    `routing_iterations` rounds, c_i = softmax_j(b_i), v_j = squash(sum_i c_ij u_ij),
    b_ij += u_ij . v_j. Gradients flow through every round, as in the paper's code.
    (B, in_capsules, in_dim) -> (B, out_capsules, out_dim)."""

    def __init__(self, in_capsules: int, in_dim: int, out_capsules: int, out_dim: int,
                 routing_iterations: int = 3):
        super().__init__()
        self.in_capsules = check_count(in_capsules, "in_capsules", "RoutingCapsules")
        self.in_dim = check_count(in_dim, "in_dim", "RoutingCapsules")
        self.out_capsules = check_count(out_capsules, "out_capsules", "RoutingCapsules")
        self.out_dim = check_count(out_dim, "out_dim", "RoutingCapsules")
        self.routing_iterations = check_count(routing_iterations, "routing_iterations",
                                              "RoutingCapsules")
        self.weight = dl.Parameter(dl.empty(in_capsules, out_capsules, out_dim, in_dim))
        init.normal_(self.weight, 0.0, 1.0 / math.sqrt(in_dim))

    def forward(self, u):
        if u.ndim != 3 or u.shape[1:] != (self.in_capsules, self.in_dim):
            raise dl.ShapeError(f"RoutingCapsules: expected input (B, {self.in_capsules}, "
                                f"{self.in_dim}), got {tuple(u.shape)}")
        # u_hat[b, i, j] = W[i, j] @ u[b, i], as one product per input capsule i over the
        # whole batch: (in, out * out_dim, in_dim) @ (in, in_dim, B), not B * in * out tiny ones
        b = u.shape[0]
        flat_w = self.weight.reshape(self.in_capsules, self.out_capsules * self.out_dim,
                                     self.in_dim)
        u_hat = (flat_w @ u.permute(1, 2, 0)).reshape(
            self.in_capsules, self.out_capsules, self.out_dim, b).permute(3, 0, 1, 2)
        logits = dl.zeros(b, self.in_capsules, self.out_capsules, dtype=u.dtype,
                          device=u.device)
        for r in range(self.routing_iterations):
            c = F.softmax(logits, dim=2)
            v = squash((c.unsqueeze(-1) * u_hat).sum(1))
            if r + 1 < self.routing_iterations:
                logits = logits + (u_hat * v.unsqueeze(1)).sum(-1)
        return v

    def extra_repr(self) -> str:
        return (f"{self.in_capsules}x{self.in_dim} -> {self.out_capsules}x{self.out_dim}, "
                f"routing_iterations={self.routing_iterations}")


class CapsuleMarginLoss(_Loss):
    """The margin loss of `capsule_margin_loss` as a module (m+ = 0.9, m- = 0.1,
    lambda = 0.5 by default)."""

    def __init__(self, m_plus: float = 0.9, m_minus: float = 0.1, lambda_: float = 0.5,
                 reduction: str = "mean"):
        super().__init__(reduction=reduction)
        self.m_plus, self.m_minus, self.lambda_ = m_plus, m_minus, lambda_

    def forward(self, lengths, target):
        return capsule_margin_loss(lengths, target, self.m_plus, self.m_minus, self.lambda_,
                                   self.reduction)


class CapsuleDecoder(Module):
    """Reconstruct the input from the capsules with all but one masked to zero: the
    target's capsule when `target` is given (training), else the longest one; an MLP with
    ReLU hidden layers and a sigmoid output of `out_features`."""

    def __init__(self, num_capsules: int, capsule_dim: int, out_features: int,
                 hidden: tuple = (512, 1024)):
        super().__init__()
        self.num_capsules = check_count(num_capsules, "num_capsules", "CapsuleDecoder")
        self.capsule_dim = check_count(capsule_dim, "capsule_dim", "CapsuleDecoder")
        widths = (num_capsules * capsule_dim, *hidden, out_features)
        self.layers = ModuleList([Linear(a, b) for a, b in zip(widths, widths[1:])])

    def forward(self, capsules, target=None):
        if target is None:
            target = (capsules * capsules).sum(-1).argmax(1)
        mask = F.one_hot(target, self.num_capsules).to(capsules.dtype).unsqueeze(-1)
        h = (capsules * mask).reshape(capsules.shape[0], -1)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            h = h.relu() if i + 1 < len(self.layers) else h.sigmoid()
        return h
