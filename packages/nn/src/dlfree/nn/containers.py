"""Containers: `Sequential`, `ModuleList`, `ModuleDict`, `ParameterList`, `ParameterDict`,
`Identity`, with PyTorch's behaviour and state_dict names (`0.weight`, `blocks.3.bias`).

Their contents may change after construction, so each reports its current contents as
its config (what a model file records), not the arguments it was built with.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from dlfree import Parameter

from .module import Module

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           "Identity"]


def _index(i, length: int, what: str) -> int:
    i = operator.index(i)
    if not -length <= i < length:
        raise IndexError(f"index {i} is out of range for a {what} of length {length}")
    return i % length


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. for a removed head)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Sequential(Module):
    """Modules called in order, each on the previous one's output: `Sequential(a, b, c)`
    or, with names, `Sequential(OrderedDict(conv=..., act=...))`."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], Mapping):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        if isinstance(index, str):
            return self._modules[index]
        return list(self._modules.values())[_index(index, len(self), "Sequential")]

    def __setitem__(self, index, module: Module) -> None:
        key = index if isinstance(index, str) else \
            list(self._modules)[_index(index, len(self), "Sequential")]
        if key in self._modules:
            setattr(self, key, module)
        else:
            self.add_module(key, module)

    def __delitem__(self, index) -> None:
        keys = list(self._modules)
        for key in (keys[index] if isinstance(index, slice)
                    else [keys[_index(index, len(self), "Sequential")]]):
            del self._modules[key]
        modules = list(self._modules.values())  # renumbered 0..n-1, as PyTorch does
        self._modules.clear()
        for i, module in enumerate(modules):
            self._modules[str(i)] = module

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for module in modules:
            self.append(module)
        return self

    def get_config(self) -> dict:
        if list(self._modules) == [str(i) for i in range(len(self))]:
            return {"args": list(self._modules.values())}
        return {"args": [OrderedDict(self._modules)]}


class ModuleList(Module):
    """A list of modules, registered so their parameters are found (`blocks.0.weight`)."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[str(_index(index, len(self), "ModuleList"))]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, str(_index(index, len(self), "ModuleList")), module)

    def __delitem__(self, index) -> None:
        modules = list(self._modules.values())
        del modules[index if isinstance(index, slice) else _index(index, len(self), "ModuleList")]
        self._modules.clear()
        self.extend(modules)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if isinstance(modules, Module) and not isinstance(modules, (ModuleList, Sequential)):
            raise TypeError("ModuleList.extend expects an iterable of modules, got a "
                            f"{type(modules).__name__}")
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        self.extend(modules)

    def get_config(self) -> dict:
        return {"modules": list(self._modules.values())}


class _ByName:
    """The read-and-delete half of the dict API over one of a module's tables (`_TABLE`):
    the module and parameter dicts share it."""

    _TABLE: str

    def _table(self) -> dict:
        return getattr(self, self._TABLE)

    def __len__(self) -> int:
        return len(self._table())

    def __iter__(self):
        return iter(self._table())

    def __contains__(self, key: str) -> bool:
        return key in self._table()

    def __getitem__(self, key: str):
        return self._table()[key]

    def __delitem__(self, key: str) -> None:
        del self._table()[key]

    def keys(self):
        return self._table().keys()

    def values(self):
        return self._table().values()

    def items(self):
        return self._table().items()

    def update(self, entries) -> None:
        for key, value in (entries.items() if isinstance(entries, Mapping) else entries):
            self[key] = value


class ModuleDict(_ByName, Module):
    """A dict of modules by name, registered so their parameters are found."""

    _TABLE = "_modules"

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, key: str, module: Module) -> None:
        if key in self._modules:
            setattr(self, key, module)
        else:
            self.add_module(key, module)

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def get_config(self) -> dict:
        return {"modules": OrderedDict(self._modules)}


class ParameterList(Module):
    """A list of parameters, registered as `0`, `1`, ..."""

    def __init__(self, values: Iterable | None = None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, index: int) -> Parameter:
        return self._parameters[str(_index(index, len(self), "ParameterList"))]

    def __setitem__(self, index: int, value) -> None:
        self.register_parameter(str(_index(index, len(self), "ParameterList")),
                                _as_parameter(value))

    def append(self, value) -> ParameterList:
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values: Iterable) -> ParameterList:
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return _parameter_lines(self._parameters)

    def get_config(self) -> dict:
        return {"values": list(self._parameters.values())}


class ParameterDict(_ByName, Module):
    """A dict of parameters by name."""

    _TABLE = "_parameters"

    def __init__(self, parameters: Mapping | Iterable | None = None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, _as_parameter(value))

    def extra_repr(self) -> str:
        return _parameter_lines(self._parameters)

    def get_config(self) -> dict:
        return {"parameters": OrderedDict(self._parameters)}


def _parameter_lines(parameters: dict) -> str:
    return "\n".join(f"({k}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                     for k, p in parameters.items())


def _as_parameter(value) -> Parameter:
    return value if isinstance(value, Parameter) else Parameter(value)
