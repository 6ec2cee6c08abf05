"""Observation: tagged values collected per batch, external scalars recorded by path, an
epoch closed by `flush()`, and trend queries (`trend(path)`) over the epochs, across the
graph tree. The trend queries are the core's `dlfree.trends.Series`, the same ones a
Trainer's `history` answers."""

from __future__ import annotations

import contextlib
import math

from dlfree import Tensor
from dlfree.trends import Series

from .errors import GraphError, closest

__all__ = ["GraphObservation", "Observations", "REDUCTIONS"]

REDUCTIONS = {
    "mean": lambda t: t.mean(),
    "sum": lambda t: t.sum(),
    "max": lambda t: t.max(),
    "min": lambda t: t.min(),
    "norm": lambda t: (t * t).sum().sqrt(),
}


def _number(value, what: str) -> float:
    try:
        return float(value.item() if isinstance(value, Tensor) else value)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected a number or a one-element tensor, got "
                        f"{type(value).__name__}") from None


class Observations:
    """One graph's collected tags, recorded names, the values of the open epoch, and the
    series of closed epochs."""

    def __init__(self):
        self.collecting: dict = {}  # tag -> reduction of a tensor to a scalar
        self.pending: dict[str, list[float]] = {}  # name -> this epoch's batch values
        self.series: dict[str, Series] = {}
        self.epochs = 0

    def add(self, name: str, value) -> None:
        """A collected tag's value in one batch, reduced to a scalar without a gradient."""
        scalar = self.collecting[name](value.detach() if isinstance(value, Tensor) else value)
        self.pending.setdefault(name, []).append(_number(scalar, f"collect({name!r})"))

    def record(self, name: str, value) -> None:
        self.pending.setdefault(name, []).append(_number(value, f"record({name!r})"))

    def flush(self) -> dict[str, float]:
        """Close the epoch: each name's batch values averaged into its series."""
        closed = {}
        for name, values in self.pending.items():
            if not values:
                continue
            mean = math.fsum(values) / len(values)
            series = self.series.get(name)
            if series is None:
                series = self.series[name] = Series(name, owner="graph.trend")
            series.append(mean, self.epochs)
            closed[name] = mean
        self.pending = {}
        self.epochs += 1
        return closed


class GraphObservation:
    """The observation methods of `Graph` (a mixin over the graph tree)."""

    def _graphs(self):
        """(path, graph) for this graph ("") and every graph nested in it."""
        yield "", self
        yield from self.named_subgraphs()

    def collect(self, *tags: str, reduce="mean"):
        """Accumulate the values of tags (graph paths, nested ones included) once per batch
        in training mode, each reduced to a scalar by `reduce` ("mean", "sum", "max", "min",
        "norm" or a callable tensor -> number); `flush()` averages them into the epoch.
        Returns self."""
        if isinstance(reduce, str):
            if reduce not in REDUCTIONS:
                raise GraphError(f"collect(reduce={reduce!r}): valid reductions are "
                                 f"{', '.join(REDUCTIONS)} or a callable")
            reduce = REDUCTIONS[reduce]
        elif not callable(reduce):
            raise GraphError(f"collect(reduce=...) takes a name or a callable, got "
                             f"{type(reduce).__name__}")
        for path in tags:
            info = self.validate_path(path)
            if info.kind != "tag":
                raise GraphError(f"collect({path!r}): that path is a {info.kind}; collect "
                                 "takes tags")
            graph = self.graph_at(info.owner)
            graph._observations.collecting[path.rpartition(".")[2]] = reduce
        return self

    def record(self, name: str, value) -> None:
        """Add an external scalar (a loss, a metric) under `name` in this graph for this
        epoch; a dotted name is a path into the tree (`record_at`)."""
        if "." in name:
            self.record_at(name, value)
            return
        if not name:
            raise GraphError("record(name, value): name must be non-empty")
        self._observations.record(name, value)

    def record_at(self, path: str, value) -> None:
        """Add an external scalar at a path: the part before the last dot names a graph
        of the tree, the last part the value (`record_at("encoder.scan.loss", v)`)."""
        owner, _, name = path.rpartition(".")
        if not name:
            raise GraphError(f"record_at({path!r}): the path must end in a name")
        self.graph_at(owner)._observations.record(name, value)

    def flush(self) -> dict[str, float]:
        """Close an epoch across the tree; returns each path's value for the epoch."""
        closed = {}
        for prefix, graph in self._graphs():
            for name, value in graph._observations.flush().items():
                closed[f"{prefix}.{name}" if prefix else name] = value
        return closed

    def recorded_paths(self) -> list[str]:
        """The paths that have a series of closed epochs, across the tree."""
        return [f"{prefix}.{name}" if prefix else name
                for prefix, graph in self._graphs() for name in graph._observations.series]

    def trend(self, path: str) -> Series:
        """The epochs of a collected or recorded path, with `last`, `best`, `improving`,
        `stalled`, `converged` and `slope`, as `trainer.history[name]` has."""
        owner, _, name = path.rpartition(".")
        graph = None
        with contextlib.suppress(GraphError):
            graph = self.graph_at(owner)
        if graph is None or name not in graph._observations.series:
            recorded = self.recorded_paths()
            raise GraphError(f"trend({path!r}): nothing has been flushed under that path"
                             + closest(path, recorded))
        return graph._observations.series[name]
