"""The training loop: `Trainer` (fit / evaluate / predict) with event hooks, `History` with
trend queries, resumable training checkpoints, the built-in callbacks, and the live
dashboard (`Monitor`)."""

from . import callbacks
from .callbacks import (
    CSVLogger,
    Dashboard,
    EarlyStopping,
    HTMLReport,
    JSONLLogger,
    LRMonitor,
    MLflowLogger,
    ModelCheckpoint,
    ProgressBar,
    ReduceOnStall,
    TensorBoardLogger,
)
from .dashboard import Monitor
from .events import CallbackError, CallbackWarning
from .history import History, Series
from .state import TrainState
from .state_file import ResumeWarning, read_checkpoint, write_checkpoint
from .trainer import Trainer

__all__ = ["Trainer", "History", "Series", "TrainState", "ResumeWarning", "callbacks",
           "CallbackError", "CallbackWarning",
           "read_checkpoint", "write_checkpoint", "ModelCheckpoint", "EarlyStopping",
           "CSVLogger", "JSONLLogger", "LRMonitor", "ReduceOnStall", "ProgressBar", "HTMLReport",
           "Dashboard", "Monitor", "TensorBoardLogger", "MLflowLogger"]
