"""dlfree.nn: Module, containers, layers, losses and initializers (distribution dlfree-nn)."""

import sys as _sys

from dlfree import Parameter
from dlfree import functional as functional

from . import decoding, geometric, graph, init, parallel, utils
from .attention import MultiheadAttention
from .capsules import (
    CapsuleDecoder,
    CapsuleMarginLoss,
    PrimaryCapsules,
    RoutingCapsules,
    capsule_margin_loss,
    squash,
)
from .containers import (
    Identity,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from .decoding import BeamSearch, Sampler
from .graph import FlowBuilder, Graph

# The layers and losses (dlfree.nn.layers), a star import per family rather than one of
# .layers: a type checker reads only literal __all__ lists, and layers' is computed.
from .layers.activation import *  # noqa: F403
from .layers.conv import *  # noqa: F403
from .layers.dropout import *  # noqa: F403
from .layers.embedding import *  # noqa: F403
from .layers.lazy import *  # noqa: F403
from .layers.linear import *  # noqa: F403
from .layers.loss import *  # noqa: F403
from .layers.normalization import *  # noqa: F403
from .layers.padding import *  # noqa: F403
from .layers.pooling import *  # noqa: F403
from .layers.shape import *  # noqa: F403
from .layers.sync_batch_norm import *  # noqa: F403
from .module import Module
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .version import __version__

# `import dlfree.nn.functional as F` gives dlfree.functional itself, as torch programs expect.
_sys.modules[__name__ + ".functional"] = functional
