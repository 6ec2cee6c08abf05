"""What the core itself provides through the hooks, exactly as a third party would."""

from __future__ import annotations

from .backends import CupyBackend, NumpyBackend
from .hookspecs import hookimpl


@hookimpl
def dlfree_register_backends(register):
    register(NumpyBackend)
    register(CupyBackend)


@hookimpl
def dlfree_register_onnx_ops(register):
    from .onnx import converters

    for name, convert in converters().items():
        register(convert, name)


@hookimpl
def dlfree_register_commands(cli):
    # Imported here: building the `dlfree` command's parser must stay cheap.
    from .onnx.command import register_commands

    register_commands(cli)
