"""The training loop: `Trainer` (fit / evaluate / predict) with event hooks, `History` with
trend queries, resumable training checkpoints, and the built-in callbacks."""

from . import callbacks
from .callbacks import (
    CSVLogger,
    EarlyStopping,
    HTMLReport,
    JSONLLogger,
    LRMonitor,
    ModelCheckpoint,
    ProgressBar,
    ReduceOnStall,
)
from .events import CallbackError, CallbackWarning
from .history import History, Series
from .state import TrainState
from .state_file import ResumeWarning, read_checkpoint, write_checkpoint
from .trainer import Trainer

__all__ = ["Trainer", "History", "Series", "TrainState", "ResumeWarning", "callbacks",
           "CallbackError", "CallbackWarning",
           "read_checkpoint", "write_checkpoint", "ModelCheckpoint", "EarlyStopping",
           "CSVLogger", "JSONLLogger", "LRMonitor", "ReduceOnStall", "ProgressBar", "HTMLReport"]
