"""The training events of one Trainer: its callbacks in a private pluggy manager (plain methods
named dlfree_train_* count as hook implementations), then every registered plugin's."""

from __future__ import annotations

import inspect
import types

from dlfree import plugins, registry

import pluggy

from . import hookspecs

PREFIX = "dlfree_train_"
EVENTS = tuple(sorted(name for name in dir(hookspecs) if name.startswith(PREFIX)))


def _hookable(plugin, name: str) -> bool:
    attr = inspect.getattr_static(plugin, name, None)
    return isinstance(attr, staticmethod | classmethod | types.MethodType) or \
        inspect.isfunction(attr)


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


class _CallbackManager(pluggy.PluginManager):
    """A pluggy manager that also takes unmarked methods named after a training event."""

    def parse_hookimpl_opts(self, plugin, name: str):
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(PREFIX) and _hookable(plugin, name):
            return {}
        return opts


def resolve(callback):
    """A callback object from what `Trainer(callbacks=...)` accepts: an object, a name
    registered through `dlfree_register_callbacks`, or (name, {constructor arguments})."""
    if isinstance(callback, str):
        return registry.callbacks.create(callback)
    if isinstance(callback, tuple):
        if len(callback) != 2 or not isinstance(callback[0], str) or \
                not isinstance(callback[1], dict):
            raise TypeError(f"Trainer: a callback given as a tuple must be (name, {{arguments}}),"
                            f" got {callback!r}")
        return registry.callbacks.create(callback[0], **callback[1])
    if isinstance(callback, type):
        raise TypeError(f"Trainer: callback {callback.__name__} is a class; pass an instance "
                        f"({callback.__name__}(...)) or its registered name")
    return callback


class Events:
    """Calls each training event on the callbacks, in the order given, then on the plugins
    registered with dl.free (entry points or `dl.plugins.register`)."""

    def __init__(self, callbacks):
        self.callbacks = [resolve(c) for c in callbacks]
        self._pm = _CallbackManager("dlfree")
        self._pm.add_hookspecs(hookspecs)
        # pluggy calls the last registered first; registering in reverse keeps the given order
        for i, callback in reversed(list(enumerate(self.callbacks))):
            try:
                self._pm.register(callback, name=f"callback-{i}")
            except ValueError:
                raise ValueError(f"Trainer: callback {callback!r} is given twice; pass each "
                                 "callback object once") from None
            except pluggy.PluginValidationError as e:
                raise TypeError(f"Trainer: callback {type(callback).__name__} has a hook method "
                                f"that does not fit its event: {_one_line(e)}") from None
        try:
            self._pm.check_pending()
        except pluggy.PluginValidationError as e:
            raise TypeError(f"Trainer: {_one_line(e)}; the training events are "
                            f"{', '.join(EVENTS)}") from None

    def leave_out_rank_zero_only(self) -> None:
        """Stop calling the callbacks marked `rank_zero_only` (those that write progress,
        logs, reports and model files): on every rank but 0 of a distributed run, so that
        each output is written once. `callbacks` still lists them."""
        for callback in self.callbacks:
            if getattr(callback, "rank_zero_only", False) and self._pm.is_registered(callback):
                self._pm.unregister(callback)

    def __call__(self, event: str, **kwargs) -> None:
        getattr(self._pm.hook, event)(**kwargs)
        # (absent when no loaded plugin knows the event: dlfree-train's own plugin was left
        # out by DLFREE_PLUGINS or DLFREE_DISABLE_PLUGIN_AUTOLOAD, and no plugin implements it)
        hook = getattr(plugins.manager().hook, event, None)
        if hook is not None:
            hook(**kwargs)
