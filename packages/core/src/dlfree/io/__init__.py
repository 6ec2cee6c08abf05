"""Files: safetensors tensors, model files (`dl.save`/`dl.load`) and atomic writes."""

from .atomic import atomic_write
from .model import load, save
from .tensors import load_tensors, read_metadata, save_tensors

__all__ = ["atomic_write", "load", "save", "load_tensors", "read_metadata", "save_tensors"]
