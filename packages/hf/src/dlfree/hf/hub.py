"""Checkpoint folders: finding one (a local folder or a hub repo id through huggingface_hub),
reading its config and safetensors weights (single or sharded), and writing them back.

Only safetensors are read: a `pytorch_model.bin` is a pickle, and unpickling runs code.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from dlfree import CheckpointError
from dlfree.io import atomic_write, save_tensors

import numpy as np
import safetensors

__all__ = ["resolve_folder", "read_config", "weight_files", "read_weights", "write_weights",
           "parse_size", "CONFIG_NAME", "WEIGHTS_NAME", "WEIGHTS_INDEX_NAME"]

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"
PICKLE_NAMES = ("pytorch_model.bin", "pytorch_model.bin.index.json")

# What a model or tokenizer needs from a repo: no pickles, no other frameworks' weights.
DOWNLOAD_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.model"]


def _offline() -> bool:
    """HF_HUB_OFFLINE as set now (huggingface_hub reads it once, at import)."""
    from huggingface_hub import constants

    value = os.environ.get("HF_HUB_OFFLINE")
    if value is not None:
        return value.strip().upper() in ("1", "ON", "YES", "TRUE")
    return bool(constants.HF_HUB_OFFLINE)


def resolve_folder(name_or_path: str | os.PathLike, revision: str | None = None,
                   cache_dir: str | os.PathLike | None = None,
                   local_files_only: bool = False) -> Path:
    """The local folder holding a checkpoint: `name_or_path` itself if it is a folder,
    otherwise a hub repo id (`org/name`) fetched through huggingface_hub's cache (only
    its config, tokenizer and safetensors files). With `local_files_only`, or
    HF_HUB_OFFLINE=1, nothing is downloaded and the cache must already hold it."""
    path = Path(os.fspath(name_or_path)).expanduser()
    if path.is_dir():
        return path
    name = os.fspath(name_or_path)
    if path.exists():
        raise CheckpointError(f"{name} is a file; from_pretrained expects a checkpoint folder "
                              "(with config.json and model.safetensors) or a hub repo id")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    offline = local_files_only or _offline()
    try:
        folder = snapshot_download(name, revision=revision, cache_dir=cache_dir,
                                   local_files_only=offline, allow_patterns=DOWNLOAD_PATTERNS)
    except HFValidationError:
        raise CheckpointError(f"{name!r} is neither a local folder nor a valid hub repo id "
                              "('org/name')") from None
    except LocalEntryNotFoundError:
        where = "HF_HUB_OFFLINE is set" if _offline() else "local_files_only=True"
        raise CheckpointError(
            f"{name!r} is not a local folder, and the hub repo {name!r}"
            f"{f' (revision {revision!r})' if revision else ''} is not in the cache "
            f"{cache_dir or '(the default cache)'}; {where}, so nothing was downloaded. "
            "Download it once with network access, or pass the folder's path") from None
    except Exception as e:  # the hub's network and HTTP errors vary across versions
        raise CheckpointError(f"could not fetch {name!r} from the hub: {type(e).__name__}: "
                              f"{e}") from e
    return Path(folder)


def read_config(folder: Path) -> dict:
    """The parsed `config.json` of a checkpoint folder."""
    path = Path(folder) / CONFIG_NAME
    if not path.is_file():
        raise CheckpointError(f"{folder} has no {CONFIG_NAME}; a checkpoint folder needs one "
                              "(transformers' save_pretrained writes it)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


# ---------------------------------------------------------------------- reading
def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a checkpoint: `model.safetensors`, or the shards that
    `model.safetensors.index.json` names. A folder with only PyTorch pickles is refused."""
    folder = Path(folder)
    single, index = folder / WEIGHTS_NAME, folder / WEIGHTS_INDEX_NAME
    if single.is_file():
        return [single]
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
            raise CheckpointError(f"{index} is not a valid shard index (a JSON object with a "
                                  f"'weight_map' of weight name to file): {e}") from None
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise CheckpointError(f"{index} names shards that are not in {folder}: "
                                  f"{', '.join(missing)}")
        return [folder / s for s in shards]
    pickles = [n for n in PICKLE_NAMES if (folder / n).is_file()]
    if pickles:
        raise CheckpointError(
            f"{folder} holds only {pickles[0]}, a PyTorch pickle; dl.free does not read "
            "pickles, because unpickling runs code from the file. Convert it to safetensors "
            "with transformers: `AutoModel.from_pretrained(folder).save_pretrained(out_folder, "
            "safe_serialization=True)` (or use the repo's model.safetensors, if it has one)")
    raise CheckpointError(f"{folder} has no {WEIGHTS_NAME} and no {WEIGHTS_INDEX_NAME}: there "
                          "are no weights to load")


