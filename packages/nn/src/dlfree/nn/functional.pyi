"""What type checkers see for `dlfree.nn.functional`: it is `dlfree.functional` itself
(aliased in `dlfree/nn/__init__.py`), so this stub re-exports that module."""

from dlfree.functional import *  # noqa: F403
