"""What every reader checks before trusting a file: that the path is a regular file (inside
its folder, where one is given), and that JSON is within limits of size, depth and entries
before it is parsed, so a hostile file is refused by a limit, never by `RecursionError` or
`MemoryError`."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import numpy as np

from ..errors import CheckpointError

# JSON in metadata and configs: far above what any real file needs, far below what hurts.
MAX_JSON_BYTES = 256 * 2**20
MAX_JSON_DEPTH = 64
MAX_JSON_ENTRIES = 2_000_000

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_file(path: str | os.PathLike, inside: str | os.PathLike | None = None) -> Path:
    """`path` if it names an existing regular file (through symlinks), else `CheckpointError`
    saying what it is. With `inside`, the file it resolves to must lie in that folder: a
    symlink or a `../` name that leads out of a model folder is refused."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except OSError as e:
        raise CheckpointError(f"{path} cannot be read: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        raise CheckpointError(f"{path} is {_kind(mode)}; a model or checkpoint is read from a "
                              "regular file")
    if inside is not None:
        folder = Path(inside).resolve()
        if not path.resolve().is_relative_to(folder):
            raise CheckpointError(f"{path} leads out of the model folder {folder} (to "
                                  f"{path.resolve()}); a model folder's files must lie in it")
    return path


def _structure(data: bytes) -> tuple[int, int]:
    """(deepest nesting, number of containers and separators) of JSON text, strings aside."""
    skeleton = np.frombuffer(_STRING.sub(b'""', data), dtype=np.uint8)
    opens = (skeleton == ord("[")) | (skeleton == ord("{"))
    closes = (skeleton == ord("]")) | (skeleton == ord("}"))
    depth = np.cumsum(opens.astype(np.int64) - closes.astype(np.int64))
    entries = int(opens.sum() + (skeleton == ord(",")).sum())
    return (int(depth.max()) if depth.size else 0), entries


def _refuse_duplicates(pairs: list) -> dict:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {twice!r} appears twice in one object")
    return result


def parse_json(text: str | bytes, where: str, max_bytes: int = MAX_JSON_BYTES,
               max_depth: int = MAX_JSON_DEPTH, max_entries: int = MAX_JSON_ENTRIES):
    """`text` parsed as JSON once it is within the limits; `where` names it in the
    `CheckpointError` that any problem (limit, syntax, duplicate key, encoding) raises."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if len(data) > max_bytes:
        raise CheckpointError(f"{where}: {len(data):,} bytes of JSON exceed the limit of "
                              f"{max_bytes:,}")
    depth, entries = _structure(data)
    if depth > max_depth:
        raise CheckpointError(f"{where}: JSON nested {depth} deep exceeds the limit of "
                              f"{max_depth}")
    if entries > max_entries:
        raise CheckpointError(f"{where}: {entries:,} JSON entries exceed the limit of "
                              f"{max_entries:,}")
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_refuse_duplicates)
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeError are these
        raise CheckpointError(f"{where} is unreadable (not valid JSON: {e})") from None


# safetensors' own bound on a header
MAX_HEADER_BYTES = 100 * 2**20


def check_safetensors_header(path: Path) -> dict:
    """The header of a safetensors file, parsed with the limits above (duplicate names
    refused) after its length field is checked against the file: the reader then never
    chooses between two entries of one name."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        prefix = f.read(8)
        length = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
        if length < 2 or length > min(size - 8, MAX_HEADER_BYTES):
            raise CheckpointError(f"{path} is not a readable safetensors file (corrupt or "
                                  f"truncated?): its header length field ({length}) does not "
                                  f"fit a file of {size} bytes")
        header = parse_json(f.read(length), f"{path}: the safetensors header",
                            max_bytes=MAX_HEADER_BYTES)
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: the safetensors header is not a JSON object")
    return header


def read_json_file(path: str | os.PathLike, inside: str | os.PathLike | None = None,
                   max_bytes: int = MAX_JSON_BYTES):
    """A JSON file (a config, a shard index) checked by `check_file` and parsed with limits;
    its size is checked before it is read."""
    path = check_file(path, inside)
    size = path.stat().st_size
    if size > max_bytes:
        raise CheckpointError(f"{path}: {size:,} bytes exceed the limit of {max_bytes:,} for a "
                              "JSON file")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CheckpointError(f"{path} cannot be read: {e.strerror or e}") from None
    return parse_json(data, str(path), max_bytes=max_bytes)
