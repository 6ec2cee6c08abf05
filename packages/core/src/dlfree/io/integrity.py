"""The integrity digest of a safetensors file dl.free writes: SHA-256 over its metadata and
every tensor (name, dtype, shape, bytes), stored in the metadata and checked when read, so a
flipped byte anywhere is refused instead of loading as different weights."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

import numpy as np

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
