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
from dlfree.io.integrity import verify
from dlfree.io.limits import check_file, check_safetensors_header, parse_json, read_json_file

import numpy as np
import safetensors

__all__ = ["resolve_folder", "read_config", "config_from", "weight_files", "read_weights",
           "check_sizes", "write_weights", "parse_size", "CONFIG_NAME", "WEIGHTS_NAME",
           "WEIGHTS_INDEX_NAME"]

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"
PICKLE_NAMES = ("pytorch_model.bin", "pytorch_model.bin.index.json")

# A config.json or shard index is a few kilobytes; this is far above any real one.
MAX_CONFIG_BYTES = 16 * 2**20
# No config size (hidden, vocabulary, positions, layers) comes near this in any real model.
MAX_CONFIG_INT = 2**24
# Sizes that are dimensions of the weights, so a config is checked against the checkpoint.
WEIGHT_DIMENSIONS = ("hidden_size", "intermediate_size", "vocab_size")
# Counts of blocks, each of which holds at least one weight.
BLOCK_COUNTS = ("num_hidden_layers",)

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
    """The parsed `config.json` of a checkpoint folder (a regular file inside it, JSON within
    the limits of `dlfree.io.limits`)."""
    path = Path(folder) / CONFIG_NAME
    if not path.exists() and not path.is_symlink():
        raise CheckpointError(f"{folder} has no {CONFIG_NAME}; a checkpoint folder needs one "
                              "(transformers' save_pretrained writes it)")
    data = read_json_file(path, inside=folder, max_bytes=MAX_CONFIG_BYTES)
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def config_from(config_cls, data: dict, folder: Path, **overrides):
    """`config_cls.from_dict(data, **overrides)`, a value it refuses being a `CheckpointError`
    naming the folder's config.json."""
    try:
        return config_cls.from_dict(data, **overrides)
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"{Path(folder) / CONFIG_NAME}: {e}") from e


def check_sizes(config, state: Mapping[str, np.ndarray], folder: Path) -> None:
    """Refuse, before a model is allocated, a config whose sizes no real model has (above
    MAX_CONFIG_INT) or that the checkpoint's weights contradict (a hidden, intermediate or
    vocabulary size that is no dimension of any weight)."""
    where = Path(folder) / CONFIG_NAME
    for name in sorted(vars(config)):
        value = getattr(config, name)
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_CONFIG_INT:
            raise CheckpointError(f"{where}: {name}={value} is beyond any real model (at most "
                                  f"{MAX_CONFIG_INT:,}); the config is damaged")
    dimensions = {d for a in state.values() for d in a.shape}
    if not dimensions:
        return
    for name in BLOCK_COUNTS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > len(state):
            raise CheckpointError(f"{where}: {name}={value} blocks cannot come from the "
                                  f"{len(state)} weights in {folder}")
    for name in WEIGHT_DIMENSIONS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value not in dimensions:
            raise CheckpointError(f"{where}: {name}={value} is no dimension of any weight in "
                                  f"{folder}; the config does not belong to these weights")


# ---------------------------------------------------------------------- reading
def _shard_index(index: Path, folder: Path) -> list[Path]:
    """The shard files an index names: plain names of regular files inside `folder`."""
    data = read_json_file(index, inside=folder, max_bytes=MAX_CONFIG_BYTES)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
        raise CheckpointError(f"{index} is not a valid shard index (a JSON object with a "
                              "'weight_map' of weight name to file)")
    shards = sorted(set(weight_map.values()))
    outside = [s for s in shards if Path(s).name != s or s in ("", ".", "..")]
    if outside:
        raise CheckpointError(f"{index} names shards outside the model folder: "
                              f"{', '.join(outside)}; an index may name only files in {folder}")
    missing = [s for s in shards if not (folder / s).exists()]
    if missing:
        raise CheckpointError(f"{index} names shards that are not in {folder}: "
                              f"{', '.join(missing)}")
    return [check_file(folder / s, inside=folder) for s in shards]


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a checkpoint: `model.safetensors`, or the shards that
    `model.safetensors.index.json` names (each a regular file inside the folder). A folder
    with only PyTorch pickles is refused."""
    folder = Path(folder)
    single, index = folder / WEIGHTS_NAME, folder / WEIGHTS_INDEX_NAME
    if single.exists() or single.is_symlink():
        return [check_file(single, inside=folder)]
    if index.exists() or index.is_symlink():
        return _shard_index(index, folder)
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
    size = path.stat().st_size
    with open(path, "rb") as f:
        header_size = int.from_bytes(f.read(8), "little")
        if header_size > size - 8:
            raise CheckpointError(f"{path}: the header length runs past the end of the file")
        entry = parse_json(f.read(header_size), f"{path}: the header").get(name)
        if not isinstance(entry, dict):
            raise CheckpointError(f"{path}: the header has no entry for {name!r}")
        start, end = entry.get("data_offsets", (None, None))
        shape = entry.get("shape")
        if not (isinstance(start, int) and isinstance(end, int) and isinstance(shape, list)
                and all(isinstance(d, int) and d >= 0 for d in shape)
                and 0 <= start <= end <= size - 8 - header_size
                and end - start == 2 * int(np.prod(shape, dtype=np.int64))):
            raise CheckpointError(f"{path}: the header entry of {name!r} has offsets or a "
                                  "shape that do not fit the file")
        f.seek(8 + header_size + start)
        raw = np.frombuffer(f.read(end - start), dtype="<u2")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(shape)


def read_weights(folder: Path) -> dict[str, np.ndarray]:
    """Every weight of a checkpoint folder as host NumPy arrays, by name (bfloat16 weights
    widened to float32). A corrupt file raises CheckpointError naming it, as does one whose
    data does not match the digest dl.free wrote with it."""
    state: dict[str, np.ndarray] = {}
    for path in weight_files(folder):
        check_safetensors_header(path)
        try:
            with safetensors.safe_open(os.fspath(path), framework="numpy") as f:
                metadata = dict(f.metadata() or {})
                arrays = {}
                for name in f.keys():  # noqa: SIM118 (a safe_open handle is not a dict)
                    if f.get_slice(name).get_dtype() == "BF16":
                        arrays[name] = _bfloat16_as_float32(path, name)
                    else:
                        arrays[name] = f.get_tensor(name)
        except CheckpointError:
            raise
        except Exception as e:  # SafetensorError, and what a hostile header makes NumPy raise
            raise CheckpointError(f"{path} is not a readable safetensors file (corrupt or "
                                  f"truncated?): {e}") from None
        verify(path, metadata, arrays)  # (dl.free's own files carry a digest; others pass)
        state.update(arrays)
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
