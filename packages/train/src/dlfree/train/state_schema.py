"""What a training checkpoint's state must be before a Trainer is touched: the entries
`resume.capture` writes and nothing else, counters in range, every tensor reference present,
and every tensor of the dtype and shape of the parameter, gradient or optimizer statistic it
restores. A refusal is a `CheckpointError`, so `fit` falls back to the previous checkpoint."""

from __future__ import annotations

import math

from dlfree.errors import CheckpointError
from dlfree.io.schema import check_tensors_fit

from .state import EpochProgress, TrainState
from .state_file import unpack

STATE_KEYS = {"trainer", "progress", "model", "grads", "optimizer", "scheduler", "scaler",
              "data", "rng", "history", "callbacks"}
_RNG_KEYS = {"seed", "bit_generator", "state", "has_uint32", "uinteger"}


class _Check:
    def __init__(self, path):
        self.path = path

    def fail(self, where: str, problem: str):
        raise CheckpointError(f"{self.path}: the training state is invalid at {where}: "
                              f"{problem}")

    def keys(self, data, where: str, required: set) -> dict:
        if not isinstance(data, dict):
            self.fail(where, f"expected an object, got {type(data).__name__}")
        missing, unknown = required - set(data), set(data) - required
        if missing or unknown:
            self.fail(where, "; ".join(part for part in (
                f"missing {', '.join(sorted(missing))}" if missing else "",
                f"unknown entries {', '.join(sorted(map(repr, unknown)))}" if unknown else "")
                if part))
        return data

    def mapping(self, data, where: str) -> dict:
        if not isinstance(data, dict):
            self.fail(where, f"expected an object, got {type(data).__name__}")
        return data

    def integer(self, data: dict, key: str, where: str, least: int = 0,
                optional: bool = False) -> int | None:
        value = data[key]
        if value is None and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            self.fail(f"{where}.{key}", f"expected an int >= {least}"
                                        f"{' or null' if optional else ''}, got {value!r:.40}")
        return value

    def number(self, data: dict, key: str, where: str) -> None:
        value = data[key]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or \
                math.isnan(value):
            self.fail(f"{where}.{key}", f"expected a number, got {value!r:.40}")

    def references(self, value, tensors: dict, where: str) -> None:
        """Every `$tensor`/`$array` reference in `value` names a stored tensor."""
        stack = [(value, where)]
        while stack:
            item, at = stack.pop()
            if isinstance(item, list):
                stack.extend((v, f"{at}[{i}]") for i, v in enumerate(item))
            elif isinstance(item, dict):
                if len(item) == 1 and next(iter(item)) in ("$tensor", "$array"):
                    name = next(iter(item.values()))
                    if not isinstance(name, str) or name not in tensors:
                        self.fail(at, f"it refers to the tensor {name!r:.60}, which the file "
                                      "does not hold")
                    continue
                if len(item) == 1 and next(iter(item)) in ("$tuple", "$items"):
                    body = next(iter(item.values()))
                    if not isinstance(body, list) or (next(iter(item)) == "$items" and not all(
                            isinstance(pair, list) and len(pair) == 2 for pair in body)):
                        self.fail(at, f"{next(iter(item))} must be a list (of pairs)")
                stack.extend((v, f"{at}.{k}") for k, v in item.items())


def check_structure(state, tensors: dict, path) -> None:
    """Refuse a state that is not what `resume.capture` writes, or holds values out of range."""
    c = _Check(path)
    c.keys(state, "the top level", STATE_KEYS)
    trainer = c.keys(state["trainer"], "trainer", {f.name for f in TrainState.__attrs_attrs__})
    for key in ("epoch", "global_step", "batch_index"):
        c.integer(trainer, key, "trainer")
    for key in ("epochs", "max_steps", "steps_per_epoch"):
        c.integer(trainer, key, "trainer", 1, optional=True)
    if trainer["steps_per_epoch"] is not None and \
            trainer["batch_index"] > trainer["steps_per_epoch"]:
        c.fail("trainer.batch_index", f"{trainer['batch_index']} batches done of an epoch of "
                                      f"{trainer['steps_per_epoch']}")
    progress = c.keys(state["progress"], "progress",
                      {f.name for f in EpochProgress.__attrs_attrs__})
    for key in ("loss_count", "accumulated"):
        c.integer(progress, key, "progress")
    group = c.integer(progress, "group_size", "progress", 1)
    if progress["accumulated"] > group:
        c.fail("progress.accumulated", f"{progress['accumulated']} batches accumulated toward "
                                       f"a step of {group}")
    for key in ("loss_sum", "accumulated_loss"):
        c.number(progress, key, "progress")
    if not isinstance(progress["batches_done"], bool):
        c.fail("progress.batches_done", "expected true or false")
    for key in ("model", "grads", "history", "callbacks"):
        c.mapping(state[key], key)
    for name, series in state["history"].items():
        c.keys(series, f"history.{name}", {"values", "steps"})
        values, steps = series["values"], series["steps"]
        if not (isinstance(values, list) and isinstance(steps, list) and
                len(values) == len(steps) and
                all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values) and
                all(isinstance(v, int) and not isinstance(v, bool) for v in steps)):
            c.fail(f"history.{name}", "expected equally long lists of values (numbers) and "
                                      "steps (ints)")
    rng = c.keys(state["rng"], "rng", _RNG_KEYS)
    if not isinstance(rng["state"], dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in rng["state"].values()):
        c.fail("rng.state", "expected an object of ints")
    for key in ("seed", "has_uint32", "uinteger"):
        c.integer(rng, key, "rng")
    c.references(state, tensors, "the state")


def check_fits(trainer, state, tensors: dict, path) -> None:
    """Refuse a state that `check_structure` refuses, or whose tensors do not match
    `trainer`'s model and optimizer in dtype and shape."""
    from .resume import named_parameters

    check_structure(state, tensors, path)
    c = _Check(path)
    where = str(path)
    if callable(getattr(trainer.model, "state_dict", None)):
        check_tensors_fit(unpack(state["model"], tensors), dict(trainer.model.state_dict()),
                          "the model weights", where)
    params = dict(named_parameters(trainer.model))
    grads = unpack(state["grads"], tensors)
    check_tensors_fit(grads, {k: params[k] for k in grads if k in params},
                      "the gradients", where)
    unknown = sorted(set(grads) - set(params))
    if unknown:
        c.fail("grads", f"gradients of {', '.join(unknown)}, which the model does not have")
    optimizer = trainer.optimizer
    if optimizer is None or state["optimizer"] is None or \
            not getattr(optimizer, "param_groups", None):
        return
    saved = unpack(state["optimizer"], tensors)
    if not isinstance(saved, dict) or not isinstance(saved.get("state"), dict) or \
            not isinstance(saved.get("param_groups"), list):
        c.fail("optimizer", "expected an object with 'state' and 'param_groups'")
    by_index = {}
    for group, here in zip(saved["param_groups"], optimizer.param_groups):
        if not isinstance(group, dict) or not isinstance(group.get("params"), list):
            c.fail("optimizer.param_groups", "each group needs a 'params' list")
        by_index.update(zip(group["params"], here["params"]))
    for index, values in saved["state"].items():
        p = by_index.get(int(index) if isinstance(index, str) and index.isdigit() else index)
        if p is None or not isinstance(values, dict):
            continue  # (the optimizer's own load_state_dict names these)
        for name, value in values.items():
            if getattr(value, "ndim", 0) and value.dtype != p.dtype:
                c.fail(f"optimizer.state.{index}.{name}",
                       f"a {value.dtype.name} statistic for a {p.dtype.name} parameter")
