"""Diagrams of a graph: Graphviz DOT text (`to_dot`) and SVG rendered by Graphviz's `dot`
(`to_svg`), optionally coloured by the time a `dlfree.profiler` run spent in each step.

Steps are boxes named by path and type (with the output shape once the graph has run),
the stream is solid edges, tags are notes: a value read in the same call is a dotted blue
edge, a forward reference (read from the previous call) a dashed red one. Nested graphs
and composite steps (split, loop, gate, switch, map) are clusters.
"""

from __future__ import annotations

import shutil
import subprocess

from dlfree import DLFreeError

from .errors import GraphError

__all__ = ["GraphDiagrams", "step_times"]

_COMPOSITE = ("Split", "Loop", "Gate", "Switch", "Map")


def _quote(text: str) -> str:
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + escaped + '"'


def step_times(graph, profile) -> dict[str, float]:
    """Seconds the profiled run spent in each step, by graph path. Each step ran inside a
    range `graph:<step name>`; the chain of such ranges around an event gives its path."""
    chains = {}  # chain of step names of the enclosing graphs -> that graph's path

    def index(g, path: str, chain: tuple) -> None:
        chains[chain] = path
        for sub, inner in g.named_subgraphs(nested=False):
            index(inner, f"{path}.{sub}" if path else sub, (*chain, sub.split(".")[0]))
    index(graph, "", ())
    times: dict[str, float] = {}
    for event in profile.events():
        if event.kind != "range" or not event.name.startswith("graph:"):
            continue
        names = []
        parent = event.parent
        while parent is not None:
            if parent.kind == "range" and parent.name.startswith("graph:"):
                names.append(parent.name[len("graph:"):])
            parent = parent.parent
        owner = chains.get(tuple(reversed(names)))
        if owner is None:
            continue
        step = event.name[len("graph:"):]
        path = f"{owner}.{step}" if owner else step
        times[path] = times.get(path, 0.0) + event.total_ns / 1e9
    return times


