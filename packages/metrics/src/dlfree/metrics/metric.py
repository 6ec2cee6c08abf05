"""`Metric`, the base of every streaming metric (declared states that update, merge, reset and
save), and `MetricCollection`, several metrics fed from the same inputs."""

from __future__ import annotations

import copy
import numbers

import dlfree as dl

import numpy as np

REDUCTIONS = ("sum", "mean", "cat", "min", "max")


class Metric:
    """A quantity accumulated over batches and computed once at the end.

    A subclass declares its state in `__init__` with `add_state`, folds a batch into that
    state in `update(preds, target)` (passing its inputs through `self._to_arrays`) and
    turns the state into a result in `compute()`, which must not change the state. Each
    state names how two copies of it combine, so metrics fed different shards of the data
    (processes, devices, workers) `merge` into the very state one metric fed everything
    would hold. A subclass whose state combines in a way no reduction expresses overrides
    `_merge_states`.

    States are raw arrays of the inputs' backend (NumPy or CuPy) and live on the inputs'
    device: a fresh metric moves to the device of the first inputs it sees; later inputs
    on another device are an error. Results are `dl.Tensor`s, 0-d for scalars, floating
    results in the default dtype.
    """

    def __init__(self):
        self._defaults: dict[str, object] = {}
        self._reductions: dict[str, str] = {}
        self._mean_weights: dict[str, str] = {}
        self._device = dl.Device("cpu")
        self._fresh = True

    # ---------------------------------------------------------------- declaring
    def add_state(self, name: str, default, reduction: str, weight: str | None = None) -> None:
        """Declare state `name`, starting at `default`, combined across shards by `reduction`.

        reduction: "sum", "min" or "max" (elementwise), "cat" (a list of per-batch arrays;
        `default` must be `[]`), or "mean", which needs `weight`: the name of a "sum" state
        holding how many things this mean is over, so that merging weighs each side exactly.
        """
        if "_defaults" not in self.__dict__:
            raise TypeError(f"{type(self).__name__}: call super().__init__() before add_state")
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise ValueError(f"add_state: name must be an identifier not starting with '_', "
                             f"got {name!r}")
        if name in self._defaults or hasattr(type(self), name):
            raise ValueError(f"add_state: {type(self).__name__} already has an attribute or "
                             f"state named {name!r}")
        if reduction not in REDUCTIONS:
            raise ValueError(f"add_state({name!r}): unknown reduction {reduction!r}; valid: "
                             f"{', '.join(map(repr, REDUCTIONS))}")
        if reduction == "mean":
            if self._reductions.get(weight) != "sum":
                raise ValueError(f"add_state({name!r}): a 'mean' state needs weight= naming a "
                                 f"'sum' state declared before it, got weight={weight!r}")
            self._mean_weights[name] = weight
        elif weight is not None:
            raise ValueError(f"add_state({name!r}): weight= applies to 'mean' states only")
        if reduction == "cat":
            if not (isinstance(default, list) and not default):
                raise ValueError(f"add_state({name!r}): a 'cat' state starts as an empty list "
                                 f"[], got {default!r}")
            self._defaults[name] = []
        else:
            self._defaults[name] = _to_host(default)
        self._reductions[name] = reduction
        setattr(self, name, self._fresh_state(name))

    def _fresh_state(self, name: str):
        default = self._defaults[name]
        if isinstance(default, list):
            return []
        return self._device.backend.asarray(default.copy(), index=self._device.index)

    # ------------------------------------------------------------------ feeding
    def update(self, preds, target) -> None:
        """Fold one batch into the state."""
        raise NotImplementedError(f"{type(self).__name__} must implement update()")

    def compute(self):
        """The metric over everything folded in so far (the state is left unchanged)."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute()")

    def forward(self, *args, **kwargs):
        """Accumulate this batch and return the metric on this batch alone."""
        total = self._snapshot()
        fresh = self._fresh
        self._reset_states()
        try:
            self.update(*args, **kwargs)
            value = self.compute()
        except BaseException:
            if fresh:
                self.reset()
            else:
                self._restore(total)
            raise
        batch = self._snapshot()
        if not fresh:
            self._restore(total)
            self._merge_states(batch)
        return value

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def reset(self) -> None:
        """Back to the state before any update (the metric stays on its device)."""
        self._reset_states()
        self._fresh = True

    def _reset_states(self) -> None:
        for name in self._defaults:
            setattr(self, name, self._fresh_state(name))

    def as_arrays(self, *values):
        """The backend arrays of `values` (tensors, arrays or lists), all on one device, with
        the state placed on that device; call it on the inputs at the start of `update`."""
        tensors = [v.detach() if isinstance(v, dl.Tensor) else dl.as_tensor(v) for v in values]
        device = tensors[0].device
        for t in tensors[1:]:
            if t.device is not device:
                raise dl.DeviceError(f"{type(self).__name__}.update: inputs on different "
                                     f"devices ({device} and {t.device}); put them on one")
        self._settle_on(device, "update")
        return [t.array for t in tensors]

    def _settle_on(self, device, op: str) -> None:
        if device is not self._device:
            if not self._fresh:
                raise dl.DeviceError(
                    f"{type(self).__name__}.{op}: got data on {device} but the metric's "
                    f"state is on {self._device}; move one of them (metric.to({str(device)!r}))")
            self.to(device)
        self._fresh = False

    def as_result(self, value):
        """`value` (a backend array or number) as a tensor on the state's device; floating
        values in the default dtype."""
        if isinstance(value, numbers.Number):
            value = self._device.backend.asarray(value, index=self._device.index)
        if value.dtype.kind == "f":
            value = value.astype(dl.get_default_dtype().np, copy=False)
        return dl.as_tensor(value)

    # ------------------------------------------------------------------ merging
    def merge(self, other: Metric) -> Metric:
        """Fold `other`'s state into this one, as if this metric had seen its inputs too."""
        if type(other) is not type(self):
            raise TypeError(f"{type(self).__name__}.merge: expected a {type(self).__name__}, "
                            f"got {type(other).__name__}")
        for name, reduction in self._reductions.items():
            mine, theirs = getattr(self, name), getattr(other, name)
            if reduction != "cat" and mine.shape != theirs.shape:
                raise dl.ShapeError(
                    f"{type(self).__name__}.merge: state {name!r} has shape {tuple(mine.shape)} "
                    f"here and {tuple(theirs.shape)} in the other metric; merge only metrics "
                    "built with the same arguments")
        if other._fresh:
            return self
        self._settle_on(other._device, "merge")
        self._merge_states(other._snapshot())
        return self

    def _merge_states(self, states: dict) -> None:
        """Combine `states` (another shard's, on this device) into this metric's state."""
        xp = self._device.xp
        merged = {}
        for name, reduction in self._reductions.items():
            mine, theirs = getattr(self, name), states[name]
            if reduction == "sum":
                merged[name] = mine + theirs
            elif reduction == "min":
                merged[name] = xp.minimum(mine, theirs)
            elif reduction == "max":
                merged[name] = xp.maximum(mine, theirs)
            elif reduction == "cat":
                merged[name] = list(mine) + list(theirs)
            else:
                weight = self._mean_weights[name]
                w_mine, w_theirs = getattr(self, weight), states[weight]
                total = w_mine + w_theirs
                safe = xp.where(total > 0, total, 1)
                merged[name] = xp.where(total > 0, mine + (theirs - mine) * (w_theirs / safe),
                                        mine)
        for name, value in merged.items():
            setattr(self, name, value)

    def _snapshot(self) -> dict:
        return {name: (list(getattr(self, name)) if isinstance(getattr(self, name), list)
                       else getattr(self, name)) for name in self._defaults}

    def _restore(self, states: dict) -> None:
        for name, value in states.items():
            setattr(self, name, value)

    # ----------------------------------------------------------- saving, moving
    def state_dict(self) -> dict:
        """The state as host NumPy arrays ("cat" states: lists of arrays); no pickle needed."""
        to_numpy = self._device.backend.to_numpy
        out = {}
        for name in self._defaults:
            value = getattr(self, name)
            out[name] = ([np.array(to_numpy(v)) for v in value] if isinstance(value, list)
                         else np.array(to_numpy(value)))
        return out

    def load_state_dict(self, state: dict) -> None:
        """Replace the state with one from `state_dict()` (placed on this metric's device)."""
        missing = sorted(set(self._defaults) - set(state))
        unexpected = sorted(set(state) - set(self._defaults))
        if missing or unexpected:
            raise KeyError(f"{type(self).__name__}.load_state_dict: missing states {missing}, "
                           f"unexpected states {unexpected}")
        loaded = {}
        for name in self._defaults:
            current, value = getattr(self, name), state[name]
            if isinstance(current, list):
                if not isinstance(value, list | tuple):
                    raise TypeError(f"{type(self).__name__}.load_state_dict: state {name!r} is "
                                    f"a list of arrays, got {type(value).__name__}")
                loaded[name] = [self._place(v) for v in value]
                continue
            array = self._place(value).astype(current.dtype, copy=False)
            if array.shape != current.shape:
                raise dl.ShapeError(f"{type(self).__name__}.load_state_dict: state {name!r} "
                                    f"has shape {tuple(current.shape)}, got "
                                    f"{tuple(array.shape)}")
            loaded[name] = array
        self._restore(loaded)
        self._fresh = False

    def _place(self, value):
        host = _to_host(value)
        return self._device.backend.asarray(host, index=self._device.index)

    @property
    def device(self) -> dl.Device:
        """The device the state lives on."""
        return self._device

    def to(self, device) -> Metric:
        """Move the state to `device` (a copy where the device changes); returns self."""
        device = dl.Device(device)
        if device is self._device:
            return self
        source = self._device.backend

        def move(array):
            return device.backend.asarray(source.to_numpy(array), index=device.index)

        for name in self._defaults:
            value = getattr(self, name)
            setattr(self, name, [move(v) for v in value] if isinstance(value, list)
                    else move(value))
        self._device = device
        return self

    def clone(self) -> Metric:
        """An independent copy, state included."""
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _to_host(value) -> np.ndarray:
    """A NumPy copy of a number, list, NumPy/CuPy array or tensor (Python numbers keep
    NumPy's 64-bit dtypes, so accumulators declared with them are int64 or float64)."""
    if isinstance(value, numbers.Number | list | tuple | np.ndarray | np.generic):
        return np.array(value)
    t = value if isinstance(value, dl.Tensor) else dl.as_tensor(value)
    return np.array(t.device.backend.to_numpy(t.array))


