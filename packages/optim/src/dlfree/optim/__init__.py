"""dlfree.optim: optimizers, wrappers, LR schedulers and gradient clipping (dlfree-optim)."""

from dlfree.utils.clip_grad import clip_grad_norm_, clip_grad_value_

from . import lr_scheduler
from .adabound import AdaBound
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .ema import EMA
from .lamb import LAMB
from .lars import LARS
from .lbfgs import LBFGS
from .lion import Lion
from .lookahead import Lookahead
from .nadam import NAdam
from .novograd import NovoGrad
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .version import __version__

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop",
           "Adagrad", "Adadelta", "LAMB", "NovoGrad", "AdaBound", "LARS", "Lion", "Adafactor",
           "ASGD", "Rprop", "LBFGS", "Lookahead", "EMA", "clip_grad_norm_", "clip_grad_value_",
           "lr_scheduler"]
