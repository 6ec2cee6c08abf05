"""Twins for the graph tests: the same architecture as a `FlowBuilder` graph, as a plain
dlfree.nn Module and as a torch.nn Module, with matching state_dict names.

A row gives the children (`children(nn)`: nested dicts and lists of modules of either
library, named as the graph names them), the flow (`flow(children)` -> built Graph, on the
dl.free children) and a hand-written forward (`forward(module, x, ops, state)`), written
once for both libraries through `ops` (cat, stack, softmax, zeros_like, where, argmax).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import dlfree as dl
import dlfree.functional as F
import dlfree.nn as dnn

import torch

DL_OPS = SimpleNamespace(cat=dl.cat, stack=dl.stack, softmax=F.softmax, zeros_like=dl.zeros_like,
                         where=dl.where, argmax=dl.argmax)
TORCH_OPS = SimpleNamespace(cat=torch.cat, stack=torch.stack, softmax=torch.softmax,
                            zeros_like=torch.zeros_like, where=torch.where,
                            argmax=torch.argmax)


@dataclass
class Row:
    id: str
    children: Callable  # nn library -> nested dict of modules
    flow: Callable  # dl.free children -> Graph
    forward: Callable  # (module, x, ops, state) -> output
    calls: int = 1  # how many calls in a row one check makes (forward references)


def container(nn, spec):
    """A module holding `spec`: a dict becomes a bare Module with those children, a list a
    ModuleList, a module stays itself."""
    if isinstance(spec, dict):
        holder = nn.Module()
        for name, value in spec.items():
            holder.add_module(name, container(nn, value))
        return holder
    if isinstance(spec, list):
        return nn.ModuleList([container(nn, value) for value in spec])
    return spec


class DlTwin(dnn.Module):
    """The architecture written by hand as a dlfree.nn Module."""

    def __init__(self, row: Row):
        super().__init__()
        for name, spec in row.children(dnn).items():
            self.add_module(name, container(dnn, spec))
        self.row_forward = row.forward
        self.state: dict = {}

    def forward(self, x):
        return self.row_forward(self, x, DL_OPS, self.state)


class TorchTwin(torch.nn.Module):
    """The architecture written by hand as a torch.nn Module."""

    def __init__(self, row: Row):
        super().__init__()
        for name, spec in row.children(torch.nn).items():
            self.add_module(name, container(torch.nn, spec))
        self.row_forward = row.forward
        self.state: dict = {}

    def forward(self, x):
        return self.row_forward(self, x, TORCH_OPS, self.state)


def graph_of(row: Row):
    """The row's graph, built from fresh dl.free children."""
    return row.flow(row.children(dnn))


def repeated(calls: int):
    """A `check_pair` call running the module `calls` times in a row on the same input."""
    def call(module, x):
        return [module(x) for _ in range(calls)]
    return call
