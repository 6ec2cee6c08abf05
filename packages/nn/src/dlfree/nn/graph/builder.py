"""`FlowBuilder`: architectures stated as data flow, one fluent call per construct.

    graph = (FlowBuilder.from_(encoder).label("encoder")
             .also(block)                       # residual: x + block(x)
             .split(head_a, head_b).merge("cat")
             .build())

The builder only records the calls; `build()` checks them in order, turns them into the
steps of a `Graph` and compiles it, so every mistake (an unknown tag, `merge` without
`split`, a loop without its count) is reported at `build()` naming the call.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import GraphError
from .graph import Graph
from .nodes import Gate, Loop, Map, Split, Switch

__all__ = ["FlowBuilder"]

# a call that opens a construct -> the calls that may close it
_CLOSERS = {"split": ("merge",), "loop": ("for_n", "while_", "until"),
            "map": ("each", "over", "slices")}
_OPENER = {closer: opener for opener, closers in _CLOSERS.items() for closer in closers}


def _describe(method: str, args: tuple) -> str:
    """A recorded call as the user wrote it, modules by type: `.merge(add)`."""
    shown = [a if isinstance(a, str) else repr(a) if isinstance(a, int | float)
             else type(a).__name__ for a in args]
    return f".{method}({', '.join(shown)})"


class FlowBuilder:
    """Records a flow; see the module docstring and docs/graph.md for every construct."""

    def __init__(self, module=None):
        self._calls: list[tuple[str, tuple, dict]] = []
        if module is not None:
            self.through(module)

    @classmethod
    def from_(cls, module) -> FlowBuilder:
        """A flow that starts by running `module` on the input."""
        return cls(module)

    def _record(self, method: str, *args, **kwargs) -> FlowBuilder:
        self._calls.append((method, args, kwargs))
        return self

    # ------------------------------------------------------------ the stream
    def through(self, module) -> FlowBuilder:
        """The stream becomes `module(stream)`."""
        return self._record("through", module)

    def also(self, module) -> FlowBuilder:
        """Residual: the stream becomes `stream + module(stream)`."""
        return self._record("also", module)

    def fork(self, module) -> FlowBuilder:
        """A side branch: `module(stream)` is computed (name it with `.tag`), the stream
        goes on unchanged."""
        return self._record("fork", module)

    def split(self, *branches) -> FlowBuilder:
        """Parallel branches on the stream; close with `.merge(how)`."""
        return self._record("split", *branches)

    def merge(self, how="add") -> FlowBuilder:
        """Join the branches of the `split` before: "add", "mean", "cat" (last dimension)
        or a callable taking the list of outputs."""
        return self._record("merge", how)

    # ----------------------------------------------------------- named values
    def tag(self, name: str) -> FlowBuilder:
        """Name the last value produced (the stream, or a fork's output)."""
        return self._record("tag", name)

    def using(self, *names: str, init: Mapping | None = None) -> FlowBuilder:
        """The next step also receives these tagged values: `module(stream, *values)`. A
        tag set later in the flow is read from the previous call (zeros shaped like the
        stream on the first, or `init[name]`: a tensor or a callable(stream))."""
        return self._record("using", *names, init=init)

    def input(self, *names: str) -> FlowBuilder:
        """Declare auxiliary inputs, passed as keywords (`graph(x, memory=m)`), usable as
        tags."""
        return self._record("input", *names)

    def label(self, name: str) -> FlowBuilder:
        """Name the last step: its graph path and its `state_dict` prefix."""
        return self._record("label", name)

    # -------------------------------------------------------------- control
    def loop(self, body) -> FlowBuilder:
        """Repeat `body` on the stream; close with `.for_n(n)`, `.while_(cond, max_iter)`
        or `.until(cond, max_iter)`."""
        return self._record("loop", body)

    def for_n(self, n: int) -> FlowBuilder:
        return self._record("for_n", n)

    def while_(self, cond, max_iter: int = 100) -> FlowBuilder:
        """Run the body while `cond(stream)` holds (checked before each pass)."""
        return self._record("while_", cond, max_iter)

    def until(self, cond, max_iter: int = 100) -> FlowBuilder:
        """Run the body until `cond(stream)` holds (checked after each pass)."""
        return self._record("until", cond, max_iter)

    def gate(self, router, *experts) -> FlowBuilder:
        """Soft routing: softmax(router(stream)) weights the experts' outputs, summed."""
        return self._record("gate", router, *experts)

    def switch(self, selector, *branches) -> FlowBuilder:
        """Hard routing: only the branch the selector picks runs (per sample, when the
        selector gives one choice per row)."""
        return self._record("switch", selector, *branches)

    def map(self, body) -> FlowBuilder:
        """One body over items; close with `.each(dim=1)`, `.over(tag, dim=1)` or
        `.slices(n, dim=-1)`."""
        return self._record("map", body)

    def each(self, dim: int = 1) -> FlowBuilder:
        return self._record("each", dim)

    def over(self, tag: str, dim: int = 1) -> FlowBuilder:
        return self._record("over", tag, dim)

    def slices(self, n: int, dim: int = -1) -> FlowBuilder:
        return self._record("slices", n, dim)

    # ---------------------------------------------------------------- build
    def build(self) -> Graph:
        """Check the recorded calls and compile them into a `Graph`."""
        return Graph(**_Assembly(self._calls).run())


class _Assembly:
    """One pass over the recorded calls, turning them into `Graph` steps."""

    def __init__(self, calls):
        self.calls = calls
        self.steps: list[dict] = []
        self.inputs: list[str] = []
        self.init: dict = {}
        self.using: list[str] = []
        self.open: tuple[int, str, tuple] | None = None  # (call index, method, args)

    def fail(self, i: int, message: str):
        method, args, _ = self.calls[i]
        raise GraphError(f"FlowBuilder call {i} {_describe(method, args)}: {message}")

    def add(self, kind: str, module) -> None:
        self.steps.append({"kind": kind, "module": module, "label": None,
                           "using": list(self.using)})
        self.using = []

    def run(self) -> dict:
        if not self.calls:
            raise GraphError("FlowBuilder.build(): the flow is empty; start with "
                             "FlowBuilder.from_(module) or .through(module)")
        for i, (method, args, kwargs) in enumerate(self.calls):
            if self.open is not None and method not in _CLOSERS[self.open[1]]:
                opened, name, _ = self.open
                self.fail(opened, f"must be followed by "
                          f"{' or '.join('.' + c + '()' for c in _CLOSERS[name])}, but call "
                          f"{i} is .{method}()")
            if method in _OPENER and (self.open is None or self.open[1] != _OPENER[method]):
                self.fail(i, f"has no .{_OPENER[method]}() before it to close")
            try:
                getattr(self, "on_" + method)(i, *args, **kwargs)
            except GraphError as e:
                if str(e).startswith("FlowBuilder call"):
                    raise
                self.fail(i, str(e))
        if self.open is not None:
            opened, name, _ = self.open
            self.fail(opened, f"is never closed by "
                      f"{' or '.join('.' + c + '()' for c in _CLOSERS[name])}")
        if self.using:
            raise GraphError(f"FlowBuilder: .using({', '.join(self.using)}) at the end has no "
                             "step after it to receive the values")
        return {"steps": self.steps, "inputs": self.inputs, "init": self.init}

    def on_through(self, i, module):
        self.add("through", module)

    def on_also(self, i, module):
        self.add("also", module)

    def on_fork(self, i, module):
        self.add("fork", module)

    def on_split(self, i, *branches):
        self.open = (i, "split", branches)

    def on_loop(self, i, body):
        self.open = (i, "loop", (body,))

    def on_map(self, i, body):
        self.open = (i, "map", (body,))

    def on_merge(self, i, how):
        _, _, branches = self.open
        self.open = None
        self.add("through", Split(list(branches), how))

    def on_for_n(self, i, n):
        self.close_loop(mode="for_n", n=n)

    def on_while_(self, i, cond, max_iter):
        self.close_loop(mode="while", cond=cond, max_iter=max_iter)

    def on_until(self, i, cond, max_iter):
        self.close_loop(mode="until", cond=cond, max_iter=max_iter)

    def close_loop(self, **settings):
        (body,) = self.open[2]
        self.open = None
        self.add("through", Loop(body, **settings))

    def on_each(self, i, dim):
        self.close_map(mode="each", dim=dim)

    def on_over(self, i, tag, dim):
        self.using.insert(0, tag)
        self.close_map(mode="over", dim=dim)

    def on_slices(self, i, n, dim):
        self.close_map(mode="slices", n=n, dim=dim)

    def close_map(self, **settings):
        (body,) = self.open[2]
        self.open = None
        self.add("through", Map(body, **settings))

    def on_gate(self, i, router, *experts):
        self.add("through", Gate(router, list(experts)))

    def on_switch(self, i, selector, *branches):
        self.add("through", Switch(selector, list(branches)))

    def on_tag(self, i, name):
        self.steps.append({"kind": "tag", "name": name})

    def on_using(self, i, *names, init=None):
        if not names:
            raise GraphError("using() needs at least one tag name")
        self.using.extend(names)
        self.init.update(init or {})

    def on_input(self, i, *names):
        if not names:
            raise GraphError("input() needs at least one name")
        self.inputs.extend(names)

    def on_label(self, i, name):
        module_steps = [s for s in self.steps if s["kind"] != "tag"]
        if not module_steps:
            raise GraphError("there is no step before it to label")
        step = module_steps[-1]
        if step["label"] is not None:
            raise GraphError(f"the step before it is already labelled {step['label']!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise GraphError(f"a label must be an identifier, got {name!r}")
        step["label"] = name

