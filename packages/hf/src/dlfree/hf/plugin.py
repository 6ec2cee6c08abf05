"""The hook implementations through which dlfree-hf registers its model families and
commands, exactly as a third-party plugin would (entry point `hf` in the `dlfree` group)."""

from __future__ import annotations

from dlfree import hookimpl
