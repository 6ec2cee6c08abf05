"""nn.utils.parametrizations weight_norm and spectral_norm against torch's: state dict keys
and repr, forward values and the gradients of the originals after copying torch's state
(spectral_norm's power iteration buffers included, over several training steps), eval mode,
and remove_parametrizations."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn
from dlfree.nn.utils import parametrizations, parametrize

import pytest
import torch

from support.specs import Float
from support.torch_copy import assert_same_state, check_pair, torch_to_dl, zero_grads

LAYERS = [("Linear", (3, 4), Float((2, 3))), ("Conv2d", (2, 3, 3), Float((1, 2, 5, 5))),
          ("ConvTranspose1d", (2, 3, 2), Float((2, 2, 4)))]


def _pair(layer, args, apply, **kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn.utils.parametrizations, apply)(getattr(torch.nn, layer)(*args),
                                                             **kwargs)
    ours = getattr(parametrizations, apply)(getattr(nn, layer)(*args), **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    torch_to_dl(theirs, ours)
    return ours, theirs


@pytest.mark.parametrize("dim", [0, 1, None])
@pytest.mark.parametrize("layer, args, spec", LAYERS, ids=[c[0] for c in LAYERS])
def test_weight_norm_matches_torch(layer, args, spec, dim):
    ours, theirs = _pair(layer, args, "weight_norm", dim=dim)
    check_pair(ours, theirs, [spec])
    assert_same_state(ours, theirs)


@pytest.mark.parametrize("layer, args, spec", LAYERS, ids=[c[0] for c in LAYERS])
def test_spectral_norm_matches_torch_over_training_steps(layer, args, spec):
    ours, theirs = _pair(layer, args, "spectral_norm", n_power_iterations=2)
    for step in range(3):
        check_pair(ours, theirs, [spec], seed=step)
        zero_grads(ours, theirs)
        assert_same_state(ours, theirs)  # u and v moved the same way
    ours.eval()
    theirs.eval()
    check_pair(ours, theirs, [spec], seed=5)
    assert_same_state(ours, theirs)


def test_remove_parametrizations_keeps_the_computed_weight():
    ours, theirs = _pair("Linear", (3, 2), "weight_norm")
    parametrize.remove_parametrizations(ours, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    assert type(ours).__name__ == type(theirs).__name__ == "Linear"
    assert_same_state(ours, theirs)
    with pytest.raises(ValueError, match="no parametrization on 'weight'"):
        parametrize.remove_parametrizations(ours, "weight")


def test_the_class_change_touches_one_module_only():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    parametrizations.weight_norm(a)
    assert parametrize.is_parametrized(a, "weight") and not parametrize.is_parametrized(b)
    assert isinstance(b.weight, dl.Parameter) and "weight" in dict(b.named_parameters())
