"""Training checkpoint files: a run's full state in one safetensors file, written atomically,
checked by its digest and a schema when read, and rotated so the previous good one survives.

Tensors (weights, gradients, optimizer statistics) are stored as tensors; everything else
is JSON in the file's metadata, where tensors nested in it (an optimizer's state) appear as
references to the stored ones. No pickle: reading a checkpoint never runs code.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

from dlfree.errors import CheckpointError
from dlfree.io import load_tensors, save_tensors
from dlfree.io.atomic import remove_stale_temporaries
from dlfree.io.limits import parse_json
from dlfree.tensor import Tensor
from dlfree.version import __version__

import numpy as np

FORMAT = "dlfree-training-checkpoint"
FORMAT_VERSION = "1"
# The metadata entries `write_checkpoint` writes: any other is damage.
METADATA_KEYS = {"format", "format_version", "dlfree_version", "state"}
_NAME = re.compile(r"^checkpoint-(\d+)\.safetensors$")


class ResumeWarning(UserWarning):
    """A training checkpoint was refused (corrupt or truncated) and an older one is used."""


def checkpoint_path(folder: str | os.PathLike, global_step: int) -> Path:
    """Where the checkpoint taken at `global_step` lives in `folder`."""
    return Path(folder) / f"checkpoint-{global_step:09d}.safetensors"


def checkpoint_paths(folder: str | os.PathLike) -> list[Path]:
    """The training checkpoints in `folder`, newest (highest step) first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


# ------------------------------------------------------------------------- packing
def pack(value, where: str, tensors: dict):
    """`value` as JSON-able data, its tensors and arrays moved into `tensors` under names
    derived from `where`; tuples, non-string keys and NumPy scalars survive the round trip."""
    if isinstance(value, Tensor | np.ndarray):
        tensors[where] = value
        return {"$tensor" if isinstance(value, Tensor) else "$array": where}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple):
        return {"$tuple": [pack(v, f"{where}/{i}", tensors) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [pack(v, f"{where}/{i}", tensors) for i, v in enumerate(value)]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: pack(v, f"{where}/{k}", tensors) for k, v in value.items()}
        return {"$items": [[pack(k, f"{where}/key{i}", tensors), pack(v, f"{where}/{k}", tensors)]
                           for i, (k, v) in enumerate(value.items())]}
    raise CheckpointError(f"cannot write {where} into a training checkpoint: a "
                          f"{type(value).__name__} is not JSON data, a tuple or a tensor; "
                          "give state_dict() plain values")


def unpack(value, tensors: dict):
    """Invert `pack`, taking referenced tensors from `tensors` (NumPy arrays for `$array`)."""
    if isinstance(value, list):
        return [unpack(v, tensors) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, body), = value.items()
        if tag == "$tensor":
            return tensors[body]
        if tag == "$array":
            return tensors[body].numpy()
        if tag == "$tuple":
            return tuple(unpack(v, tensors) for v in body)
        if tag == "$items":
            return {unpack(k, tensors): unpack(v, tensors) for k, v in body}
    return {k: unpack(v, tensors) for k, v in value.items()}


# ------------------------------------------------------------------------- the file
def _host(value) -> np.ndarray:
    if isinstance(value, Tensor):
        return np.ascontiguousarray(value.detach().cpu().numpy())
    return np.ascontiguousarray(value)


def write_checkpoint(path: str | os.PathLike, state: dict, tensors: dict) -> None:
    """Write `state` (JSON-able; may reference `tensors` by name) and `tensors` to `path`
    atomically (temporary file, fsync, rename), with the digest of both that `save_tensors`
    adds and `read_checkpoint` requires."""
    arrays = {name: _host(t) for name, t in tensors.items()}
    metadata = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "dlfree_version": __version__, "state": json.dumps(state)}
    save_tensors(arrays, path, metadata)


def read_checkpoint(path: str | os.PathLike) -> tuple[dict, dict]:
    """Read (state, tensors) from a file `write_checkpoint` wrote, on the CPU. A truncated,
    corrupt or foreign file (no digest, or one its contents do not match; state JSON beyond
    the limits of `dlfree.io.limits`) is a `CheckpointError` naming the file and the
    problem. (A Trainer checks the state's schema and fit, `state_schema`, before use.)"""
    tensors, metadata = load_tensors(path, require_digest=True)
    if metadata.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a dl.free training checkpoint (its format is "
                              f"{metadata.get('format')!r}, expected {FORMAT!r})")
    if metadata.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path}: training checkpoint format version "
                              f"{metadata.get('format_version')!r} is not supported (this "
                              f"dl.free reads version {FORMAT_VERSION})")
    unknown = sorted(set(metadata) - METADATA_KEYS)
    if unknown:
        raise CheckpointError(f"{path}: the training checkpoint's metadata has unknown entries "
                              f"{', '.join(map(repr, unknown))} (the file is damaged)")
    state = parse_json(metadata.get("state", ""), f"{path}: the state in the metadata")
    return state, tensors


def newest_valid(folder: str | os.PathLike, accept=None) -> tuple[Path, dict, dict] | None:
    """The newest readable checkpoint in `folder` as (path, state, tensors), or None if the
    folder holds none; `accept(state, tensors, path)`, when given, may refuse one more by
    raising `CheckpointError` (its state does not fit the Trainer). Each newer file that is
    refused is reported with a `ResumeWarning`; if every file is refused, that is a
    `CheckpointError`."""
    paths = checkpoint_paths(folder)
    problems = []
    for path in paths:
        try:
            state, tensors = read_checkpoint(path)
            if accept is not None:
                accept(state, tensors, path)
        except CheckpointError as e:
            problems.append(str(e))
            warnings.warn(f"refusing training checkpoint {path}: {e}; trying the previous one",
                          ResumeWarning, stacklevel=3)
            continue
        return path, state, tensors
    if problems:
        raise CheckpointError(f"no usable training checkpoint in {folder}: "
                              + "; ".join(problems) + ". Delete these files (or choose "
                              "another checkpoint_dir) to start the run over")
    return None


def prune(folder: str | os.PathLike, keep: int, written: Path) -> None:
    """Keep `written` (the checkpoint just written) and the `keep - 1` newest before it in
    `folder`; delete the rest, however many a run killed before it could prune left, and
    newer ones too (refused, or of a timeline the run resumed before), then the temporary
    files of writers that died."""
    paths = checkpoint_paths(folder)
    older = [p for p in paths if p.name < written.name]
    for path in [p for p in paths if p.name > written.name] + older[keep - 1:]:
        path.unlink(missing_ok=True)
    clean_temporaries(folder)


def clean_temporaries(folder: str | os.PathLike) -> None:
    """Remove the temporary files that killed writers left in a checkpoint folder."""
    remove_stale_temporaries(folder, _NAME)
