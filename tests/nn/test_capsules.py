"""Capsule layers against the paper's equations (Sabour, Frosst & Hinton 2017) written out
in torch here: squash (eq. 1), routing by agreement (procedure 1), the margin loss (eq. 4);
gradients against torch's autograd of the same equations and gradcheck in float64."""

from __future__ import annotations

import dlfree as dl
from dlfree import nn

import numpy as np
import pytest
import torch

from support.specs import Float, Int
from support.torch_copy import check_pair, to_numpy


def torch_squash(s):
    norm2 = (s ** 2).sum(-1, keepdim=True)
    return norm2 / (1 + norm2) * s / torch.sqrt(norm2 + 1e-8)


class PaperRouting(torch.nn.Module):
    """Procedure 1: u_hat_j|i = W_ij u_i; b_ij = 0; r times: c_i = softmax(b_i),
    s_j = sum_i c_ij u_hat_j|i, v_j = squash(s_j), b_ij += u_hat_j|i . v_j."""

    def __init__(self, weight, iterations):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor(weight))
        self.iterations = iterations

    def forward(self, u):
        u_hat = torch.einsum("ijkl,bil->bijk", self.weight, u)
        b = torch.zeros(u.shape[0], u_hat.shape[1], u_hat.shape[2], dtype=u.dtype)
        for r in range(self.iterations):
            c = torch.softmax(b, dim=2)
            v = torch_squash(torch.einsum("bij,bijk->bjk", c, u_hat))
            if r < self.iterations - 1:
                b = b + torch.einsum("bijk,bjk->bij", u_hat, v)
        return v


@pytest.mark.parametrize("iterations", [1, 3])
def test_routing_matches_the_paper(iterations):
    ours = nn.RoutingCapsules(6, 4, 3, 5, routing_iterations=iterations)
    theirs = PaperRouting(to_numpy(ours.weight), iterations)
    check_pair(ours, theirs, [Float((2, 6, 4))])


def test_routing_gradcheck_through_the_iterations():
    layer = nn.RoutingCapsules(3, 2, 2, 3, routing_iterations=3).double()
    u = dl.randn(2, 3, 2, dtype=dl.float64, requires_grad=True)
    # gradcheck perturbs the weight in place, so the layer sees each perturbation
    assert dl.autograd.gradcheck(lambda u, w: layer(u), [u, layer.weight])


def test_squash_matches_eq_1_and_keeps_lengths_below_one():
    check_pair(nn.squash, torch_squash, [Float((5, 4), -3.0, 3.0)], call=lambda f, s: f(s))
    lengths = (nn.squash(dl.randn(100, 8) * 10) ** 2).sum(-1).sqrt().numpy()
    assert (lengths < 1).all() and (lengths > 0.9).all()
    assert not np.isnan(nn.squash(dl.zeros(1, 3)).numpy()).any()


def torch_margin(lengths, target):
    t = torch.nn.functional.one_hot(target, lengths.shape[1]).to(lengths.dtype)
    loss = t * torch.relu(0.9 - lengths) ** 2 + 0.5 * (1 - t) * torch.relu(lengths - 0.1) ** 2
    return loss.sum(1).mean()


def test_margin_loss_matches_eq_4():
    check_pair(nn.CapsuleMarginLoss(), torch_margin, [Float((6, 4), 0.0, 1.0), Int((6,), 0, 4)],
               call=lambda f, x, t: f(x, t))
    caps = dl.randn(3, 4, 2)
    lengths = (caps ** 2).sum(-1).sqrt()
    target = dl.tensor([0, 3, 1])
    np.testing.assert_allclose(nn.capsule_margin_loss(caps, target).item(),
                               nn.capsule_margin_loss(lengths, target).item(), rtol=1e-6)


def test_primary_capsules_are_the_convolution_cut_into_squashed_vectors():
    layer = nn.PrimaryCapsules(2, out_capsules=3, capsule_dim=4, kernel_size=3, stride=1)
    conv = torch.nn.Conv2d(2, 12, 3)
    conv.load_state_dict({k.split(".", 1)[1]: torch.tensor(to_numpy(v))
                          for k, v in layer.state_dict().items()})

    def reference(x):
        out = conv(x)
        b, _, h, w = out.shape
        caps = out.view(b, 3, 4, h, w).permute(0, 1, 3, 4, 2).reshape(b, 3 * h * w, 4)
        return torch_squash(caps)

    check_pair(layer, reference, [Float((2, 2, 5, 5))])
    assert tuple(layer(dl.randn(1, 2, 5, 5)).shape) == (1, 27, 4)


def test_decoder_masks_all_capsules_but_one():
    decoder = nn.CapsuleDecoder(3, 2, out_features=5, hidden=(8,))
    caps = dl.tensor([[[0.1, 0.0], [0.9, 0.1], [0.0, 0.2]]])
    changed = caps.clone()
    changed[0, 0] = dl.tensor([0.5, 0.5])  # not the target's capsule: no effect
    a = decoder(caps, dl.tensor([1])).detach().numpy()
    np.testing.assert_array_equal(a, decoder(changed, dl.tensor([1])).detach().numpy())
    np.testing.assert_array_equal(a, decoder(caps).detach().numpy())  # longest is 1
    assert ((a > 0) & (a < 1)).all()


def test_capsule_layers_round_trip_through_a_model_file(tmp_path):
    model = nn.Sequential(nn.PrimaryCapsules(1, 2, 4, kernel_size=3, stride=2),
                          nn.RoutingCapsules(8, 4, 3, 6, routing_iterations=2))
    dl.save(model, tmp_path / "caps.safetensors")
    loaded = dl.load(tmp_path / "caps.safetensors")
    x = dl.randn(2, 1, 5, 5)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())


@pytest.mark.parametrize("call, match", [
    (lambda: nn.RoutingCapsules(4, 2, 3, 2)(dl.randn(1, 5, 2)), r"expected input \(B, 4, 2\)"),
    (lambda: nn.RoutingCapsules(4, 2, 3, 2, routing_iterations=0),
     r"routing_iterations must be an integer >= 1"),
    (lambda: nn.CapsuleMarginLoss(reduction="avg"), r"reduction must be one of"),
])
def test_bad_arguments(call, match):
    with pytest.raises((ValueError, dl.DLFreeError), match=match):
        call()


