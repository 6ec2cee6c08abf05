"""Downloading dataset files: checked against a SHA-256 checksum, written atomically,
so a failed or corrupt download never leaves a file behind."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

_CHUNK = 1 << 20


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, as 64 lowercase hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def download_url(url: str, path: str | os.PathLike, sha256: str, timeout: float = 60.0) -> Path:
    """Fetch `url` (http, https or file) to `path`, unless `path` already holds a file
    with that checksum. The bytes go to a temporary file in the same folder, which replaces
    `path` only when its SHA-256 matches; otherwise it is removed and a ValueError names
    both checksums. Network errors raise OSError naming the URL."""
    if not isinstance(sha256, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        raise ValueError(f"download_url: sha256 must be 64 hex digits, got {sha256!r}")
    sha256 = sha256.lower()
    path = Path(path)
    if path.is_file() and file_sha256(path) == sha256:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # urllib pulls in http.client and ssl; import it only when something is downloaded.
    import urllib.error
    import urllib.request

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    while chunk := response.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            except urllib.error.URLError as e:
                raise OSError(f"download {url} failed: {e.reason}") from e
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != sha256:
            raise ValueError(f"download {url}: the SHA-256 of the data is {digest.hexdigest()}, "
                             f"not the expected {sha256}; the file was not kept")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def download_from_mirrors(name: str, mirrors: Sequence[str], folder: str | os.PathLike,
                          sha256: str) -> Path:
    """Download the file `name` into `folder` from the first of `mirrors` (URL prefixes) that
    serves it with the right checksum; the error lists what each mirror did."""
    failures = []
    for mirror in mirrors:
        try:
            return download_url(mirror + name, Path(folder) / name, sha256)
        except (OSError, ValueError) as e:
            failures.append(f"  {mirror + name}: {e}")
    raise OSError(f"could not download {name} from any mirror (no network?):\n"
                  + "\n".join(failures))
