"""What the value-watching parts of training share (EarlyStopping, ReduceOnStall,
ModelCheckpoint, a scheduler stepped on a value): checking the `monitor`/`mode` arguments,
refusing a validation value when `fit` has no `val_data`, and reading an epoch's value."""

from __future__ import annotations

MODES = ("min", "max")


def check_monitor(owner: str, monitor, mode) -> None:
    """Validate the `monitor` and `mode` arguments every value-watching callback takes."""
    if not isinstance(monitor, str) or not monitor:
        raise TypeError(f"{owner}: monitor must be the name of a logged value (such as "
                        f"'val_loss'), got {monitor!r}")
    if mode not in MODES:
        raise ValueError(f"{owner}: mode must be 'min' (lower is better) or 'max' (higher is "
                         f"better), got {mode!r}")


def require_validation(owner: str, monitor: str, trainer) -> None:
    """At the start of `fit`: a validation value ("val_...") can only be watched when the
    fit validates, else it would silently never act."""
    if monitor.startswith("val_") and not trainer.validates:
        raise ValueError(f"{owner}: monitors {monitor!r}, a validation value, but fit() got no "
                         "val_data; pass val_data, or monitor a training value such as 'loss'")


def monitored_value(owner: str, monitor: str, logs: dict, trainer) -> float | None:
    """The epoch's value of `monitor`, or None when it is a validation value and this epoch
    did not validate (validate_every_n_epochs); a name the epoch should have logged but did
    not is an error naming what it did log."""
    if monitor in logs:
        return float(logs[monitor])
    if monitor.startswith("val_") and not trainer.epoch_validated:
        return None
    raise KeyError(f"{owner}: the monitored value {monitor!r} was not logged; the epoch logged "
                   f"{', '.join(logs) or 'nothing'}")
