"""Reverse-mode automatic differentiation: the graph, its traversal and its checks."""

from __future__ import annotations

from . import functional, graph
from .anomaly import detect_anomaly, set_detect_anomaly
from .function import Function
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .recompute import checkpoint, checkpoint_sequential

__all__ = ["Function", "grad", "backward", "gradcheck", "gradgradcheck", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled", "detect_anomaly",
           "set_detect_anomaly", "checkpoint", "checkpoint_sequential", "functional", "graph"]


def _as_list(x):
    if x is None:
        return None
    from ..tensor import Tensor

    return [x] if isinstance(x, Tensor) else list(x)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused: bool = False):
    """Gradients of `outputs` with respect to `inputs`, returned instead of stored in `.grad`.

    With `create_graph=True` the returned gradients are themselves differentiable, which
    gives Hessian-vector products and gradient penalties.
    """
    from .engine import run_backward

    outputs, inputs = _as_list(outputs), _as_list(inputs)
    grad_outputs = _as_list(grad_outputs)
    return run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=inputs,
                        allow_unused=allow_unused)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False) -> None:
    """Accumulate the gradients of several outputs into the leaves in one traversal."""
    from .engine import run_backward

    run_backward(_as_list(tensors), _as_list(grad_tensors), retain_graph, create_graph)
