"""The fuzzing cases of each file kind, built from a valid file of that kind written in a
folder: byte damage (`support.fuzz.byte_mutations`) plus resealed semantic damage that only
the readers' schema, range and fit checks can find."""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
from pathlib import Path

import dlfree as dl
from dlfree import nn

import numpy as np

from support.fuzz import Case, byte_mutations, read_raw, reseal, run_all, sample, write_cases

KINDS = ("tensors", "model", "state", "hf")


# ------------------------------------------------------------------ valid references
def reference_tensors(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    path = folder / "tensors.safetensors"
    dl.io.save_tensors({"w": rng.normal(size=(4, 3)).astype("float32"),
                        "steps": np.arange(5), "flag": np.array([True, False]),
                        "scalar": np.array(2.5)}, path, {"note": "hello"})
    return path


def reference_model(folder: Path) -> Path:
    dl.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(4, 3))
    path = folder / "model.safetensors"
    dl.save(model, path)
    return path


def reference_state(folder: Path) -> Path:
    from dlfree.train.state_file import checkpoint_paths

    from support.resume_run import build

    trainer, data = build(folder / "run", max_epochs=None, max_steps=3)
    trainer.fit(data)
    path = folder / "state.safetensors"
    shutil.copy(checkpoint_paths(folder / "run")[0], path)
    return path


def reference_hf(folder: Path) -> Path:
    from dlfree import hf

    config = hf.AutoConfig.for_model("bert", hidden_size=8, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=12,
                                     vocab_size=20, max_position_embeddings=10)
    dl.manual_seed(0)
    model = hf.AutoModel.from_config(config)
    model.save_pretrained(folder / "hf")
    model.save_pretrained(folder / "hf-sharded", max_shard_size=600)
    return folder / "hf"


REFERENCES = {"tensors": reference_tensors, "model": reference_model,
              "state": reference_state, "hf": reference_hf}