def _bfloat16_as_float32(path: Path, name: str) -> np.ndarray:
    """NumPy has no bfloat16: read the raw 16 bits and widen them to float32 exactly."""
    with open(path, "rb") as f:
        header_size = int.from_bytes(f.read(8), "little")
        entry = json.loads(f.read(header_size))[name]
        start, end = entry["data_offsets"]
        f.seek(8 + header_size + start)
        raw = np.frombuffer(f.read(end - start), dtype="<u2")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(entry["shape"])


def read_weights(folder: Path) -> dict[str, np.ndarray]:
    """Every weight of a checkpoint folder as host NumPy arrays, by name (bfloat16 weights
    widened to float32). A corrupt file raises CheckpointError naming it."""
    state: dict[str, np.ndarray] = {}
    for path in weight_files(folder):
        try:
            with safetensors.safe_open(os.fspath(path), framework="numpy") as f:
                for name in f.keys():  # noqa: SIM118 (a safe_open handle is not a dict)
                    if f.get_slice(name).get_dtype() == "BF16":
                        state[name] = _bfloat16_as_float32(path, name)
                    else:
                        state[name] = f.get_tensor(name)
        except safetensors.SafetensorError as e:
            raise CheckpointError(f"{path} is not a readable safetensors file (corrupt or "
                                  f"truncated?): {e}") from None
    return state


# ---------------------------------------------------------------------- writing
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_size(size: int | str) -> int:
    """Bytes from an int or a string such as "5GB" (10**9, as transformers) or "200MiB"."""
    if isinstance(size, int) and not isinstance(size, bool):
        if size <= 0:
            raise ValueError(f"max_shard_size must be positive, got {size}")
        return size
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(size))
    unit = match.group(2).upper() if match else None
    if unit not in _UNITS or float(match.group(1)) <= 0:
        raise ValueError(f"max_shard_size must be a positive number of bytes or a size such as "
                         f"'5GB', '200MB', '512KiB'; got {size!r}")
    return int(float(match.group(1)) * _UNITS[unit])


_OWN_FILE = re.compile(r"model(-\d{5}-of-\d{5})?\.safetensors(\.index\.json)?")


def _shards(state: Mapping[str, np.ndarray], limit: int) -> list[dict[str, np.ndarray]]:
    shards: list[dict[str, np.ndarray]] = [{}]
    used = 0
    for name, array in state.items():
        if shards[-1] and used + array.nbytes > limit:  # a weight larger than limit gets its own
            shards.append({})
            used = 0
        shards[-1][name] = array
        used += array.nbytes
    return shards


def write_weights(state: Mapping[str, np.ndarray], folder: Path,
                  max_shard_size: int | str = "5GB") -> list[Path]:
    """Write `state` as `model.safetensors`, or, above `max_shard_size`, as shards
    `model-0000k-of-0000n.safetensors` with `model.safetensors.index.json`. Weight files a
    previous save left in the folder are removed, so no stale shard is read later."""
    folder = Path(folder)
    shards = _shards(state, parse_size(max_shard_size))
    if len(shards) == 1:
        names = [WEIGHTS_NAME]
    else:
        names = [f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
                 for k in range(len(shards))]
    for stale in folder.iterdir():
        if _OWN_FILE.fullmatch(stale.name) and stale.name not in names and stale.is_file():
            stale.unlink()
    written = []
    for name, shard in zip(names, shards):
        save_tensors(shard, folder / name, metadata={"format": "pt"})  # transformers needs "pt"
        written.append(folder / name)
    if len(shards) > 1:
        index = {"metadata": {"total_size": int(sum(a.nbytes for a in state.values()))},
                 "weight_map": {weight: file for file, shard in zip(names, shards)
                                for weight in shard}}
        atomic_write(folder / WEIGHTS_INDEX_NAME,
                     (json.dumps(index, indent=2, sort_keys=True) + "\n").encode())
        written.append(folder / WEIGHTS_INDEX_NAME)
    return written
