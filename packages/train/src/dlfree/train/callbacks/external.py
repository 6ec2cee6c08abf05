"""What the loggers to other tools (TensorBoard, MLflow) share: their package is an optional
dependency, checked when the logger is made; while training, a failure of the tool (a full
disk, an unreachable tracking server) is reported once, as a `LoggerWarning`, after which
the logger stays quiet and training goes on."""

from __future__ import annotations

import importlib.util
import warnings

from .loggers import check_every_n_steps, step_values


class LoggerWarning(UserWarning):
    """A logger to another tool failed; it logs nothing more this run."""


class ExternalLogger:
    """Base of the loggers to other tools: `modules` are the importable names that serve it
    (any one will do) and `install` the distribution to name when none is there."""

    rank_zero_only = True  # a distributed run logs from rank 0 alone

    modules: tuple[str, ...] = ()
    install = ""

    def __init__(self, every_n_steps: int | None = 1):
        self.every_n_steps = check_every_n_steps(type(self).__name__, every_n_steps)
        if not any(importlib.util.find_spec(m) for m in self.modules):
            raise ImportError(f"{type(self).__name__} needs {self.install}: pip install "
                              f"{self.install}")
        self.failure: Exception | None = None
        self._last_step = -1

    def guarded(self, what: str, action, *args) -> None:
        """Run `action(*args)` unless the logger has failed; a first failure is warned
        about, naming `what` the logger was doing, and ends its logging."""
        if self.failure is not None:
            return
        try:
            action(*args)
        except Exception as e:  # noqa: BLE001 (any failure of the tool, by design)
            self.failure = e
            warnings.warn(f"{type(self).__name__}: {what} failed ({type(e).__name__}: {e}); it "
                          "logs nothing more this run, and training goes on", LoggerWarning,
                          stacklevel=2)

    def due_step_values(self, trainer) -> dict[str, float] | None:
        """The History's per-step values ("step_loss", "step_lr", ...) of the optimizer
        step just taken, when it is one to log (every `every_n_steps`), else None."""
        step = trainer.state.global_step
        if self.every_n_steps is None or step == self._last_step or step % self.every_n_steps:
            return None
        self._last_step = step
        return step_values(trainer.history, step)


def flat_params(config: dict) -> dict[str, str | int | float | bool]:
    """The run's configuration as flat name -> scalar pairs: lists and dicts become one
    entry per item ("lr.0", "strategy_options.period"), None becomes "None"."""
    flat: dict[str, str | int | float | bool] = {}

    def add(key: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                add(f"{key}.{k}", v)
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                add(f"{key}.{i}", v)
        elif isinstance(value, bool | int | float | str):
            flat[key] = value
        else:
            flat[key] = str(value)

    for key, value in config.items():
        add(str(key), value)
    return flat