class _Dot:
    """Writes the DOT statements of one diagram; ids are n0, n1, ..."""

    def __init__(self, times: dict[str, float]):
        self.lines: list[str] = []
        self.count = 0
        self.times = times
        self.slowest = max(times.values(), default=0.0)

    def node(self, label: str, path: str | None = None, **attrs) -> str:
        name = f"n{self.count}"
        self.count += 1
        if path is not None and path in self.times:
            seconds = self.times[path]
            share = seconds / self.slowest if self.slowest else 0.0
            level = int(255 * (1 - share))
            attrs.update(style="filled", fillcolor=f"#ff{level:02x}{level:02x}")
            label += f"\n{seconds * 1e3:.3f} ms"
        attrs["label"] = label
        text = ", ".join(f"{key}={_quote(value)}" for key, value in attrs.items())
        self.lines.append(f"  {name} [{text}];")
        return name

    def edge(self, tail: str, head: str, **attrs) -> None:
        text = ", ".join(f"{key}={_quote(value)}" for key, value in attrs.items())
        self.lines.append(f"  {tail} -> {head}" + (f" [{text}];" if text else ";"))

    def cluster(self, label: str, body) -> tuple[str, str]:
        self.lines.append(f"  subgraph cluster_{self.count} {{")
        self.lines.append(f"  label={_quote(label)}; style=rounded; color=gray50;")
        ends = body()
        self.lines.append("  }")
        return ends

    # ------------------------------------------------------------ the parts
    def module(self, module, name: str, path: str, shape=None) -> tuple[str, str]:
        """Draw a step's module; returns the ids the stream enters and leaves by."""
        from .graph import Graph

        kind = type(module).__name__
        if isinstance(module, Graph):
            return self.cluster(f"{name}: Graph", lambda: self.graph(module, path))
        if kind in _COMPOSITE:
            return self.cluster(f"{name}: {kind}", lambda: self.composite(module, path, shape))
        label = f"{name}: {kind}" + (f"\n{shape}" if shape is not None else "")
        node = self.node(label, path, shape="box")
        return node, node

    def composite(self, module, path: str, shape) -> tuple[str, str]:
        kind = type(module).__name__
        out_label = {"Split": "merge", "Gate": "weighted sum", "Switch": "chosen rows",
                     "Loop": "loop end", "Map": "stack"}[kind]
        enter = self.node(kind.lower(), None, shape="point")
        leave = self.node(out_label + (f"\n{shape}" if shape is not None else ""), None,
                          shape="diamond")
        for child_name, child in module._modules.items():
            if child is None:
                continue
            children = list(child._modules.items()) if child_name in ("experts", "branches") \
                else [(child_name, child)]
            for sub_name, sub in children:
                sub_path = f"{path}.{child_name}" + (
                    f".{sub_name}" if sub_name != child_name else "")
                head, tail = self.module(sub, sub_path.rpartition(".")[2], sub_path)
                role = child_name in ("router", "selector", "cond")
                self.edge(enter, head, style="dashed" if role else "solid")
                self.edge(tail, leave, style="dashed" if role else "solid",
                          **({"label": child_name} if role else {}))
        if kind == "Loop":
            times = f"x{module.n}" if module.mode == "for_n" else \
                f"{module.mode} (max {module.max_iter})"
            self.edge(leave, enter, label=times, constraint="false", color="gray40")
        return enter, leave

    def graph(self, graph, prefix: str) -> tuple[str, str]:
        shapes = graph._shapes or {}
        enter = self.node("input", None, shape="oval")
        tags = {}
        for name in graph.inputs:
            tags[name] = self.node(f"input {name}", None, shape="oval")
        stream = last = enter
        pending = []  # (tag, step head) edges drawn after every tag has a node
        for i, step in enumerate(graph.steps):
            if step["kind"] == "tag":
                name = step["name"]
                tags[name] = self.node(name, None, shape="note", color="blue")
                self.edge(last, tags[name], color="blue")
                continue
            label = graph._node_names[i]
            path = f"{prefix}.{label}" if prefix else label
            head, tail = self.module(step["module"], label, path, shapes.get(i))
            self.edge(stream, head)
            for name in step.get("using", ()):
                pending.append((name, head, graph._tag_steps.get(name, -1) > i))
            if step["kind"] == "also":
                add = self.node("+", None, shape="circle")
                self.edge(tail, add)
                self.edge(stream, add, label="residual")
                tail = add
            if step["kind"] == "fork":
                last = tail
            else:
                stream = last = tail
        for name, head, forward in pending:
            if forward:
                self.edge(tags[name], head, style="dashed", color="red", constraint="false",
                          label="previous call")
            else:
                self.edge(tags[name], head, style="dotted", color="blue")
        leave = self.node("output", None, shape="oval")
        self.edge(stream, leave)
        return enter, leave


class GraphDiagrams:
    """The diagram methods of `Graph` (a mixin)."""

    def to_dot(self, profile=None) -> str:
        """The graph as Graphviz DOT text; with a `dlfree.profiler.profile` that ran the
        graph, steps are coloured by their share of the slowest step's time."""
        dot = _Dot(step_times(self, profile) if profile is not None else {})
        dot.graph(self, "")
        return "\n".join(["digraph G {", "  rankdir=TB;",
                          '  node [fontname="Helvetica", fontsize=10];',
                          '  edge [fontname="Helvetica", fontsize=9];', *dot.lines, "}"]) + "\n"

    def to_svg(self, path, profile=None) -> None:
        """Render the diagram to an SVG file at `path` with Graphviz's `dot`."""
        exe = shutil.which("dot")
        if exe is None:
            raise GraphError("to_svg needs Graphviz's `dot` program, which is not on PATH; "
                             "install Graphviz (apt-get install graphviz, brew install "
                             "graphviz or conda install graphviz), or write to_dot() to a file")
        result = subprocess.run([exe, "-Tsvg", "-o", str(path)], input=self.to_dot(profile),
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise DLFreeError(f"Graphviz dot failed on the graph's diagram: "
                              f"{result.stderr.strip()}")
