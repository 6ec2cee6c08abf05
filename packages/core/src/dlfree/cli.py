"""The `dlfree` command (also `python -m dlfree`): `plugins`, `env`, and plugins' commands."""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import json
import os
import platform
import sys

from . import plugins, registry
from .errors import DLFreeError


def reports_errors(name, errors: tuple = (DLFreeError, ValueError, OSError)):
    """A decorator for a subcommand's function: bad input (one of `errors`: a missing or
    damaged file, a wrong argument) ends the command with "dlfree <name(args)>: error:
    <message>" on stderr and exit status 1, not a traceback. Plugins' commands use it too."""
    def decorate(command):
        @functools.wraps(command)
        def run(args) -> int:
            try:
                return command(args)
            except errors as e:
                print(f"dlfree {name(args)}: error: {e}", file=sys.stderr)
                return 1
        return run
    return decorate


def _plugin_rows() -> list[dict]:
    pm = plugins.manager()
    registered: dict[str, dict[str, list[str]]] = {}
    for reg in registry.ALL:
        reg.names()  # fill
        for name, entry in reg._entries.items():
            registered.setdefault(entry.plugin, {}).setdefault(reg.kind, []).append(name)
    rows = []
    for name, plugin in sorted(pm.list_name_plugin()):
        info = plugins.plugin_info(name)
        rows.append({"name": name, **info, "hooks": plugins.hook_names(plugin),
                     "registers": {k: sorted(v) for k, v in registered.get(name, {}).items()}})
    return rows


def _distributed_lines() -> list[str]:
    """The MPI library and NCCL that dlfree.distributed would run on (MPI not initialized)."""
    from .distributed.info import engine_info, engine_lines

    return engine_lines(engine_info())


def cmd_plugins(args) -> int:
    rows = _plugin_rows()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        version = f" {row['version']}" if row["version"] else ""
        print(f"{row['name']}  ({row['distribution']}{version})")
        print(f"  hooks: {', '.join(row['hooks']) or '-'}")
        for kind, names in row["registers"].items():
            print(f"  {kind}: {', '.join(names)}")
    print("\n".join(_distributed_lines()))
    return 0


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cmd_env(args) -> int:
    from . import cuda
    from .version import __version__

    lines = [
        f"dlfree: {__version__}",
        f"python: {sys.version.split()[0]} ({platform.platform()})",
    ]
    for dist in ("numpy", "pluggy", "safetensors", "attrs", "dlfree-nn", "dlfree-optim",
                 "dlfree-metrics", "dlfree-hf", "cupy-cuda12x", "cupy-cuda13x", "cupy"):
        lines.append(f"{dist}: {_version(dist)}")
    lines.append("backends:")
    for name, backend_cls in registry.backends.items():
        backend = backend_cls()
        reason = backend.unavailable_reason() if hasattr(backend, "unavailable_reason") else None
        state = "available" if reason is None else f"unavailable ({reason})"
        lines.append(f"  {name} (device type {backend_cls.device_type}): {state}")
    devices = ["cpu"] + [f"cuda:{i}" for i in range(cuda.device_count())]
    lines.append(f"devices: {', '.join(devices)}")
    lines.append(_cpu_threads())
    lines += _distributed_lines()
    print("\n".join(lines))
    return 0


def _cpu_threads() -> str:
    """dl.free's intra-op threads and NumPy's BLAS threads, with the OpenBLAS idle timeout
    that decides whether the former get the cores (docs/performance.md)."""
    from .backends import openblas
    from .threads import get_num_threads

    functions = openblas.api()
    blas_threads = f", {functions[0]()} threads" if functions else ""
    timeout = os.environ.get("OPENBLAS_THREAD_TIMEOUT", "unset")
    return (f"cpu threads: {get_num_threads()} (dl.set_num_threads); "
            f"BLAS: {openblas.numpy_blas() or 'unknown'}"
            f"{blas_threads}, OPENBLAS_THREAD_TIMEOUT={timeout}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dlfree", description="dl.free command line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("plugins", help="list installed plugins, their hooks and names")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_plugins)
    e = sub.add_parser("env", help="versions, backends, devices and distributed engines (for "
                                   "bug reports)")
    e.set_defaults(func=cmd_env)
    plugins.manager().hook.dlfree_register_commands(cli=sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    return int(args.func(args) or 0)
