"""`dl.nn.utils`, as torch.nn.utils: gradient clipping, parameters as one vector, packed
sequences (`rnn`) and parametrizations. The clipping and vector helpers are the core's
(`dlfree.utils`), re-exported where torch programs look for them."""

from dlfree.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)

from . import parametrizations, parametrize, rnn

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "rnn", "parametrize", "parametrizations"]
