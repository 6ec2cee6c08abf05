"""The dl.free error hierarchy: one root, each subclass also a built-in it refines."""


class DLFreeError(Exception):
    """Root of every error dl.free raises on purpose."""


class ShapeError(DLFreeError, ValueError):
    """Operand shapes that an op cannot combine."""


class DeviceError(DLFreeError, RuntimeError):
    """A device that is missing, unusable, or mixed with another in one op."""


class DTypeError(DLFreeError, TypeError):
    """A dtype an op does not accept."""


class AutogradError(DLFreeError, RuntimeError):
    """Misuse of the autograd graph (freed graph, modified saved tensor, non-scalar root)."""


class LinAlgError(DLFreeError, ValueError):
    """A matrix a decomposition or solve cannot take: singular, or not positive-definite."""


class PluginError(DLFreeError, RuntimeError):
    """A plugin that cannot be loaded, or a registry name that is unknown or taken twice."""


class CheckpointError(DLFreeError, ValueError):
    """A model or checkpoint file that is corrupt, truncated or does not fit."""


class MissingPluginError(PluginError, CheckpointError):
    """A file that needs a layer (or another registered thing) no installed plugin provides:
    a `PluginError` for what to install, and a `CheckpointError` for the file's readers."""


class DistributedError(DLFreeError, RuntimeError):
    """A collective that cannot run: ranks that disagree on it, a process group that is
    missing, or a peer that did not answer in time."""


class ExportError(DLFreeError, ValueError):
    """A model that cannot be written as the static graph asked for: an op without an ONNX
    mapping, or attributes that the target format cannot express."""
