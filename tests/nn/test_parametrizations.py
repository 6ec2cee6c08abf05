"""nn.utils.parametrizations weight_norm and spectral_norm against torch's: state dict keys
and repr, forward values and the gradients of the originals after copying torch's state
(spectral_norm's power iteration buffers included, over several training steps), eval mode,
and remove_parametrizations."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn
from dlfree.nn.utils import parametrizations, parametrize

import numpy as np
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


ORTHOGONAL = [("Linear", (4, 4), Float((2, 4)), "matrix_exp"),
              ("Linear", (4, 4), Float((2, 4)), "cayley"),
              ("Linear", (4, 4), Float((2, 4)), "householder"),
              ("Linear", (3, 5), Float((2, 3)), "matrix_exp"),  # tall weight (5, 3)
              ("Linear", (5, 3), Float((2, 5)), "householder"),  # wide weight (3, 5)
              ("Linear", (5, 3), Float((2, 5)), "cayley"),
              ("Linear", (3, 5), Float((2, 3)), None)]  # default: householder (not square)


def _gram_error(weight) -> float:
    """How far the columns (rows, for a wide matrix) are from orthonormal."""
    w = weight.detach().numpy().astype("float64")
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    return float(abs(gram - np.eye(len(gram))).max())


@pytest.mark.parametrize("layer, args, spec, orthogonal_map", ORTHOGONAL,
                         ids=[f"{c[0]}{c[1]}-{c[3]}" for c in ORTHOGONAL])
def test_orthogonal_matches_torch_over_training_steps(layer, args, spec, orthogonal_map):
    ours, theirs = _pair(layer, args, "orthogonal", orthogonal_map=orthogonal_map)
    assert list(ours.state_dict())[1:] == ["parametrizations.weight.original",
                                           "parametrizations.weight.0.base"]
    ours_opt = dl.optim.SGD(ours.parameters(), lr=0.1)
    theirs_opt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    for step in range(3):  # the original moves off the identity point: the map is exercised
        check_pair(ours, theirs, [spec], seed=step)
        ours_opt.step()
        theirs_opt.step()
        zero_grads(ours, theirs)
        assert_same_state(ours, theirs)
        assert _gram_error(ours.weight) < 1e-5


def test_orthogonal_without_trivialization_matches_torch():
    for shape in ((3, 5), (5, 3)):  # the tall and the wide case
        torch.manual_seed(1)
        start = torch.nn.Linear(*shape)
        ours = nn.Linear(*shape)
        torch_to_dl(start, ours)  # the same starting weight: its QR gives the original
        theirs = torch.nn.utils.parametrizations.orthogonal(
            start, orthogonal_map="householder", use_trivialization=False)
        ours = parametrizations.orthogonal(ours, orthogonal_map="householder",
                                           use_trivialization=False)
        assert list(ours.state_dict()) == list(theirs.state_dict())  # no base
        assert_same_state(ours, theirs)  # the original from geqrf, signs fixed as torch's
        check_pair(ours, theirs, [Float((2, shape[0]))])


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_assigning_an_orthogonal_weight_gives_it_back(shape):
    layer = parametrizations.orthogonal(nn.Linear(shape[1], shape[0]))
    q = dl.linalg.qr(dl.randn(max(shape), min(shape), dtype=dl.float32)).Q
    q = q if shape[0] >= shape[1] else q.mT
    layer.weight = q
    np.testing.assert_allclose(layer.weight.detach().numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
    original = layer.parametrizations.weight.original.detach().numpy()
    np.testing.assert_array_equal(original, -np.eye(*shape, dtype=np.float32))


def test_a_square_weight_that_is_not_orthogonal_is_made_orthogonal_as_torch_does():
    torch.manual_seed(3)
    theirs = torch.nn.Linear(4, 4)
    ours = nn.Linear(4, 4)
    torch_to_dl(theirs, ours)
    theirs = torch.nn.utils.parametrizations.orthogonal(theirs, orthogonal_map="cayley")
    ours = parametrizations.orthogonal(ours, orthogonal_map="cayley")
    assert_same_state(ours, theirs)  # base: the Q of the weight's QR with diag(R) > 0
    check_pair(ours, theirs, [Float((3, 4))])


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_a_batch_of_matrices_is_orthogonal_per_matrix_as_in_torch(orthogonal_map):
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = dl.Parameter(dl.randn(2, 5, 3))

    class TorchStack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(2, 5, 3))

    ours = parametrizations.orthogonal(Stack(), orthogonal_map=orthogonal_map)
    theirs = torch.nn.utils.parametrizations.orthogonal(TorchStack(),
                                                        orthogonal_map=orthogonal_map)
    torch_to_dl(theirs, ours)
    with dl.no_grad():  # off the identity point (below the diagonal: householder's +-1 stay)
        ours.parametrizations.weight.original.add_(0.5 * dl.randn(2, 5, 3).tril(-1))
    with torch.no_grad():
        theirs.parametrizations.weight.original.copy_(
            torch.from_numpy(ours.parametrizations.weight.original.detach().numpy()))
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    for matrix in ours.weight:
        assert _gram_error(matrix) < 1e-5


@pytest.mark.parametrize("call, error, message", [
    (lambda: parametrizations.orthogonal(nn.Linear(3, 3), "bias"), ValueError,
     "expected a matrix or a batch of matrices, got a tensor of 1 dimension"),
    (lambda: parametrizations.orthogonal(nn.Linear(3, 3), "kernel"), ValueError,
     "Linear has no parameter or buffer named 'kernel'"),
    (lambda: parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="qr"), ValueError,
     r"orthogonal_map must be one of \('matrix_exp', 'cayley', 'householder'\), got 'qr'"),
])
def test_orthogonal_bad_arguments_say_what_is_valid(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_assigning_to_the_exponential_map_without_trivialization_is_refused():
    layer = parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="matrix_exp",
                                        use_trivialization=False)
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    with pytest.raises(NotImplementedError, match="only householder's X can be recovered"):
        layer.weight = dl.eye(3)
    with pytest.raises(ValueError, match=r"shape \(3, 3\), got \(2, 2\)"):
        layer.weight = dl.eye(2)
