"""Built-in training callbacks; each is registered by name through `dlfree_register_callbacks`
(so `Trainer(callbacks=["progress", ("early_stopping", {"patience": 3})])` works)."""

from .dashboard import Dashboard
from .early_stopping import EarlyStopping
from .loggers import CSVLogger, JSONLLogger
from .lr_monitor import LRMonitor, ReduceOnStall
from .mlflow_logger import MLflowLogger
from .model_checkpoint import ModelCheckpoint
from .progress import ProgressBar
from .report import HTMLReport
from .tensorboard_logger import TensorBoardLogger

# The name each callback is registered under, for Trainer(callbacks=[name, ...]).
NAMES = {
    "model_checkpoint": ModelCheckpoint,
    "progress": ProgressBar,
    "csv_logger": CSVLogger,
    "jsonl_logger": JSONLLogger,
    "early_stopping": EarlyStopping,
    "lr_monitor": LRMonitor,
    "reduce_on_stall": ReduceOnStall,
    "html_report": HTMLReport,
    "dashboard": Dashboard,
    "tensorboard": TensorBoardLogger,
    "mlflow": MLflowLogger,
}

__all__ = ["ModelCheckpoint", "EarlyStopping", "CSVLogger", "JSONLLogger", "LRMonitor",
           "ReduceOnStall", "ProgressBar", "HTMLReport", "Dashboard", "TensorBoardLogger",
           "MLflowLogger", "NAMES"]
