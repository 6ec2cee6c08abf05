"""The integrity digest of a safetensors file dl.free writes: SHA-256 over its metadata and
every tensor (name, dtype, shape, bytes), stored in the metadata and checked when read, so a
flipped byte anywhere is refused instead of loading as different weights."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

import numpy as np

from ..errors import CheckpointError

DIGEST_KEY = "dlfree_sha256"


def digest(metadata: Mapping[str, str], arrays: Mapping[str, np.ndarray]) -> str:
    """The hex digest of `metadata` (without a digest entry) and `arrays`, by name order."""
    own = {k: v for k, v in metadata.items() if k != DIGEST_KEY}
    h = hashlib.sha256(json.dumps(own, sort_keys=True).encode("utf-8", "surrogatepass"))
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode("utf-8", "surrogatepass"))
        h.update(a.data)
    return h.hexdigest()


def _damaged_digest_key(metadata: Mapping[str, str]) -> str | None:
    """A key one character away from the digest's: the digest entry, damaged."""
    for key in metadata:
        if len(key) == len(DIGEST_KEY) and key != DIGEST_KEY and \
                sum(a != b for a, b in zip(key, DIGEST_KEY)) == 1:
            return key
    return None


def verify(path, metadata: dict, arrays: Mapping[str, np.ndarray], required: bool = False,
           check: bool = True) -> dict:
    """`metadata` without its digest entry, once `arrays` and it are found to match the
    digest (when `check`); a mismatch, a damaged digest entry, or no digest where one is
    `required`, is a `CheckpointError` naming `path`. A file without a digest passes."""
    metadata = dict(metadata)
    expected = metadata.pop(DIGEST_KEY, None)
    if expected is None:
        damaged = _damaged_digest_key(metadata)
        if damaged is not None:
            raise CheckpointError(f"{path}: the metadata entry {damaged!r} is the digest's, "
                                  "damaged (the file is corrupt)")
        if required:
            raise CheckpointError(f"{path} has no digest, so its contents cannot be trusted")
    elif check and digest(metadata, arrays) != expected:
        raise CheckpointError(f"{path}: the data does not match its digest (the file is "
                              "corrupt; it changed after dl.free wrote it)")
    return metadata
