"""`Module`: the base of every layer and model, with PyTorch's contract.

Assigning a `Parameter`, a `Module` or a registered buffer to an attribute registers it;
`state_dict` names are the attribute paths, as in PyTorch, so PyTorch weights load by name.
A module also records the arguments its constructor was called with (`get_config`), which
is what `dl.save` writes beside the weights so that `dl.load` can rebuild the model.
"""

from __future__ import annotations

import functools
import inspect
from collections import OrderedDict
from typing import Any, NamedTuple

import dlfree as dl
from dlfree import CheckpointError, Parameter, Tensor
from dlfree.io.rename import apply_rename

__all__ = ["Module", "IncompatibleKeys"]


class _KeyLists(NamedTuple):
    missing_keys: list
    unexpected_keys: list


class IncompatibleKeys(_KeyLists):
    """What `load_state_dict` found missing from, or unexpected in, the state dict (a pair,
    as torch's), and in `renamed` the keys its `rename=` map renamed ({old: new})."""

    renamed: dict

    def __new__(cls, missing_keys: list, unexpected_keys: list, renamed: dict | None = None):
        self = super().__new__(cls, missing_keys, unexpected_keys)
        self.renamed = dict(renamed or {})
        return self


class _HookHandle:
    """Removes one registered hook."""

    def __init__(self, hooks: dict, key: int):
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        self._hooks.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


_next_hook_id = iter(range(1 << 62))


