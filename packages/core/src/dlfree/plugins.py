"""The plugin manager: finds `dlfree` entry points lazily and isolates broken plugins.

Nothing is loaded at `import dlfree`; the first registry access loads the core's
built-in plugin and every distribution in the `dlfree` entry-point group (or only those
named in DLFREE_PLUGINS, or none with DLFREE_DISABLE_PLUGIN_AUTOLOAD=1). A plugin may add
hooks of its own (`dlfree_add_hookspecs`), as dlfree-train adds the training events. A
plugin that fails to import or to register is skipped with a warning naming its
distribution (DLFREE_STRICT_PLUGINS=1 makes that an error), and the others keep working.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import threading
import warnings

import pluggy

from . import hookspecs
from .errors import PluginError

__all__ = ["register", "unregister", "manager", "reload", "plugin_info", "PluginWarning"]

ENTRY_POINT_GROUP = "dlfree"


class PluginWarning(UserWarning):
    """A plugin was skipped because it failed to import or to register."""


class _State:
    def __init__(self):
        self.lock = threading.RLock()
        self.pm: pluggy.PluginManager | None = None
        # plugin name -> {"distribution", "version", "entry_point"} for the listing
        self.info: dict[str, dict] = {}
        self.generation = 0  # bumped on every change, so registries know to refill


_state = _State()


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def report_failure(dist: str, what: str, error: BaseException) -> None:
    """Warn about (or, when strict, raise for) a plugin that could not be used."""
    message = f"dl.free plugin from distribution {dist!r} {what}: {type(error).__name__}: {error}"
    if _env_flag("DLFREE_STRICT_PLUGINS"):
        raise PluginError(message + " (DLFREE_STRICT_PLUGINS is set)") from error
    warnings.warn(message + "; it is skipped", PluginWarning, stacklevel=3)


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    if _env_flag("DLFREE_DISABLE_PLUGIN_AUTOLOAD"):
        return
    only = {d.strip() for d in os.environ.get("DLFREE_PLUGINS", "").split(",") if d.strip()}
    importlib.invalidate_caches()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else ep.value.split(":")[0]
        if only and dist not in only and _normalize(dist) not in {_normalize(d) for d in only}:
            continue
        if pm.has_plugin(ep.name) or pm.is_blocked(ep.name):
            continue
        try:
            _register_whole(pm, ep.load(), ep.name)
        except Exception as e:
            report_failure(dist, f"failed to load (entry point {ep.name} = {ep.value})", e)
            continue
        _state.info[ep.name] = {
            "distribution": dist,
            "version": ep.dist.version if ep.dist is not None else None,
            "entry_point": f"{ep.name} = {ep.value}",
        }


def _register_whole(pm: pluggy.PluginManager, plugin, name: str | None) -> str | None:
    """`pm.register`, undone when it raises after pluggy had taken the plugin in (its
    `dlfree_add_hookspecs` failed), so that none of its hooks stay behind."""
    known = pm.is_registered(plugin)
    try:
        return pm.register(plugin, name=name)
    except Exception:
        if not known and pm.is_registered(plugin):
            pm.unregister(plugin)
        raise


def _normalize(dist: str) -> str:
    return dist.lower().replace("_", "-").replace(".", "-")


def manager() -> pluggy.PluginManager:
    """The plugin manager, loading the plugins on first use."""
    with _state.lock:
        if _state.pm is None:
            from . import builtin_plugins
            from .version import __version__

            pm = pluggy.PluginManager("dlfree")
            pm.add_hookspecs(hookspecs)
            pm.register(builtin_plugins, name="dlfree")
            _state.info = {"dlfree": {"distribution": "dlfree", "version": __version__,
                                      "entry_point": None}}
            _state.pm = pm
            # Historic: each plugin adds its hookspecs as it is registered, the entry points
            # below (inside the try that skips a broken one) and user plugins later alike.
            pm.hook.dlfree_add_hookspecs.call_historic(kwargs={"pluginmanager": pm})
            _load_entry_points(pm)
            _state.generation += 1
        return _state.pm


def register(plugin, name: str | None = None) -> str:
    """Register a plugin object defined in user code (a module, class or instance).

    Returns the plugin's name, which `unregister` accepts.
    """
    pm = manager()
    with _state.lock:
        name = _register_whole(pm, plugin, name)
        if name is None:
            raise PluginError(f"plugin {plugin!r} is already registered or blocked")
        module = getattr(plugin, "__module__", None) or getattr(plugin, "__name__", "")
        _state.info[name] = {"distribution": f"<{module or 'user code'}>", "version": None,
                             "entry_point": None}
        _state.generation += 1
    return name


def unregister(plugin_or_name) -> None:
    """Remove a plugin given by object or name; its names leave the registries."""
    pm = manager()
    with _state.lock:
        if isinstance(plugin_or_name, str):
            plugin = pm.get_plugin(plugin_or_name)
            name = plugin_or_name
        else:
            plugin, name = plugin_or_name, pm.get_name(plugin_or_name)
        if plugin is None or name is None:
            raise PluginError(f"no registered plugin {plugin_or_name!r}")
        pm.unregister(plugin, name=name)
        _state.info.pop(name, None)
        _state.generation += 1


def reload() -> None:
    """Forget every loaded plugin and discover them again (sees newly installed ones)."""
    with _state.lock:
        _state.pm = None
    manager()


def plugin_info(name: str) -> dict:
    """Distribution, version and entry point of a loaded plugin."""
    manager()
    return dict(_state.info[name])


def distribution_of(name: str) -> str:
    """The distribution behind a loaded plugin (its own name if it came another way)."""
    manager()
    return _state.info.get(name, {}).get("distribution", name)


def distribution_loaded(dist: str) -> bool:
    """Whether a plugin of distribution `dist` is loaded (installed, and not left out by
    DLFREE_PLUGINS or DLFREE_DISABLE_PLUGIN_AUTOLOAD)."""
    manager()
    wanted = _normalize(dist)
    return any(_normalize(info["distribution"]) == wanted for info in _state.info.values())


def generation() -> int:
    """A counter that changes whenever the set of plugins changes."""
    manager()
    return _state.generation


def hook_names(plugin) -> list[str]:
    """The hooks a registered plugin implements."""
    pm = manager()
    return sorted(h.name for h in pm.get_hookcallers(plugin) or [])
