"""Parametrizations, as torch.nn.utils.parametrize: a tensor of a module (its `weight`)
computed on every access from other parameters, e.g. weight = g * v / ||v||.

`register_parametrization(module, "weight", p)` moves the weight to
`module.parametrizations.weight.original` (or `original0`, `original1`, ... when
`p.right_inverse` returns several tensors) and makes `module.weight` a property returning
`p(original)`; assigning to `module.weight` sets the original through `p.right_inverse`.
As in torch, the module's class becomes a subclass made for that one module
(`ParametrizedLinear`), so the property touches no other instance; the state dict keys are
torch's (`parametrizations.weight.original0`).
"""

from __future__ import annotations

import dlfree as dl
from dlfree import Parameter

from ..containers import ModuleDict, ModuleList
from ..module import Module

__all__ = ["register_parametrization", "is_parametrized", "remove_parametrizations",
           "ParametrizationList"]


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to its `original`(s)."""

    def __init__(self, modules, original: dl.Tensor):
        super().__init__(modules)
        first = modules[0]
        with dl.no_grad():
            try:  # a parametrization that cannot invert keeps the tensor as it is, as in torch
                stored = first.right_inverse(original) if hasattr(first, "right_inverse") \
                    else original
            except NotImplementedError:
                stored = original
        self.is_tensor = isinstance(stored, dl.Tensor)
        if self.is_tensor:
            self.original = _as_parameter(stored, original)
        else:
            for i, value in enumerate(stored):
                setattr(self, f"original{i}", _as_parameter(value, original))
            self.ntensors = len(stored)

    def right_inverse(self, value: dl.Tensor) -> None:
        """Set the original(s) so that the chain computes `value`: each parametrization's
        `right_inverse`, last first (one without it passes the value on)."""
        with dl.no_grad():
            for parametrization in reversed(list(self)):
                if hasattr(parametrization, "right_inverse"):
                    value = parametrization.right_inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, part in enumerate(value):
                    getattr(self, f"original{i}").copy_(part)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for parametrization in list(self)[1:]:
            x = parametrization(x)
        return x


def _as_parameter(value: dl.Tensor, like: dl.Tensor) -> Parameter:
    return Parameter(value.detach().clone(), requires_grad=like.requires_grad)


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has parametrizations (on `tensor_name`, when given)."""
    table = module._modules.get("parametrizations")
    return table is not None and (tensor_name is None or tensor_name in table)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module,
                             *, unsafe: bool = False) -> Module:
    """Compute `module.<tensor_name>` as `parametrization(original)` from now on; a second
    registration on the same name chains after the first. Returns `module`."""
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    original = getattr(module, tensor_name)
    if not isinstance(original, dl.Tensor):
        raise ValueError(f"register_parametrization: {type(module).__name__}.{tensor_name} is "
                         f"not a parameter or buffer (got {type(original).__name__})")
    if tensor_name in module._parameters:
        del module._parameters[tensor_name]
    else:
        module._buffers.pop(tensor_name, None)
    if not is_parametrized(module):
        module.parametrizations = ModuleDict()
        cls = type(module)
        module.__class__ = type(f"Parametrized{cls.__name__}", (cls,),
                                {"__module__": cls.__module__, "_plain_class": cls})
    module.parametrizations[tensor_name] = ParametrizationList([parametrization], original)
    setattr(type(module), tensor_name,
            property(lambda self, name=tensor_name: self.parametrizations[name](),
                     lambda self, value, name=tensor_name:
                     self.parametrizations[name].right_inverse(value)))
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo `register_parametrization` on `tensor_name`: the tensor becomes a parameter
    again, holding its current computed value (or the original with
    `leave_parametrized=False`, which needs a single original)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations: {type(module).__name__} has no "
                         f"parametrization on {tensor_name!r}")
    chain = module.parametrizations[tensor_name]
    with dl.no_grad():
        if leave_parametrized:
            value = getattr(module, tensor_name)
        elif chain.is_tensor:
            value = chain.original
        else:
            raise ValueError("remove_parametrizations: leave_parametrized=False needs a "
                             "single original tensor")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    setattr(module, tensor_name, Parameter(value.detach().clone()))
    if not len(module.parametrizations):
        del module.parametrizations
        module.__class__ = type(module)._plain_class
    return module