class MetricCollection:
    """Several metrics updated from the same inputs and computed together into a dict.

    `metrics` is a dict of name to metric, or a list (each named by its class). Result
    keys are `prefix + name + postfix`.
    """

    def __init__(self, metrics, prefix: str | None = None, postfix: str | None = None):
        if isinstance(metrics, Metric):
            metrics = [metrics]
        if isinstance(metrics, dict):
            items = list(metrics.items())
        elif isinstance(metrics, list | tuple):
            items = [(type(m).__name__, m) for m in metrics]
            names = [name for name, _ in items]
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ValueError(f"MetricCollection: several metrics of class {repeated}; "
                                 "pass a dict to name them")
        else:
            raise TypeError("MetricCollection: metrics must be a dict of name to Metric or a "
                            f"list of Metrics, got {type(metrics).__name__}")
        for name, metric in items:
            if not isinstance(name, str) or not isinstance(metric, Metric):
                raise TypeError(f"MetricCollection: entry {name!r} must map a str to a Metric, "
                                f"got {type(metric).__name__}")
        for option, value in (("prefix", prefix), ("postfix", postfix)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"MetricCollection: {option} must be a str or None, "
                                f"got {type(value).__name__}")
        self._metrics = dict(items)
        self.prefix = prefix or ""
        self.postfix = postfix or ""

    def _key(self, name: str) -> str:
        return f"{self.prefix}{name}{self.postfix}"

    def update(self, *args, **kwargs) -> None:
        """Fold one batch into every metric."""
        for metric in self._metrics.values():
            metric.update(*args, **kwargs)

    def forward(self, *args, **kwargs) -> dict:
        """Accumulate this batch in every metric; return each one's value on this batch."""
        return {self._key(name): m.forward(*args, **kwargs) for name, m in self._metrics.items()}

    def __call__(self, *args, **kwargs) -> dict:
        return self.forward(*args, **kwargs)

    def compute(self) -> dict:
        return {self._key(name): m.compute() for name, m in self._metrics.items()}

    def reset(self) -> None:
        for metric in self._metrics.values():
            metric.reset()

    def merge(self, other: MetricCollection) -> MetricCollection:
        """Merge each metric with the one of the same name in `other`; returns self."""
        if not isinstance(other, MetricCollection) or set(other._metrics) != set(self._metrics):
            names = sorted(other._metrics) if isinstance(other, MetricCollection) else other
            raise ValueError(f"MetricCollection.merge: expected a collection of the metrics "
                             f"{sorted(self._metrics)}, got {names!r}")
        for name, metric in self._metrics.items():
            metric.merge(other._metrics[name])
        return self

    def state_dict(self) -> dict:
        """Every metric's state under `name.state` keys."""
        return {f"{name}.{key}": value for name, m in self._metrics.items()
                for key, value in m.state_dict().items()}

    def load_state_dict(self, state: dict) -> None:
        grouped: dict[str, dict] = {name: {} for name in self._metrics}
        for key, value in state.items():
            name, _, inner = key.rpartition(".")
            if name not in grouped:
                raise KeyError(f"MetricCollection.load_state_dict: {key!r} names no metric of "
                               f"this collection ({sorted(self._metrics)})")
            grouped[name][inner] = value
        for name, metric in self._metrics.items():
            metric.load_state_dict(grouped[name])

    def to(self, device) -> MetricCollection:
        for metric in self._metrics.values():
            metric.to(device)
        return self

    def clone(self) -> MetricCollection:
        return copy.deepcopy(self)

    def __getitem__(self, name: str) -> Metric:
        return self._metrics[name]

    def __contains__(self, name: str) -> bool:
        return name in self._metrics

    def __iter__(self):
        return iter(self._metrics)

    def __len__(self) -> int:
        return len(self._metrics)

    def keys(self):
        return self._metrics.keys()

    def values(self):
        return self._metrics.values()

    def items(self):
        return self._metrics.items()
