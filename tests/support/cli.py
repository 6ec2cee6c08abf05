"""The `dlfree` command run as a user runs it: `python -m dlfree ...` in a fresh process."""

from __future__ import annotations

import subprocess
import sys

TIMEOUT_S = 120


def run_dlfree(*argv) -> subprocess.CompletedProcess:
    """Run `dlfree ARGV...` with this Python: the finished process, its exit status in
    `returncode`, its output in `stdout` and `stderr` (text)."""
    return subprocess.run([sys.executable, "-m", "dlfree", *map(str, argv)],
                          capture_output=True, text=True, timeout=TIMEOUT_S)
