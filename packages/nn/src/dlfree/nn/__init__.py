"""dlfree.nn: Module, containers, layers, losses and initializers (distribution dlfree-nn)."""

from dlfree import Parameter

from . import init, parallel
from .attention import MultiheadAttention
from .containers import (
    Identity,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from .layers import *  # noqa: F403
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