# ------------------------------------------------------------------ semantic damage
def _deep(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def _model_variants(tensors: dict, metadata: dict) -> list[tuple[str, dict, dict]]:
    arch = json.loads(metadata["architecture"])
    out = []

    def with_arch(label, new):
        out.append((f"arch-{label}", tensors, {**metadata, "architecture": json.dumps(new)
                                               if not isinstance(new, str) else new}))

    for name in ("os.system", "posix.system", "builtins.eval", "__import__", ""):
        with_arch(f"module-{name or 'empty'}", {**arch, "$module": name})
    for label, new in (("list", []), ("text", json.dumps("Sequential")), ("empty", {}),
                       ("no-config", {"$module": arch["$module"]}),
                       ("extra-key", {**arch, "code": "print(1)"}),
                       ("config-list", {**arch, "config": [1, 2]}),
                       ("depth-70", {**arch, "config": {"x": _deep(70)}}),
                       ("depth-bomb", "[" * 200_000 + "]" * 200_000),
                       ("duplicate-key", json.dumps(arch)[:-1] + ', "$module": "Linear"}'),
                       ("not-json", "{'$module': 'Sequential'}")):
        with_arch(label, new)
    first = arch["config"]["args"][0] if "args" in arch["config"] else None
    if first is not None:
        key = next(k for k, v in first["config"].items() if isinstance(v, int))
        for label, value in (("huge", 10**9), ("giant", 10**30), ("negative", -5),
                             ("text", "five"), ("float", 2.5), ("null", None),
                             ("tag", {"$pickle": "cos\nsystem\n"}),
                             ("tensor-bomb", {"$tensor": {"shape": [2**20, 2**20],
                                                          "dtype": "float32"}}),
                             ("dtype", {"$dtype": "float1024"}),
                             ("float", {"$float": "1e999"}),
                             ("device", {"$device": "quantum:7"}),
                             ("unknown-arg", None)):
            changed = copy.deepcopy(arch)
            layer = changed["config"]["args"][0]["config"]
            if label == "unknown-arg":
                layer["run"] = "os.system('x')"
            else:
                layer[key] = value
            with_arch(f"layer-{key}-{label}", changed)
    for label, value in (("yes", "yes"), ("one", "1"), ("deep", json.dumps(_deep(100)))):
        out.append((f"training-{label}", tensors, {**metadata, "training": value}))
    out.append(("format-missing", tensors, {k: v for k, v in metadata.items()
                                            if k != "format"}))
    out.append(("format-version-99", tensors, {**metadata, "format_version": "99"}))
    out.append(("format-other", tensors, {**metadata, "format": "dlfree-training-checkpoint"}))
    out += _weight_variants(tensors, metadata)
    return out


def _weight_variants(tensors: dict, metadata: dict) -> list[tuple[str, dict, dict]]:
    name = next(k for k, v in tensors.items() if v.ndim == 2)
    out = [(f"weights-missing-{name}", {k: v for k, v in tensors.items() if k != name},
            metadata),
           ("weights-extra", {**tensors, "extra.weight": np.zeros(3, "float32")}, metadata)]
    for dtype in ("int64", "float64", "float16", "bool"):
        out.append((f"weights-{name}-{dtype}", {**tensors, name: tensors[name].astype(dtype)},
                    metadata))
    out.append((f"weights-{name}-reshaped", {**tensors, name: tensors[name].reshape(-1)},
                metadata))
    return out


def _state_variants(tensors: dict, metadata: dict) -> list[tuple[str, dict, dict]]:
    state = json.loads(metadata["state"])
    out = []

    def edit(label, change, new_tensors=None):
        changed = copy.deepcopy(state)
        change(changed)
        out.append((f"state-{label}", new_tensors or tensors,
                    {**metadata, "state": json.dumps(changed)}))

    def setter(*keys, value):
        def change(s):
            target = s
            for k in keys[:-1]:
                target = target[k]
            target[keys[-1]] = value
        return change

    for key in ("epoch", "global_step", "batch_index"):
        for label, value in (("negative", -1), ("text", "3"), ("float", 1.5), ("null", None),
                             ("bool", True)):
            edit(f"trainer-{key}-{label}", setter("trainer", key, value=value))
    edit("trainer-batch-past-epoch", setter("trainer", "batch_index", value=10**6))
    edit("trainer-steps-per-epoch-0", setter("trainer", "steps_per_epoch", value=0))
    for key, value in (("group_size", 0), ("accumulated", 99), ("loss_count", -3),
                       ("batches_done", "no"), ("loss_sum", "NaN"), ("accumulated_loss", [])):
        edit(f"progress-{key}", setter("progress", key, value=value))
    edit("progress-nan-loss", setter("progress", "loss_sum", value=float("nan")))
    for key in ("trainer", "progress", "rng", "model", "grads", "optimizer", "history"):
        edit(f"missing-{key}", lambda s, key=key: s.pop(key))
    edit("extra-top-level", setter("exec", value="import os"))
    edit("trainer-extra-key", setter("trainer", "code", value=1))
    edit("rng-bad-state", setter("rng", "state", value={"state": "x"}))
    edit("rng-missing-seed", lambda s: s["rng"].pop("seed"))
    edit("rng-other-generator", setter("rng", "bit_generator", value="MT19937"))
    edit("history-unequal", setter("history", "step_loss", value={"values": [1.0],
                                                                  "steps": []}))
    edit("history-not-series", setter("history", "loss", value=5))
    edit("model-dangling-reference", lambda s: s["model"].update(
        {next(iter(s["model"])): {"$tensor": "nope"}}))
    edit("optimizer-items-not-list", setter("optimizer", "state", value={"$items": 5}))
    edit("optimizer-lr-text", lambda s: s["optimizer"]["param_groups"][0].update(lr="fast"))
    edit("optimizer-groups-missing", lambda s: s["optimizer"].pop("param_groups"))
    weight = next(k for k, v in tensors.items() if k.startswith("model/") and v.ndim == 2)
    edit("model-weight-int64", lambda s: None,
         {**tensors, weight: tensors[weight].astype("int64")})
    edit("model-weight-reshaped", lambda s: None,
         {**tensors, weight: tensors[weight].reshape(-1)})
    grads = [k for k in tensors if k.startswith("grad/")]
    if grads:
        edit("grad-reshaped", lambda s: None,
             {**tensors, grads[0]: tensors[grads[0]].reshape(-1)[:1]})
    edit("grad-of-unknown-parameter",
         lambda s: s["grads"].update({"99.weight": {"$tensor": "grad/99.weight"}}),
         {**tensors, "grad/99.weight": np.zeros(3, "float32")})
    moments = [k for k in tensors if k.startswith("optimizer/") and tensors[k].ndim]
    for label, change in (("int64", lambda a: a.astype("int64")),
                          ("float64", lambda a: a.astype("float64")),
                          ("reshaped", lambda a: a.reshape(-1)[:2].copy())):
        edit(f"optimizer-moment-{label}", lambda s: None,
             {**tensors, moments[0]: change(tensors[moments[0]])})
    return out


def _semantic(folder: Path, kind: str, reference: Path) -> list[Case]:
    tensors, metadata = read_raw(reference)
    variants = {"model": _model_variants, "state": _state_variants}.get(kind)
    if variants is None:
        return []
    out = folder / f"{kind}-semantic"
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for i, (label, new_tensors, new_metadata) in enumerate(variants(tensors, metadata)):
        path = out / f"{i:05d}.safetensors"
        reseal(path, new_tensors, new_metadata)
        cases.append(Case(label, kind, str(path), str(reference)))
    return cases


# ------------------------------------------------------------------ HF folders
def _hf_copy(reference: Path, target: Path) -> Path:
    shutil.copytree(reference, target, symlinks=True)
    return target


def _hf_cases(folder: Path, reference: Path, rng: random.Random, randoms: int) -> list[Case]:
    out = folder / "hf-cases"
    out.mkdir(parents=True, exist_ok=True)
    config = json.loads((reference / "config.json").read_text())
    cases = []

    def case(label, build):
        target = _hf_copy(reference if not label.startswith("index") else
                          reference.with_name("hf-sharded"), out / f"{len(cases):05d}")
        build(target)
        cases.append(Case(label, "hf", str(target), str(reference)))

    def config_text(text: bytes):
        return lambda t: (t / "config.json").write_bytes(text)

    for key, value in (("hidden_size", 10**7), ("hidden_size", 10**9), ("vocab_size", -1),
                       ("vocab_size", 10**8), ("num_hidden_layers", "two"),
                       ("num_hidden_layers", 10**6), ("num_attention_heads", 0),
                       ("intermediate_size", 10**7), ("layer_norm_eps", "x"),
                       ("model_type", "os.system"), ("hidden_act", "eval"),
                       ("max_position_embeddings", 10**9), ("id2label", [1, 2])):
        case(f"config-{key}-{value}", config_text(json.dumps({**config, key: value}).encode()))
    case("config-no-model-type", config_text(json.dumps(
        {k: v for k, v in config.items() if k != "model_type"}).encode()))
    for label, text in (("depth-bomb", b"[" * 100_000 + b"]" * 100_000),
                        ("size-bomb", b'{"x": "' + b"y" * 20_000_000 + b'"}'),
                        ("list", b"[]"), ("not-utf8", b'{"\xff": 1}'), ("empty", b""),
                        ("duplicate", json.dumps(config).encode()[:-1] + b', "hidden_size": 9}')):
        case(f"config-{label}", config_text(text))

    outside = folder / "outside"
    outside.mkdir(exist_ok=True)
    shutil.copy(reference / "model.safetensors", outside / "model.safetensors")
    shutil.copy(reference / "config.json", outside / "config.json")

    def replace(name, make):
        def build(t):
            (t / name).unlink()
            make(t / name)
        return build

    case("path-config-symlink-out", replace("config.json", lambda p: p.symlink_to(
        outside / "config.json")))
    case("path-weights-symlink-out", replace("model.safetensors", lambda p: p.symlink_to(
        outside / "model.safetensors")))
    case("path-weights-folder", replace("model.safetensors", lambda p: p.mkdir()))
    case("path-config-folder", replace("config.json", lambda p: p.mkdir()))
    case("path-weights-fifo", replace("model.safetensors", os.mkfifo))
    case("path-config-fifo", replace("config.json", os.mkfifo))
    case("path-weights-device", replace("model.safetensors", lambda p: p.symlink_to(
        "/dev/zero")))
    case("path-config-dangling", replace("config.json", lambda p: p.symlink_to(
        outside / "nothing.json")))

    index_name = "model.safetensors.index.json"
    sharded = reference.with_name("hf-sharded")
    index = json.loads((sharded / index_name).read_text())
    first = next(iter(index["weight_map"]))
    for label, shard in (("parent", "../outside/model.safetensors"),
                         ("absolute", str(outside / "model.safetensors")),
                         ("subfolder", "sub/model.safetensors"), ("empty", ""),
                         ("dot", "."), ("missing", "model-99999-of-99999.safetensors")):
        changed = copy.deepcopy(index)
        changed["weight_map"][first] = shard
        case(f"index-{label}", lambda t, c=changed: (t / index_name).write_text(json.dumps(c)))
    for label, text in (("depth-bomb", "[" * 100_000 + "]" * 100_000),
                        ("map-list", json.dumps({"weight_map": [1]})),
                        ("map-values", json.dumps({"weight_map": {first: 5}})),
                        ("not-object", "5")):
        case(f"index-{label}", lambda t, x=text: (t / index_name).write_text(x))

    weights = (reference / "model.safetensors").read_bytes()
    for label, data in byte_mutations(weights, rng, randoms):
        case(f"weights-{label}", lambda t, d=data: (t / "model.safetensors").write_bytes(d))
    return cases


# ------------------------------------------------------------------ all of a kind
def build_cases(folder: Path, kind: str, seed: int, randoms: int) -> list[Case]:
    """Every case of `kind`, from a fresh valid file in `folder`; `randoms` random
    truncations and flips per region; the same `seed` gives the same cases."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    reference = REFERENCES[kind](folder)
    if kind == "hf":
        control = folder / "hf-control"
        shutil.copytree(reference, control)
        return [Case("control", kind, str(control), str(reference))] + \
            _hf_cases(folder, reference, rng, randoms)
    cases = write_cases(folder / f"{kind}-bytes", kind, reference,
                        [("control", reference.read_bytes())] +
                        byte_mutations(reference.read_bytes(), rng, randoms))
    return cases + _semantic(folder, kind, reference)


def fuzz(folder: Path, kind: str, seed: int, randoms: int, count: int | None = None) -> dict:
    """Build the cases of `kind`, keep `count` of them (the unchanged control always), run
    them in the memory-limited child; returns `run_all`'s result with "cases" added."""
    cases = build_cases(folder, kind, seed, randoms)
    chosen = cases[:1] + sample(cases[1:], None if count is None else count - 1, seed)
    return {**run_all(chosen), "cases": len(chosen)}
