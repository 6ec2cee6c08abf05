"""A Trainer's complete state to and from a training checkpoint: model weights and gradients,
optimizer, scheduler and GradScaler state, data order, the global RNG, counters, History
and the callbacks that keep state, so that a resumed run continues bit for bit."""

from __future__ import annotations

from dlfree.errors import CheckpointError
from dlfree.random import get_rng_state, set_rng_state

from .state import EpochProgress
from .state_file import pack, unpack


def named_parameters(model) -> list[tuple[str, object]]:
    """The model's parameters by name (by position when it has no `named_parameters`)."""
    if callable(getattr(model, "named_parameters", None)):
        return list(model.named_parameters())
    return [(str(i), p) for i, p in enumerate(model.parameters())]


def _stateful(callback) -> bool:
    return callable(getattr(callback, "state_dict", None)) and \
        callable(getattr(callback, "load_state_dict", None))


def _callback_key(index: int, callback) -> str:
    return f"{index}:{type(callback).__name__}"


def _state_of(obj, where: str, tensors: dict):
    return None if obj is None else pack(obj.state_dict(), where, tensors)


def capture(trainer, data) -> tuple[dict, dict]:
    """(state, tensors) describing `trainer` now, `data` being its training data."""
    tensors: dict = {}
    grads = {name: p.grad for name, p in named_parameters(trainer.model) if p.grad is not None}
    state = {
        "trainer": trainer.state.to_dict(),
        "progress": trainer.progress.to_dict(),
        "model": pack(dict(trainer.model.state_dict()), "model", tensors),
        "grads": pack(grads, "grad", tensors),
        "optimizer": _state_of(trainer.optimizer, "optimizer", tensors),
        "scheduler": _state_of(trainer.scheduler, "scheduler", tensors),
        "scaler": _state_of(trainer.scaler, "scaler", tensors),
        "data": pack(data.state_dict(), "data", tensors)
        if callable(getattr(data, "state_dict", None)) else None,
        "rng": get_rng_state(),
        "history": trainer.history.state_dict(),
        "callbacks": {_callback_key(i, cb): pack(cb.state_dict(), f"callbacks/{i}", tensors)
                      for i, cb in enumerate(trainer.callbacks) if _stateful(cb)},
    }
    return state, tensors


def _load(obj, name: str, saved, tensors: dict, path) -> None:
    if (obj is None) != (saved is None):
        has = "has" if saved is not None else "has no"
        raise CheckpointError(f"{path}: the checkpoint {has} {name} state, but this Trainer "
                              f"{'has no' if obj is None else 'has a'} {name}; resume with the "
                              "same setup as the run that wrote it")
    if obj is None:
        return
    try:
        obj.load_state_dict(unpack(saved, tensors))
    except Exception as e:  # whatever the object's own loader raises on values it refuses
        raise CheckpointError(f"{path}: the {name} state does not fit this Trainer's {name} "
                              f"({type(obj).__name__}): {e}") from None


def restore(trainer, data, state: dict, tensors: dict, path) -> int:
    """Put `trainer` (and its training `data`) back in the state `capture` saved (checked by
    `state_schema` first). Returns how many batches of the current epoch must be skipped by
    reading them, for data that cannot restore its own position (0 otherwise)."""
    try:
        return _restore(trainer, data, state, tensors, path)
    except CheckpointError:
        raise
    except Exception as e:
        raise CheckpointError(f"{path}: restoring the training state failed: "
                              f"{type(e).__name__}: {e}") from e


def _restore(trainer, data, state: dict, tensors: dict, path) -> int:
    try:
        trainer.model.load_state_dict(unpack(state["model"], tensors))
    except Exception as e:
        raise CheckpointError(f"{path}: the model weights do not fit this Trainer's model "
                              f"({type(trainer.model).__name__}): {e}") from None
    grads = unpack(state["grads"], tensors)
    for name, p in named_parameters(trainer.model):
        saved = grads.get(name)
        p.grad = None if saved is None else saved.to(device=p.device, dtype=p.dtype)
    _load(trainer.optimizer, "optimizer", state["optimizer"], tensors, path)
    _load(trainer.scheduler, "scheduler", state["scheduler"], tensors, path)
    _load(trainer.scaler, "scaler", state["scaler"], tensors, path)
    skip = 0
    progress = EpochProgress.from_dict(state["progress"])
    if state["data"] is not None and callable(getattr(data, "load_state_dict", None)):
        _load(data, "training data", state["data"], tensors, path)
    elif not progress.batches_done:
        skip = int(state["trainer"]["batch_index"])
    set_rng_state(state["rng"])
    trainer.history.load_state_dict(state["history"])
    trainer.state.load(state["trainer"])
    trainer.progress = progress
    saved_callbacks = state["callbacks"]
    for i, callback in enumerate(trainer.callbacks):
        key = _callback_key(i, callback)
        if _stateful(callback) and key in saved_callbacks:
            _load(callback, f"callback {key}", saved_callbacks[key], tensors, path)
    return skip
