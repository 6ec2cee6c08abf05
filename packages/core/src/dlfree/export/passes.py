"""Graph passes: dead-code removal, constant folding, batch-norm folding and unflattening
the reshapes around N-d linear layers, each returning a new `Graph`."""

from __future__ import annotations

from dataclasses import replace

from .graph import Graph, run_node


def eliminate_dead_code(graph: Graph) -> Graph:
    """Drop the nodes whose outputs no graph output depends on, and unread constants."""
    needed = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if node.output in needed:
            kept.append(node)
            needed.update(node.inputs)
    return replace(graph, nodes=kept[::-1],
                   parameters={k: v for k, v in graph.parameters.items() if k in needed},
                   constants={k: v for k, v in graph.constants.items() if k in needed})


def fold_constants(graph: Graph) -> Graph:
    """Evaluate the nodes whose inputs are all constants, turning their outputs into
    constants; then drop what no longer is read."""
    constants = dict(graph.constants)
    nodes = []
    for node in graph.nodes:
        if node.inputs and all(i in constants for i in node.inputs):
            constants[node.output] = run_node(node, [constants[i] for i in node.inputs],
                                              graph.device)
        else:
            nodes.append(node)
    return eliminate_dead_code(replace(graph, nodes=nodes, constants=constants))


def fold_batch_norm(graph: Graph) -> Graph:
    """Fold each eval-mode `batch_norm` node whose statistics and affine parameters are
    constants into the convolution or linear node before it, when that node's output is read
    by the norm alone: the weight is scaled per output channel and the bias shifted, so the
    graph loses one node per fold and computes the same function."""
    values = {**graph.parameters, **graph.constants}
    readers = graph.consumers()
    producer = {node.output: node for node in graph.nodes}
    params = dict(graph.parameters)
    shapes, dtypes = dict(graph.shapes), dict(graph.dtypes)
    dropped = set()
    renamed: dict = {}
    new_inputs: dict = {}
    for norm in graph.nodes:
        if norm.op != "batch_norm" or norm.attributes["training"]:
            continue
        named = dict(zip(norm.arg_names, norm.inputs, strict=True))
        prev = producer.get(named["input"])
        if (prev is None or prev.op not in ("conv", "linear") or readers.get(prev.output) != 1
                or prev.output in graph.outputs
                or any(i not in values for i in prev.inputs[1:] + norm.inputs[1:])):
            continue
        w = values[prev.inputs[1]]
        channels = w.shape[0]
        if "running_mean" not in named or "running_var" not in named:
            continue
        mean, var = values[named["running_mean"]], values[named["running_var"]]
        xp = graph.device.xp
        scale = 1 / xp.sqrt(var.astype(xp.float64) + norm.attributes["eps"])
        if "weight" in named:
            scale = scale * values[named["weight"]]
        shift = values[named["bias"]] if "bias" in named else 0
        bias = values[prev.inputs[2]] if len(prev.inputs) > 2 else 0
        base = prev.inputs[1]
        w_name, b_name = f"{base}.bn_folded", f"{base}.bn_folded_bias"
        params[w_name] = (w * scale.reshape((channels,) + (1,) * (w.ndim - 1))).astype(w.dtype)
        params[b_name] = ((bias - mean) * scale + shift).astype(w.dtype)
        for name in (w_name, b_name):
            shapes[name], dtypes[name] = tuple(params[name].shape), params[name].dtype
        new_inputs[prev.output] = [prev.inputs[0], w_name, b_name]
        dropped.add(norm.output)
        renamed[norm.output] = prev.output
    nodes = []
    for node in graph.nodes:
        if node.output in dropped:
            continue
        inputs = new_inputs.get(node.output, node.inputs)
        nodes.append(replace(node, inputs=[renamed.get(i, i) for i in inputs]))
    outputs = [renamed.get(o, o) for o in graph.outputs]
    return eliminate_dead_code(replace(graph, nodes=nodes, outputs=outputs, parameters=params,
                                       shapes=shapes, dtypes=dtypes))


def unflatten_linears(graph: Graph) -> Graph:
    """Replace each `reshape` to 2-d -> `linear` -> `reshape` back, which `F.linear` records
    for an input of more than two dims, by one `linear` on the input as it lies: the graph
    computes the same, and an exporter can write it as one batched MatMul that engines fuse
    with its bias and the activation after it."""
    readers = graph.consumers()
    producer = {node.output: node for node in graph.nodes}
    reader = {i: node for node in graph.nodes for i in node.inputs}  # the one, where one
    replaced: dict = {}  # id of a node -> its replacement, or None when dropped
    for node in graph.nodes:
        if node.op != "linear" or readers.get(node.output) != 1:
            continue
        flatten = producer.get(node.inputs[0])
        unflatten = reader.get(node.output)
        if flatten is None or unflatten is None or flatten.op != "reshape" or \
                unflatten.op != "reshape" or readers.get(flatten.output) != 1:
            continue
        lead = tuple(graph.shapes[flatten.inputs[0]])
        out = tuple(graph.shapes[unflatten.output])
        if len(lead) < 3 or out[:-1] != lead[:-1] or \
                tuple(graph.shapes[flatten.output])[1:] != lead[-1:]:
            continue
        replaced[id(flatten)] = None
        replaced[id(node)] = None
        replaced[id(unflatten)] = replace(node, inputs=[flatten.inputs[0], *node.inputs[1:]],
                                          output=unflatten.output)
    if not replaced:
        return graph
    nodes = [replaced.get(id(n), n) for n in graph.nodes]
    return replace(graph, nodes=[n for n in nodes if n is not None])
