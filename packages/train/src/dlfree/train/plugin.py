"""The hook implementations through which dlfree-train adds the training events and registers
its callbacks, exactly as a third-party plugin would (entry point `train` in the `dlfree`
group)."""

from __future__ import annotations

from dlfree import hookimpl


@hookimpl
def dlfree_add_hookspecs(pluginmanager):
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def dlfree_register_callbacks(register):
    from .callbacks import NAMES

    for name, callback in NAMES.items():
        register(callback, name=name)