def _recording_init(init):
    """Wrap a subclass's `__init__` so the outermost call records its arguments."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if "_init_arguments" not in self.__dict__:
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            arguments.pop(next(iter(signature.parameters)))
            object.__setattr__(self, "_init_arguments", arguments)
        init(self, *args, **kwargs)

    __init__.__signature__ = signature
    return __init__


class Module:
    """Base class of layers and models: subclass it, assign parameters and submodules in
    `__init__` (after `super().__init__()`), and compute the output in `forward`."""

    training: bool

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _recording_init(cls.__dict__["__init__"])

    def __init__(self):
        for name, value in (("training", True), ("_parameters", OrderedDict()),
                            ("_buffers", OrderedDict()), ("_non_persistent", set()),
                            ("_modules", OrderedDict()), ("_forward_pre_hooks", OrderedDict()),
                            ("_forward_hooks", OrderedDict()),
                            ("_load_state_dict_pre_hooks", OrderedDict())):
            object.__setattr__(self, name, value)
        if "_init_arguments" not in self.__dict__:
            object.__setattr__(self, "_init_arguments", {})

    # -------------------------------------------------------------- attributes
    def _check_initialised(self, what: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call; call "
                                 f"super().__init__() first in {type(self).__name__}.__init__")

    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            self._check_initialised("parameters")
            if name not in params:  # a new name goes last; a reassigned one keeps its place
                self._forget(name)
            params[name] = value
        elif isinstance(value, Module):
            self._check_initialised("submodules")
            if name not in self._modules:
                self._forget(name)
            self._modules[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as parameter {name!r} "
                                "(dl.Parameter or None expected)")
            params[name] = None
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as child module "
                                f"{name!r} (Module or None expected)")
            self._modules[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} "
                                "(Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        self.__dict__.pop(name, None)
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        self._non_persistent.discard(name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    def _check_name(self, name: str, kind: str) -> None:
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"{kind} name must be a non-empty string without '.', got {name!r}")
        if hasattr(type(self), name) or name in self.__dict__:
            raise KeyError(f"cannot register {kind} {name!r}: {type(self).__name__} already "
                           "has an attribute of that name")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a `None` placeholder) under `name`."""
        self._check_initialised("parameters")
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot register {type(param).__name__} as parameter {name!r} "
                            "(dl.Parameter or None expected)")
        self._forget(name)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (running statistics, masks).

        Non-persistent buffers are left out of `state_dict`."""
        self._check_initialised("buffers")
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot register {type(tensor).__name__} as buffer {name!r} "
                            "(Tensor or None expected)")
        self._forget(name)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under `name`."""
        self._check_initialised("submodules")
        self._check_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    # ----------------------------------------------------------------- calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    def register_forward_pre_hook(self, hook) -> _HookHandle:
        """`hook(module, args)` runs before `forward`; a non-None return replaces args."""
        key = next(_next_hook_id)
        self._forward_pre_hooks[key] = hook
        return _HookHandle(self._forward_pre_hooks, key)

    def register_forward_hook(self, hook) -> _HookHandle:
        """`hook(module, args, output)` runs after `forward`; a non-None return replaces
        the output."""
        key = next(_next_hook_id)
        self._forward_hooks[key] = hook
        return _HookHandle(self._forward_hooks, key)

    # --------------------------------------------------------------- traversal
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True):
        """Yield (path, module) for this module and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                               remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def _named_members(self, table: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """Yield (path, parameter); a parameter shared by two modules is yielded once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def num_parameters(self, only_trainable: bool = False) -> int:
        """How many scalars the (trainable, if asked) parameters hold, shared ones once."""
        return sum(p.numel() for p in self.parameters()
                   if p.requires_grad or not only_trainable)

    # ------------------------------------------------------- path addressing
    def get_submodule(self, target: str = "") -> Module:
        """The module at a dotted path (`"encoder.layers.0"`); `""` is this module."""
        module = self
        walked = []
        for part in target.split(".") if target else []:
            children = module._modules
            if part not in children or children[part] is None:
                where = ".".join(walked) or "the root"
                names = ", ".join(k for k, v in children.items() if v is not None) or "none"
                raise AttributeError(f"no submodule {part!r} under {where} of "
                                     f"{type(self).__name__} (path {target!r}); children "
                                     f"there: {names}")
            module = children[part]
            walked.append(part)
        return module

    def _owner(self, target: str, table: str, kind: str):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        values = getattr(module, table)
        if name not in values:
            raise AttributeError(f"{type(module).__name__} at {path or 'the root'!r} has no "
                                 f"{kind} {name!r}; it has: {', '.join(values) or 'none'}")
        return values[name]

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path (`"encoder.layers.0.linear1.weight"`)."""
        return self._owner(target, "_parameters", "parameter")

    def get_buffer(self, target: str) -> Tensor:
        return self._owner(target, "_buffers", "buffer")

    def parameters_at(self, path: str = "", recurse: bool = True) -> list[Parameter]:
        """The parameters under a dotted path, for per-part optimizer parameter groups."""
        return list(self.get_submodule(path).parameters(recurse=recurse))

    def freeze(self, path: str = "") -> Module:
        """Stop gradients for the parameters under `path` (all of them by default); their
        `.grad` is cleared, so optimizers skip them. Returns self."""
        for param in self.parameters_at(path):
            param.requires_grad_(False)
            param.grad = None
        return self

    def thaw(self, path: str = "") -> Module:
        """Let the parameters under `path` receive gradients again. Returns self."""
        for param in self.parameters_at(path):
            param.requires_grad_(True)
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    # ------------------------------------------------------------------- state
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """Parameters and persistent buffers by dotted name, PyTorch's names and order."""
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def register_load_state_dict_pre_hook(self, hook) -> _HookHandle:
        """Call `hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` before `load_state_dict` reads anything, as torch
        does: `state_dict` is the load's own copy, which the hook may change (rename or
        convert old checkpoints' keys; `prefix` is this module's, e.g. "encoder."); a message
        appended to `error_msgs` fails the load."""
        key = next(_next_hook_id)
        self._load_state_dict_pre_hooks[key] = hook
        return _HookHandle(self._load_state_dict_pre_hooks, key)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """torch's older spelling: without `with_module` the hook is not passed the module."""
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        return self.register_load_state_dict_pre_hook(lambda module, *args: hook(*args))

    def load_state_dict(self, state_dict, strict: bool = True,
                        rename: dict[str, str] | None = None) -> IncompatibleKeys:
        """Copy values into this module's parameters and buffers by name.

        Values may be dl.Tensors, NumPy arrays or anything NumPy can read (CPU PyTorch
        tensors included). Parameters keep their identity (optimizers holding them stay
        valid). With `strict`, missing or unexpected keys are an error listing them. Shapes
        are checked for every key before anything is written, so a failing load changes
        nothing. `rename` maps saved names or prefixes to this module's (`{"module.": ""}`;
        see dlfree.io.rename); the result's `renamed` says what it renamed. Pre-hooks
        (`register_load_state_dict_pre_hook`) run first, parents before children."""
        state_dict, renamed = apply_rename(state_dict, rename, "load_state_dict")
        state_dict = OrderedDict(state_dict)
        missing: list = []
        unexpected: list = []
        self._run_load_pre_hooks(state_dict, strict, missing, unexpected)
        own = self.state_dict(keep_vars=True)
        missing += [k for k in own if k not in state_dict]
        unexpected += [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise CheckpointError(
                f"load_state_dict into {type(self).__name__}: "
                + "; ".join(part for part in (
                    f"missing keys: {', '.join(missing)}" if missing else "",
                    f"unexpected keys: {', '.join(unexpected)}" if unexpected else "") if part)
                + " (pass strict=False to load the keys that match)")
        staged = []
        problems = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = _as_array(state_dict[key], target, key)
            if tuple(value.shape) != tuple(target.shape):
                problems.append(f"{key}: file has shape {tuple(value.shape)}, the model has "
                                f"{tuple(target.shape)}")
            else:
                staged.append((target, value))
        if problems:
            raise CheckpointError(f"load_state_dict into {type(self).__name__}: size mismatch "
                                  f"for {'; '.join(problems)}")
        with dl.no_grad():
            for target, value in staged:
                target.copy_(value)
        return IncompatibleKeys(missing, unexpected, renamed)

    def _run_load_pre_hooks(self, state_dict, strict: bool, missing: list,
                            unexpected: list) -> None:
        errors: list[str] = []
        for name, module in self.named_modules():
            for hook in list(module._load_state_dict_pre_hooks.values()):
                hook(module, state_dict, name + "." if name else "", {}, strict, missing,
                     unexpected, errors)
        if errors:
            raise CheckpointError(f"load_state_dict into {type(self).__name__}: "
                                  + "; ".join(errors))

    # ----------------------------------------------------------- modes, moves
    def train(self, mode: bool = True) -> Module:
        """Set training mode (dropout active, batch statistics) here and below."""
        if not isinstance(mode, bool):
            raise TypeError(f"train(mode): mode must be a bool, got {type(mode).__name__}")
        for module in self.modules():
            module.training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def apply(self, fn) -> Module:
        """Call `fn(module)` on every descendant, children before parents, then self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad = dl.zeros_like(param.grad)

    def to(self, *args, **kwargs) -> Module:
        """Move parameters and buffers to a device and/or cast floating ones to a dtype, in
        place (parameters keep their identity): `to("cuda")`, `to(dl.float64)`,
        `to(device=..., dtype=...)`."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            if isinstance(arg, dl.DType):
                dtype = arg
            elif isinstance(arg, (str, dl.Device)):
                device = arg
            else:
                raise TypeError(f"to() expects a device or a dtype, got {arg!r}")
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"Module.to only casts to floating dtypes, got {dtype}")

        def convert(t: Tensor) -> Tensor:
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None)

        for module in self.modules():
            for param in module._parameters.values():
                if param is None:
                    continue
                param.data = convert(param.data)
                if param.grad is not None:
                    param.grad = convert(param.grad)
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    module._buffers[name] = convert(buffer)
        return self

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        return self.to(f"cuda:{device}" if isinstance(device, int) else (device or "cuda"))

    def float(self) -> Module:
        return self.to(dl.float32)

    def double(self) -> Module:
        return self.to(dl.float64)

    def half(self) -> Module:
        return self.to(dl.float16)

    # ------------------------------------------------------------------ config
    def get_config(self) -> dict[str, Any]:
        """The constructor arguments that rebuild this module (what `dl.save` records).

        Recorded automatically from the outermost `__init__` call; a module whose structure
        changes after construction (containers) overrides this."""
        return dict(self._init_arguments)

    # -------------------------------------------------------------------- repr
    def extra_repr(self) -> str:
        """The part of `repr` inside the parentheses; layers override it."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, child in self._modules.items():
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"


def _as_array(value, target: Tensor, key: str):
    """A state-dict value as an array on `target`'s device, with `target`'s dtype."""
    if isinstance(value, Tensor):
        return value.detach().to(device=target.device, dtype=target.dtype)
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a tensor of another framework
        value = value.detach().cpu()
    try:
        return dl.as_tensor(value, dtype=target.dtype, device=target.device)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"load_state_dict: the value for {key!r} is not an array "
                              f"({type(value).__name__}): {e}") from None
