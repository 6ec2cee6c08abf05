"""The training events of one Trainer: its callbacks in a private pluggy manager (plain methods
named dlfree_train_* count as hook implementations), then every registered plugin's. An
exception a hook raises is re-raised as a `CallbackError` naming the callback or plugin."""

from __future__ import annotations

import inspect
import types
import warnings

from dlfree import plugins, registry
from dlfree.errors import DLFreeError

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


ON_CALLBACK_ERROR = ("raise", "warn")


class CallbackError(DLFreeError):
    """A training-event hook raised: `who` names the callback or plugin, `event` the event,
    and the original exception is the cause. The error is also an instance of the original
    exception's type where that type allows (so `except KeyError` still catches it)."""

    who: str = ""
    event: str = ""

    def __str__(self) -> str:  # (plain text even when it is also a KeyError, which quotes)
        return str(self.args[0]) if self.args else ""


class CallbackWarning(UserWarning):
    """A training-event hook raised and `Trainer(on_callback_error="warn")` went on."""


def _wrapped(error: Exception, who: str, event: str) -> Exception:
    text = error.args[0] if len(error.args) == 1 and isinstance(error.args[0], str) else error
    message = f"{who} raised in {event}: {type(error).__name__}: {text}"
    wrapped: Exception
    try:
        kind = type(f"CallbackError[{type(error).__name__}]", (CallbackError, type(error)),
                    {"__module__": __name__})
        wrapped = kind(message)
    except Exception:  # a type that cannot be combined or takes other arguments
        wrapped = CallbackError(message)
    wrapped.who, wrapped.event = who, event
    return wrapped


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

    def __init__(self, callbacks, on_error: str = "raise"):
        if on_error not in ON_CALLBACK_ERROR:
            raise ValueError(f"Trainer: on_callback_error must be 'raise' or 'warn', got "
                             f"{on_error!r}")
        self.on_error = on_error
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
        self._call(getattr(self._pm.hook, event), event, kwargs, self._callback_name)
        # (absent when no loaded plugin knows the event: dlfree-train's own plugin was left
        # out by DLFREE_PLUGINS or DLFREE_DISABLE_PLUGIN_AUTOLOAD, and no plugin implements it)
        hook = getattr(plugins.manager().hook, event, None)
        if hook is not None:
            self._call(hook, event, kwargs, _plugin_name)

    def _callback_name(self, plugin_name: str) -> str:
        index = int(plugin_name.rpartition("-")[2])
        return f"callback {type(self.callbacks[index]).__name__} (trainer.callbacks[{index}])"

    def _call(self, hook, event: str, kwargs: dict, name_of) -> None:
        """Each implementation in pluggy's order, so that the one that raises is known (a
        hook wrapper, which sees the whole call, is named as the wrapper's plugin)."""
        impls = hook.get_hookimpls()
        wrappers = [i for i in impls if i.hookwrapper or getattr(i, "wrapper", False)]
        calls = [(wrappers[-1], lambda: hook(**kwargs))] if wrappers else \
            [(i, lambda i=i: i.function(*[kwargs[a] for a in i.argnames]))
             for i in reversed(impls)]
        for impl, call in calls:
            try:
                call()
            except Exception as e:
                error = _wrapped(e, name_of(impl.plugin_name), event)
                if self.on_error == "raise":
                    raise error from e
                warnings.warn(f"{error}; going on (on_callback_error='warn')", CallbackWarning,
                              stacklevel=4)


def _plugin_name(plugin_name: str) -> str:
    try:
        dist = plugins.plugin_info(plugin_name)["distribution"]
    except KeyError:  # (registered on the manager directly, not through dl.plugins)
        dist = "unknown"
    return f"plugin {plugin_name!r} (distribution {dist})"
