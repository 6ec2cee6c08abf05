"""`Graph`: a built flow, a `Module` whose forward runs a plan compiled once.

The structure is a list of steps, each a plain dict: `through` (the stream becomes the
module's output), `also` (the stream plus the module's output), `fork` (the module's output
is produced for a tag, the stream goes on) and `tag` (names the last value produced). A step
may read tagged values (`using`): a name tagged earlier in the call is read from this call,
a name tagged later is a *forward reference* read from the previous call (zeros, or the given
initial value, on the first), which is how a graph carries recurrent state. The steps are
the graph's config, so `dl.save` writes the structure and `dl.load` rebuilds it.

Building compiles each step into one small closure; a call runs the closures in order, so a
graph costs one function call per step beyond the modules it runs. The first call runs a
checked version that names the failing step, its path and the shapes, and records each
step's output shape for diagrams; so do calls under `dlfree.profiler`, which also time each
step in a range named `graph:<path>`.
"""

from __future__ import annotations

import dlfree as dl
from dlfree import Tensor
from dlfree.profiler import is_profiling, record_function

from ..module import Module
from .diagrams import GraphDiagrams
from .errors import GraphError, closest
from .observation import GraphObservation, Observations
from .tree import GraphTree

__all__ = ["Graph"]

KINDS = ("through", "also", "fork", "tag")


def _shape(value):
    return tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__


