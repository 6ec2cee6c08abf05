"""The graph tree: every label, tag and input of a graph and of the graphs nested in it,
addressed by a dotted path from the root (`"encoder.scan.hidden"`); freezing, parameter
groups and checkpoints by part (`load_subgraph`, checked by name space and structural hash).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass

from dlfree import CheckpointError
from dlfree.io.architecture import encode
from dlfree.io.tensors import load_tensors

from .errors import GraphError, closest

__all__ = ["GraphTree", "PathInfo", "structural_hash"]

PATH_KINDS = ("graph", "node", "module", "tag", "input")


@dataclass(frozen=True)
class PathInfo:
    """What a graph path names: `kind` is "graph" (a nested graph), "node" (a step's
    module), "module" (a module inside a step), "tag" or "input"; `type` the module's
    class name (for tags and inputs, "tag"/"input"); `owner` the path of the graph that
    holds it."""

    path: str
    kind: str
    type: str
    owner: str

    def __str__(self) -> str:
        where = f"graph {self.owner!r}" if self.owner else "the root graph"
        return f"{self.path}: {self.kind} ({self.type}) in {where}"


def structural_hash(module) -> str:
    """A hash of a module's architecture (types, configs, labels, parameter shapes), not of
    its values: two components with the same hash have the same structure."""
    text = json.dumps(encode(module, type(module).__name__), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _modules_down_to_graphs(module, path: str):
    """(path, module) for `module` and its descendants, not entering nested graphs (they
    list their own paths)."""
    from .graph import Graph

    yield path, module
    if isinstance(module, Graph):
        return
    for name, child in module._modules.items():
        if child is not None:
            yield from _modules_down_to_graphs(child, _join(path, name))


class GraphTree:
    """The path-addressing methods of `Graph` (a mixin: it relies on the graph's steps)."""

    def named_subgraphs(self, prefix: str = "", nested: bool = True):
        """(path, graph) for every graph nested in this one, outer first; with
        `nested=False` only the outermost ones (not the graphs inside them)."""
        from .graph import Graph

        def walk(module, at):
            for name, child in module._modules.items():
                if child is None:
                    continue
                path = _join(at, name)
                if isinstance(child, Graph):
                    yield path, child
                    if not nested:
                        continue
                yield from walk(child, path)
        yield from walk(self, prefix)

    def _own_paths(self, prefix: str):
        from .graph import Graph

        for name in self.inputs:
            yield _join(prefix, name), PathInfo(_join(prefix, name), "input", "input", prefix)
        for i, step in enumerate(self.steps):
            if step["kind"] == "tag":
                path = _join(prefix, step["name"])
                yield path, PathInfo(path, "tag", "tag", prefix)
                continue
            node = self._modules.get(self._node_names[i])
            if node is None:
                continue
            top = _join(prefix, self._node_names[i])
            for sub, module in _modules_down_to_graphs(node, top):
                kind = "graph" if isinstance(module, Graph) else \
                    ("node" if sub == top else "module")
                yield sub, PathInfo(sub, kind, type(module).__name__, prefix)

    def named_graph_paths(self):
        """(path, PathInfo) for every input, tag, step module and nested graph of the tree,
        in flow order, each nested graph's paths after its own entry."""
        from .graph import Graph

        def walk(graph, prefix):
            for path, info in graph._own_paths(prefix):
                yield path, info
                if info.kind == "graph":
                    inner = self.get_submodule(path)
                    if isinstance(inner, Graph):
                        yield from walk(inner, path)
        yield from walk(self, "")

    def validate_path(self, path: str) -> PathInfo:
        """What `path` names in the tree; a path that names nothing raises `GraphError`
        listing the closest valid paths."""
        if path == "":
            return PathInfo("", "graph", type(self).__name__, "")
        paths = dict(self.named_graph_paths())
        if path in paths:
            return paths[path]
        raise GraphError(f"no graph path {path!r}" + closest(path, paths))

    def graph_at(self, path: str = ""):
        """The graph at `path` (the root for "")."""
        info = self.validate_path(path)
        if info.kind != "graph":
            raise GraphError(f"{path!r} is a {info.kind}, not a graph")
        return self.get_submodule(path) if path else self

    def _step_module_of_tag(self, info: PathInfo):
        """The module of the step whose output a tag names (None for a tagged input)."""
        graph = self.get_submodule(info.owner) if info.owner else self
        name = info.path.rpartition(".")[2]
        index = graph._tag_steps[name]
        for i in range(index - 1, -1, -1):
            if graph.steps[i]["kind"] != "tag":
                return graph._modules.get(graph._node_names[i])
        return None

    def parameters_at(self, path: str = "", recurse: bool = True) -> list:
        """The parameters under a graph path: a label's module, or for a tag the module of
        the step that produced it; `freeze`/`thaw` use this, so they take graph paths too."""
        if path == "":
            return list(self.parameters(recurse=recurse))
        info = self.validate_path(path)
        if info.kind in ("graph", "node", "module"):
            return list(self.get_submodule(path).parameters(recurse=recurse))
        if info.kind == "tag":
            module = self._step_module_of_tag(info)
            return [] if module is None else list(module.parameters(recurse=recurse))
        return []

    def structural_hash(self, path: str = "") -> str:
        """`structural_hash` of the component at a graph path (the whole graph for "")."""
        return structural_hash(self._component(path))

    def _component(self, path: str):
        if path == "":
            return self
        info = self.validate_path(path)
        if info.kind not in ("graph", "node", "module"):
            raise GraphError(f"{path!r} is a {info.kind}; only graphs and modules hold "
                             "weights")
        return self.get_submodule(path)

    def load_subgraph(self, path: str, file) -> None:
        """Load a component saved alone (`dl.save(component, file)`) into the part of this
        graph at `path`. The file's parameter names must be the part's, and its
        architecture's structural hash the part's; otherwise `CheckpointError` says which
        names are missing or extra and that the structures differ, and nothing is written."""
        target = self._component(path)
        weights, metadata = load_tensors(file)
        problems = []
        own = target.state_dict()
        missing = [k for k in own if k not in weights]
        extra = [k for k in weights if k not in own]
        if missing:
            problems.append("names the part has and the file lacks: " + ", ".join(
                repr(k) + "".join(f" (the file has {near!r})" for near in
                                  difflib.get_close_matches(k, extra, n=1, cutoff=0.5))
                for k in missing))
        if extra:
            problems.append(f"names the file has and the part lacks: "
                            f"{', '.join(map(repr, extra))}")
        if "architecture" not in metadata:
            problems.append("the file holds tensors only, no architecture to check the "
                            "structure against (save the component with dl.save)")
        else:
            theirs = hashlib.sha256(json.dumps(json.loads(metadata["architecture"]),
                                               sort_keys=True).encode()).hexdigest()[:16]
            ours = structural_hash(target)
            if theirs != ours:
                problems.append(f"the structural hash differs (file {theirs}, part {ours}): "
                                "the component was built differently")
        if problems:
            raise CheckpointError(f"load_subgraph({path!r}, {str(file)!r}): "
                                  + "; ".join(problems))
        target.load_state_dict(weights)
