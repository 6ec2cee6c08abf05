"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

# `.<target name>.<writer's pid>.<random>.tmp`: the pid tells a dead writer's leftovers.
_TEMPORARY = re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.[^.]+\.tmp$")


def _umask() -> int:
    """The process's umask, read without changing it where Linux allows."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore (not thread safe, but brief)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` through a temporary file in the same folder, flushed to disk
    (fsync) and renamed over the target; the folder entry is synced too. On any failure
    the target is untouched and the temporary file is removed. The file gets the mode a
    plain `open(path, "wb")` would give (the old file's mode when replacing one), not the
    private mode of temporary files."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a folder; give a file name")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the folder {folder} does not exist")
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.{os.getpid()}.",
                               suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # not every filesystem lets a folder be fsynced
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # (another user's process; a pid no system has)
        return pid < 2**22
    return True


def remove_stale_temporaries(folder: str | os.PathLike, target: re.Pattern) -> list[Path]:
    """Remove the temporary files `atomic_write` left in `folder` for targets whose names
    match `target`, when their writer is dead or they are older than the newest complete
    target (a killed writer's; the pid may since be another process's). Returns them."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    entries = list(folder.iterdir())
    done = [p.stat().st_mtime for p in entries if target.match(p.name) and p.is_file()]
    newest = max(done, default=None)
    removed = []
    for p in entries:
        m = _TEMPORARY.match(p.name)
        if m is None or not target.match(m.group("target")):
            continue
        with contextlib.suppress(FileNotFoundError):
            if not _alive(int(m.group("pid"))) or \
                    (newest is not None and p.stat().st_mtime < newest):
                p.unlink()
                removed.append(p)
    return removed
