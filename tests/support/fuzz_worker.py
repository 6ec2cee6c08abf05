"""The fuzzing child process: limits its own address space, then reads one case (JSON) per
line from stdin, loads it as its kind says and writes {"outcome": ...} (see support.fuzz)."""

from __future__ import annotations

import json
import resource
import sys
import warnings
from pathlib import Path

import dlfree as dl
from dlfree.io import load_tensors

from support.fuzz import weights_equal

_references: dict = {}


def _reference(kind: str, path: str):
    if (kind, path) not in _references:
        _references[kind, path] = LOADERS[kind](path)
    return _references[kind, path]


def _tensors(path: str):
    return load_tensors(path)


def _model(path: str):
    model = dl.load(path)
    if isinstance(model, dict):
        return model, None
    return model.state_dict(), (type(model).__name__, model.training, repr(model))


def _state(path: str):
    from dlfree.train import read_checkpoint
    from dlfree.train.resume import restore
    from dlfree.train.state_schema import check_fits

    from support.resume_run import build

    trainer, data = build()
    state, tensors = read_checkpoint(path)
    check_fits(trainer, state, tensors, path)
    restore(trainer, data, state, tensors, path)
    return tensors, json.dumps(state, sort_keys=True)


def _hf(path: str):
    from dlfree import hf

    model = hf.AutoModel.from_pretrained(path)
    return model.state_dict(), type(model).__name__


LOADERS = {"tensors": _tensors, "model": _model, "state": _state, "hf": _hf}


def _same(kind: str, got, want) -> bool:
    return weights_equal(got[0], want[0]) and got[1] == want[1]


def outcome(case: dict) -> str:
    kind, path = case["kind"], case["path"]
    want = _reference(kind, case["reference"])
    try:
        got = LOADERS[kind](path)
    except dl.CheckpointError as e:
        return "refused" if Path(path).name in str(e) else "refused-without-naming-the-file"
    except Exception as e:
        return f"error:{type(e).__name__}:{str(e)[:120]}"
    return "equivalent" if _same(kind, got, want) else "different"


def main() -> None:
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        print(json.dumps({"outcome": outcome(json.loads(line))}), flush=True)


if __name__ == "__main__":
    main()
