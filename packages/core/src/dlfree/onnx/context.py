"""`Context`: what a converter sees of the ONNX graph being written while it maps one traced
node: the node, the ONNX names of its inputs, and helpers that add nodes, constants and the
int64 shape tensors that follow the dynamic dims."""

from __future__ import annotations

import numpy as np

from ..errors import ExportError
from ..export.symbolic import SymInt, has_symbols

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


class Context:
    """The export of one graph; `node` is the node being converted.

    A converter reads `node`, `attributes` (the node's attributes, with `SymInt`s where
    they follow the dynamic dims), `inputs` (the ONNX names of the node's inputs),
    `input_shapes`/`input_dtypes` and `output_shape`/`output_dtype`, and writes through
    `add`, `constant` and `ints`. `opset` is the opset being written."""

    def __init__(self, graph, opset: int, helper, numpy_helper):
        self.graph = graph
        self.opset = opset
        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list = []
        self.constants: dict = {}
        self.names: dict = {}  # graph value name -> ONNX value name
        self._counter = 0
        self._dims: dict = {}  # dim name -> ONNX name of its int64 [1] size
        self._cache: dict = {}
        self.node = None

    # -------------------------------------------------------------- the node's view
    @property
    def attributes(self) -> dict:
        node = self.node
        return node.symbolic if node.symbolic is not None else node.attributes

    @property
    def inputs(self) -> list[str]:
        return [self.names[i] for i in self.node.inputs]

    def named_inputs(self) -> dict:
        """A recorded op's Tensor arguments by parameter name -> ONNX value names."""
        return dict(zip(self.node.arg_names, self.inputs, strict=True))

    def named_shapes(self) -> dict:
        return dict(zip(self.node.arg_names, self.input_shapes, strict=True))

    def named_dtypes(self) -> dict:
        return dict(zip(self.node.arg_names, self.input_dtypes, strict=True))

    @property
    def input_shapes(self) -> list[tuple]:
        return [self.graph.shapes[i] for i in self.node.inputs]

    @property
    def input_dtypes(self) -> list:
        return [np.dtype(self.graph.dtypes[i]) for i in self.node.inputs]

    @property
    def output_shape(self) -> tuple:
        return self.graph.shapes[self.node.output]

    @property
    def output_dtype(self):
        return np.dtype(self.graph.dtypes[self.node.output])

    def value(self, name: str):
        """The array of a parameter or constant by graph value name, None for a computed
        value."""
        for table in (self.graph.parameters, self.graph.constants):
            if name in table:
                return table[name]
        return None

    def constant_input(self, i: int):
        """Input i's array when it is a parameter or constant (as NumPy), else None."""
        array = self.value(self.node.inputs[i])
        return None if array is None else _to_numpy(array)

    def fail(self, why: str) -> ExportError:
        """An error naming the node's op and layer, to raise from a converter."""
        node = self.node
        where = f" (layer {node.layer})" if node.layer else ""
        return ExportError(f"onnx.export: op {node.op}{where}: {why}")

    # -------------------------------------------------------------------- writing
    def fresh(self, hint: str) -> str:
        """A new value or node name, apart from the trace's (input_*, v*, const_*, weights)."""
        self._counter += 1
        return f"_{hint}_{self._counter}"

    def add(self, op_type: str, inputs: list, outputs: int = 1, **attributes):
        """Append one ONNX node; returns its output name (a list when `outputs` > 1). An
        input of "" is an omitted optional input."""
        names = [self.fresh(op_type) for _ in range(outputs)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), names,
                                                name=self.fresh(f"n_{op_type}"), **attributes))
        return names[0] if outputs == 1 else names

    def constant(self, value, dtype=None) -> str:
        """A constant (a Constant node) holding `value` (an array or a number) as `dtype`
        (default: the value's own); equal small constants are shared."""
        array = np.asarray(_to_numpy(value), dtype=dtype)
        key = None
        if array.size <= 16:
            key = (array.dtype.str, array.shape, array.tobytes())
            if key in self._cache:
                return self._cache[key]
        name = self.fresh("const")
        self.constants[name] = array
        if key is not None:
            self._cache[key] = name
        return name

    def ints(self, values) -> str:
        """A 1-D int64 tensor of `values` (ints or `SymInt`s): a constant when all are ints,
        else computed from the inputs' shapes."""
        values = list(values)
        if not any(isinstance(v, SymInt) for v in values):
            return self.constant(np.array(values, dtype=np.int64))
        parts, run = [], []
        for v in values:
            if isinstance(v, SymInt):
                if run:
                    parts.append(self.constant(np.array(run, dtype=np.int64)))
                    run = []
                parts.append(self.sym(v))
            else:
                run.append(int(v))
        if run:
            parts.append(self.constant(np.array(run, dtype=np.int64)))
        key = ("ints", tuple(values))
        if key not in self._cache:
            self._cache[key] = parts[0] if len(parts) == 1 else self.add("Concat", parts, axis=0)
        return self._cache[key]

    def sym(self, value: SymInt) -> str:
        """The int64 [1] tensor of a SymInt: coeff * prod(dims) + offset."""
        key = ("sym", value)
        if key in self._cache:
            return self._cache[key]
        out = None
        for d in value.dims:
            size = self.dim(d)
            out = size if out is None else self.add("Mul", [out, size])
        if value.coeff != 1:
            out = self.add("Mul", [out, self.constant(np.array([value.coeff], np.int64))])
        if value.offset:
            out = self.add("Add", [out, self.constant(np.array([value.offset], np.int64))])
        self._cache[key] = out
        return out

    def dim(self, name: str) -> str:
        """The int64 [1] size of dynamic dim `name`, read off the first input that has it."""
        if name not in self._dims:
            for input_name, shape in zip(self.graph.inputs, self.graph.input_shapes,
                                         strict=True):
                if name in shape:
                    axis = shape.index(name)
                    self._dims[name] = self.add("Shape", [self.names[input_name]], start=axis,
                                                end=axis + 1)
                    break
        return self._dims[name]

    def fixed(self, key: str):
        """Attribute `key`, refused when it follows the dynamic dims but the ONNX attribute
        it becomes must be a fixed number."""
        value = self.attributes[key]
        if has_symbols(value):
            raise self.fail(f"{key} follows the dynamic dims ({value}), and ONNX needs it "
                            "fixed; valid: mark fewer dims dynamic")
        return value

    def cast(self, name: str, dtype) -> str:
        """`name` cast to `dtype` (a NumPy dtype)."""
        return self.add("Cast", [name], to=self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))


def _to_numpy(value):
    """A backend array (NumPy or CuPy) or a number as a NumPy value."""
    get = getattr(value, "get", None)
    return get() if callable(get) and not isinstance(value, np.ndarray | np.generic) else value
