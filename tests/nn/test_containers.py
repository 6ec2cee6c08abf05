"""Containers behave like torch.nn's: the same keys after the same edits, the same
indexing, and forward chaining."""

from __future__ import annotations

from collections import OrderedDict

import dlfree as dl
from dlfree import nn

import numpy as np
import pytest
import torch


class Tag(nn.Module):
    """A parameterised module whose output shows which module ran."""

    def __init__(self, value: float):
        super().__init__()
        self.value = dl.Parameter(dl.tensor([float(value)]))

    def forward(self, x):
        return x * 10 + self.value


class TorchTag(torch.nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = torch.nn.Parameter(torch.tensor([float(value)]))


def _keys(module):
    return list(module.state_dict())


def test_sequential_forward_indexing_and_edits_match_torch():
    ours = nn.Sequential(Tag(1), Tag(2), Tag(3))
    theirs = torch.nn.Sequential(TorchTag(1), TorchTag(2), TorchTag(3))
    assert float(ours(dl.zeros(1))) == 123
    assert ours[-1] is ours[2] and len(ours) == 3 and list(ours) == [ours[0], ours[1], ours[2]]
    for edit in (lambda s, T: s.append(T(4)), lambda s, T: s.insert(1, T(5)),
                 lambda s, T: s.__delitem__(0), lambda s, T: s.__delitem__(slice(1, 3)),
                 lambda s, T: s.extend([T(6), T(7)])):
        edit(ours, Tag)
        edit(theirs, TorchTag)
        assert _keys(ours) == _keys(theirs)
    assert [float(m.value) for m in ours] == [m.value.item() for m in theirs]
    with pytest.raises(IndexError, match="out of range"):
        ours[10]


def test_sequential_with_names_slices_keep_names():
    ours = nn.Sequential(OrderedDict(first=Tag(1), second=Tag(2), third=Tag(3)))
    theirs = torch.nn.Sequential(OrderedDict(first=TorchTag(1), second=TorchTag(2),
                                             third=TorchTag(3)))
    assert _keys(ours[1:]) == _keys(theirs[1:]) == ["second.value", "third.value"]
    assert ours["second"] is ours[1]
    ours[0] = Tag(9)
    assert _keys(ours) == _keys(theirs) and float(ours.first.value) == 9


def test_module_list_and_dict_match_torch():
    ours = nn.ModuleList([Tag(i) for i in range(4)])
    theirs = torch.nn.ModuleList([TorchTag(i) for i in range(4)])
    for edit in (lambda s, T: s.append(T(4)), lambda s, T: s.insert(0, T(5)),
                 lambda s, T: s.__delitem__(2), lambda s, T: s.__iadd__([T(6)])):
        edit(ours, Tag)
        edit(theirs, TorchTag)
        assert _keys(ours) == _keys(theirs)
    assert _keys(ours[1:3]) == _keys(theirs[1:3])
    with pytest.raises(TypeError, match="iterable of modules"):
        ours.extend(Tag(1))
    d = nn.ModuleDict({"b": Tag(1), "a": Tag(2)})
    td = torch.nn.ModuleDict({"b": TorchTag(1), "a": TorchTag(2)})
    d["c"], td["c"] = Tag(3), TorchTag(3)
    d.pop("b"), td.pop("b")
    assert _keys(d) == _keys(td) and list(d) == list(td) and "a" in d


def test_parameter_containers():
    plist = nn.ParameterList([dl.zeros(2), dl.Parameter(dl.ones(3))])
    tlist = torch.nn.ParameterList([torch.zeros(2), torch.nn.Parameter(torch.ones(3))])
    plist.append(dl.ones(1))
    tlist.append(torch.ones(1))
    assert _keys(plist) == _keys(tlist) and all(isinstance(p, dl.Parameter) for p in plist)
    pdict = nn.ParameterDict({"w": dl.zeros(2)})
    pdict["b"] = dl.ones(1)
    assert _keys(pdict) == ["w", "b"] and pdict["b"].requires_grad


def test_identity_passes_input_through():
    x = dl.randn(3)
    assert nn.Identity(54, unused="x")(x) is x


def test_container_configs_rebuild_the_current_structure():
    seq = nn.Sequential(Tag(1))
    seq.append(Tag(2))
    assert seq.get_config() == {"args": [seq[0], seq[1]]}
    named = nn.Sequential(OrderedDict(a=Tag(1)))
    assert named.get_config() == {"args": [OrderedDict(a=named.a)]}
    assert nn.ModuleList([Tag(1)]).get_config()["modules"][0].value.shape == (1,)
    np.testing.assert_array_equal(
        nn.ParameterList([dl.ones(2)]).get_config()["values"][0].detach().numpy(), [1, 1])
