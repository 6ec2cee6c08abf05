"""What type checkers see for `dlfree.utils.data`: it is `dlfree.data` itself (aliased in
`dlfree/utils/__init__.py`), so this stub re-exports that package."""

from dlfree.data import *  # noqa: F403