class Graph(GraphTree, GraphObservation, GraphDiagrams, Module):
    """A data-flow graph of modules; build it with `FlowBuilder`, call it as
    `graph(x, **inputs)` with the auxiliary inputs it declares (or positionally, in
    declared order, as a step that is given tagged values calls it)."""

    def __init__(self, steps, inputs=(), init=None):
        super().__init__()
        self.steps = [dict(step) for step in steps]
        self.inputs = tuple(inputs)
        init = dict(init or {})
        self._init_values = {}
        self._node_names: dict[int, str] = {}  # step index -> child name
        self._tag_steps: dict[str, int] = {}  # tag -> index of the step that produced it
        self._forward_names: tuple = ()
        self._state: dict = {}
        self._shapes: dict[int, tuple] | None = None  # step -> output shape, after a call
        self._observations = Observations()
        self._values: dict = {}  # the tags and inputs of the last call
        self._register(init)
        self._ops = [self._compile(i, step) for i, step in enumerate(self.steps)]

    def get_config(self) -> dict:
        return {"steps": self.steps, "inputs": list(self.inputs),
                "init": dict(self._init_values)}

    # ------------------------------------------------------------------ building
    def _where(self, i: int) -> str:
        step = self.steps[i]
        name = self._node_names.get(i)
        what = f"tag {step['name']!r}" if step["kind"] == "tag" else \
            f".{step['kind']}({type(step.get('module')).__name__})"
        return f"graph step {i} {what}" + (f" at {name!r}" if name else "")

    def _register(self, init: dict) -> None:
        """Check the steps, name their modules (label or position) and resolve every tag
        read as an input, this call's value or the previous call's."""
        for name in self.inputs:
            if not isinstance(name, str) or not name.isidentifier():
                raise GraphError(f"input names must be identifiers, got {name!r}")
        tags = {}
        position = 0
        for i, step in enumerate(self.steps):
            kind = step.get("kind")
            if kind not in KINDS:
                raise GraphError(f"graph step {i}: kind must be one of {', '.join(KINDS)}, "
                                 f"got {kind!r}")
            if kind == "tag":
                name = step.get("name")
                if not isinstance(name, str) or not name.isidentifier():
                    raise GraphError(f"graph step {i}: a tag must be an identifier, got "
                                     f"{name!r}")
                if name in tags or name in self.inputs:
                    raise GraphError(f"{self._where(i)}: {name!r} is already "
                                     f"{'an input' if name in self.inputs else 'a tag'}")
                tags[name] = i
                continue
            module = step.get("module")
            if not callable(module):
                raise GraphError(f"graph step {i} .{kind}(): expected a module or callable, "
                                 f"got {type(module).__name__}")
            label = step.get("label")
            name = label if label is not None else str(position)
            position += 1
            if isinstance(module, Module):
                try:
                    self.add_module(name, module)
                except KeyError as e:
                    raise GraphError(f"{self._where(i)}: label {name!r} cannot name a "
                                     f"step: {e.args[0]}") from None
            self._node_names[i] = name
        clash = set(tags) & set(self._node_names.values())
        if clash:
            raise GraphError(f"{', '.join(sorted(clash))}: a name is both a label and a tag; "
                             "graph paths need one meaning per name")
        self._tag_steps = tags
        forward = []
        for i, step in enumerate(self.steps):
            for name in step.get("using", ()):
                if name in self.inputs or (name in tags and tags[name] < i):
                    continue
                if name in tags:
                    if name not in forward:
                        forward.append(name)
                    continue
                known = list(self.inputs) + list(tags)
                raise GraphError(f"{self._where(i)} uses unknown tag {name!r}"
                                 + closest(name, known))
        self._forward_names = tuple(forward)
        for name, value in init.items():
            if name not in forward:
                raise GraphError(f"init given for {name!r}, which is not a forward reference "
                                 f"(a tag used before it is set); forward references: "
                                 f"{', '.join(forward) or 'none'}")
            if isinstance(value, Tensor):
                self.register_buffer(f"init_{name}", value)
            elif not callable(value):
                raise GraphError(f"init[{name!r}] must be a tensor or a callable(x) giving "
                                 f"one, got {type(value).__name__}")
            self._init_values[name] = value

    def _compile(self, i: int, step: dict):
        """The step as a closure `(x, last, env) -> (x, last)`."""
        kind = step["kind"]
        if kind == "tag":
            name, observations, graph = step["name"], self._observations, self

            def tag(x, last, env):
                env[name] = last
                if name in observations.collecting and graph.training:
                    observations.add(name, last)
                return x, last
            return tag
        module, refs = step["module"], tuple(step.get("using", ()))
        if not refs:
            if kind == "through":
                def through(x, last, env):
                    y = module(x)
                    return y, y
                return through
            if kind == "also":
                def also(x, last, env):
                    y = x + module(x)
                    return y, y
                return also

            def fork(x, last, env):
                return x, module(x)
            return fork
        read = self._read

        def with_refs(x, last, env):
            y = module(x, *[read(env, name, x) for name in refs])
            if kind == "through":
                return y, y
            if kind == "also":
                y = x + y
                return y, y
            return x, y
        return with_refs

    def _read(self, env: dict, name: str, x):
        if name in env:
            return env[name]
        value = self._init_values.get(name)  # a forward reference's first call
        if value is None:
            value = dl.zeros_like(x)
        elif isinstance(value, Tensor):
            value = self._buffers[f"init_{name}"]  # where .to() moved it
        else:
            value = value(x)
        env[name] = value
        return value

    # ------------------------------------------------------------------- calling
    def forward(self, x, *args, **inputs):
        if args:  # positional auxiliary inputs, in declared order (a graph as a step `using`)
            if len(args) > len(self.inputs):
                raise GraphError(f"graph called with {len(args)} values after the stream; it "
                                 f"declares {len(self.inputs)} input(s): "
                                 f"{', '.join(self.inputs) or 'none'}")
            inputs.update(zip(self.inputs, args))
        if inputs.keys() != set(self.inputs):
            self._check_inputs(inputs)
        env = dict(inputs)
        env.update(self._state)
        if self._shapes is None or is_profiling():
            x = self._run_checked(x, env)
        else:
            last = x
            for op in self._ops:
                x, last = op(x, last, env)
        if self._forward_names:
            self._state = {name: env[name] for name in self._forward_names}
        self._values = env
        return x

    def tagged(self, path: str):
        """The value a tag (or input) held in the last call, by graph path (`"aux"`, or
        `"encoder.scan.hidden"` in a nested graph): how a loss reads a fork's output."""
        info = self.validate_path(path)
        if info.kind not in ("tag", "input"):
            raise GraphError(f"tagged({path!r}): that path is a {info.kind}, not a tag")
        graph = self.graph_at(info.owner)
        name = path.rpartition(".")[2]
        if name not in graph._values:
            raise GraphError(f"tagged({path!r}): the graph holding it has not run yet")
        return graph._values[name]

    def _check_inputs(self, inputs: dict) -> None:
        declared = ", ".join(self.inputs) or "none"
        for name in inputs:
            if name not in self.inputs:
                raise GraphError(f"graph called with unknown input {name!r}; declared inputs: "
                                 f"{declared}" + closest(name, self.inputs))
        missing = [name for name in self.inputs if name not in inputs]
        raise GraphError(f"graph called without input(s) {', '.join(missing)}; pass them as "
                         f"keywords: graph(x, {', '.join(f'{m}=...' for m in missing)})")

    def _run_checked(self, x, env: dict):
        """The plan, step by step, naming the step that fails and recording shapes."""
        shapes = {}
        last = x
        profiling = is_profiling()
        for i, op in enumerate(self._ops):
            before = _shape(x)
            try:
                if profiling:
                    with record_function(f"graph:{self._range_name(i)}"):
                        x, last = op(x, last, env)
                else:
                    x, last = op(x, last, env)
            except GraphError:
                raise
            except Exception as e:
                raise GraphError(f"{self._where(i)} failed on a stream of shape {before}: "
                                 f"{type(e).__name__}: {e}") from e
            shapes[i] = _shape(last)
        self._shapes = shapes
        return x

    def _range_name(self, i: int) -> str:
        step = self.steps[i]
        return self._node_names[i] if step["kind"] != "tag" else f"tag.{step['name']}"

    # ---------------------------------------------------------------- the state
    def reset(self) -> Graph:
        """Forget the values forward references carry between calls (a new sequence)."""
        self._state = {}
        for _, graph in self.named_subgraphs():
            graph._state = {}
        return self

    def detach_state(self) -> Graph:
        """Cut the carried values from the autograd history of earlier calls (truncated
        backpropagation through time), keeping their values."""
        self._state = {name: value.detach() for name, value in self._state.items()}
        for _, graph in self.named_subgraphs():
            graph._state = {name: value.detach() for name, value in graph._state.items()}
        return self

    def to(self, *args, **kwargs) -> Graph:
        """Move parameters and buffers as `Module.to` does; the carried state is reset,
        since it belongs to a sequence computed where the graph was."""
        super().to(*args, **kwargs)
        return self.reset()

    def extra_repr(self) -> str:
        flow = []
        for i, step in enumerate(self.steps):
            if step["kind"] == "tag":
                flow.append(f"tag({step['name']})")
            else:
                using = f"[{', '.join(step['using'])}]" if step.get("using") else ""
                flow.append(f"{step['kind']}({self._node_names[i]}){using}")
        inputs = f"inputs: {', '.join(self.inputs)}\n" if self.inputs else ""
        return inputs + "flow: " + " -> ".join(flow)
