"""Open binary files beside paths for `dl.save` / `dl.load`.

A stream goes through a temporary file, so the path writers and readers (atomic writes,
every check made on reading) serve streams unchanged rather than being written twice.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def is_stream(f) -> bool:
    """True for an open file object (something with `read` or `write`), False for a path."""
    return not isinstance(f, str | os.PathLike) and (hasattr(f, "read") or hasattr(f, "write"))


def check_target(f, what: str) -> None:
    """Refuse what is neither a path nor a binary file, saying what is valid."""
    if not (isinstance(f, str | os.PathLike) or is_stream(f)):
        raise TypeError(f"{what}: f must be a path (str or os.PathLike) or an open binary "
                        f"file, got {type(f).__name__}")


@contextmanager
def _scratch() -> Iterator[str]:
    fd, path = tempfile.mkstemp(suffix=".safetensors", prefix="dlfree-")
    os.close(fd)
    try:
        yield path
    finally:
        os.unlink(path)


def write_through_file(stream, write: Callable[[str], None]) -> None:
    """Call `write(path)` on a temporary file, then copy its bytes into `stream`."""
    if isinstance(stream, io.TextIOBase):
        raise TypeError("dl.save: the file is open in text mode; open it with 'wb'")
    if not hasattr(stream, "write"):
        raise TypeError(f"dl.save: {type(stream).__name__} has no write(); open the file "
                        "for writing in binary mode ('wb')")
    with _scratch() as path:
        write(path)
        with open(path, "rb") as f:
            data = f.read()
    stream.write(data)


@contextmanager
def read_through_file(stream) -> Iterator[str]:
    """A temporary path holding what is left to read of `stream`."""
    if not hasattr(stream, "read"):
        raise TypeError(f"dl.load: {type(stream).__name__} has no read(); open the file "
                        "for reading in binary mode ('rb')")
    data = stream.read()
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"dl.load: reading the file gave {type(data).__name__}, not bytes; "
                        "open it in binary mode ('rb')")
    with _scratch() as path:
        with open(path, "wb") as f:
            f.write(data)
        yield path
