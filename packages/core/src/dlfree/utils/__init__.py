"""`dl.utils`: the homes torch programs import helpers from; `dl.utils.data` is `dl.data`.

`import dlfree.utils.data as data` and `from dlfree.utils.data import DataLoader` work as
they do with torch.utils.data: the name is the data package itself, not a copy of it.
"""

import sys as _sys

from .. import data
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .parameters_vector import parameters_to_vector, vector_to_parameters

_sys.modules[__name__ + ".data"] = data

__all__ = ["data", "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]
