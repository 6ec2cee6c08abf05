"""`Module`: registration, traversal, state dicts, modes, moves, hooks and path addressing,
checked against torch.nn.Module on the same structure where torch has the behaviour."""

from __future__ import annotations

import dlfree as dl
import dlfree.functional as F
from dlfree import nn

import numpy as np
import pytest
import torch


class Affine(nn.Module):
    def __init__(self, n_in: int, n_out: int, bias: bool = True):
        super().__init__()
        self.weight = dl.Parameter(dl.randn(n_out, n_in))
        if bias:
            self.bias = dl.Parameter(dl.zeros(n_out))
        else:
            self.register_parameter("bias", None)
        self.register_buffer("calls", dl.zeros(()))
        self.register_buffer("scratch", dl.zeros(2), persistent=False)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class Net(nn.Module):
    def __init__(self, width: int = 4):
        super().__init__()
        self.encoder = nn.Sequential(Affine(3, width), Affine(width, width, bias=False))
        self.heads = nn.ModuleDict({"a": Affine(width, 2), "b": Affine(width, 1)})
        self.scale = dl.Parameter(dl.ones(()))

    def forward(self, x):
        h = F.relu(self.encoder(x))
        return self.heads["a"](h) * self.scale


class TorchAffine(torch.nn.Module):
    def __init__(self, n_in, n_out, bias=True):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_out, n_in))
        self.bias = torch.nn.Parameter(torch.zeros(n_out)) if bias else None
        self.register_buffer("calls", torch.zeros(()))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)


class TorchNet(torch.nn.Module):
    def __init__(self, width=4):
        super().__init__()
        self.encoder = torch.nn.Sequential(TorchAffine(3, width), TorchAffine(width, width, False))
        self.heads = torch.nn.ModuleDict({"a": TorchAffine(width, 2), "b": TorchAffine(width, 1)})
        self.scale = torch.nn.Parameter(torch.ones(()))


def test_names_and_order_match_torch():
    ours, theirs = Net(), TorchNet()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert "scratch" not in " ".join(ours.state_dict())  # non-persistent buffers stay out


def test_torch_weights_load_by_name_and_give_the_same_output():
    ours, theirs = Net(), TorchNet()
    ours.load_state_dict(theirs.state_dict())
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    h = torch.relu(_torch_affine(theirs.encoder[1], _torch_affine(theirs.encoder[0],
                                                                  torch.tensor(x))))
    expected = _torch_affine(theirs.heads["a"], h) * theirs.scale
    np.testing.assert_allclose(ours(dl.tensor(x)).detach().numpy(), expected.detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def _torch_affine(m, x):
    return torch.nn.functional.linear(x, m.weight, m.bias)


def test_load_state_dict_keeps_parameter_identity_and_reports_keys():
    net = Net()
    weight = net.encoder[0].weight
    state = {k: v.numpy() * 0 + 1 for k, v in net.state_dict().items()}
    state["extra"] = np.zeros(1, np.float32)
    del state["scale"]
    with pytest.raises(dl.CheckpointError, match=r"missing keys: scale.*unexpected keys: extra"):
        net.load_state_dict(state)
    assert not (weight.detach().numpy() == 1).all()  # the failed strict load wrote nothing
    result = net.load_state_dict(state, strict=False)
    assert result.missing_keys == ["scale"] and result.unexpected_keys == ["extra"]
    assert net.encoder[0].weight is weight and (weight.detach().numpy() == 1).all()


def test_load_state_dict_shape_mismatch_changes_nothing():
    net = Net()
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    state = {k: v.numpy() + 1 for k, v in net.state_dict().items()}
    state["encoder.1.weight"] = np.zeros((4, 5), np.float32)
    with pytest.raises(dl.CheckpointError, match=r"encoder\.1\.weight.*\(4, 5\).*\(4, 4\)"):
        net.load_state_dict(state)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])


def test_train_eval_propagate():
    net = Net()
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(TypeError, match="bool"):
        net.train("no")


def test_to_dtype_keeps_parameters_and_casts_only_floats():
    net = Net()
    net.register_buffer("steps", dl.zeros(3, dtype=dl.int64))
    weight = net.encoder[0].weight
    net.to(dl.float64)
    assert net.encoder[0].weight is weight and weight.dtype == dl.float64
    assert all(p.dtype == dl.float64 for p in net.parameters())
    assert net.steps.dtype == dl.int64
    assert net(dl.randn(2, 3, dtype=dl.float64)).dtype == dl.float64
    with pytest.raises(TypeError, match="floating"):
        net.to(dl.int32)


def test_assignment_rules():
    class Early(nn.Module):
        def __init__(self):
            self.w = dl.Parameter(dl.zeros(1))

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Early()
    net = Net()
    with pytest.raises(TypeError, match="parameter 'scale'"):
        net.scale = dl.zeros(())
    net.scale = None
    assert "scale" not in net.state_dict()
    with pytest.raises(KeyError, match="forward"):
        net.register_buffer("forward", dl.zeros(1))
    net.encoder = nn.Identity()
    assert not any(k.startswith("encoder.") for k in net.state_dict())
    del net.heads
    assert [n for n, _ in net.named_children()] == ["encoder"]


def test_shared_parameters_are_listed_once():
    net = Net()
    net.heads["b"].weight = net.heads["a"].weight
    names = [n for n, _ in net.named_parameters()]
    assert "heads.b.weight" not in names and "heads.a.weight" in names
    assert len(list(net.parameters())) == len(set(map(id, net.parameters())))
    assert "heads.b.weight" in net.state_dict()  # state_dict keeps every name, like torch


def test_hooks_modify_and_remove():
    net = Affine(3, 2)
    seen = []
    pre = net.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    post = net.register_forward_hook(lambda m, args, out: seen.append(out.shape) or out + 1)
    out = net(dl.randn(4, 3))
    np.testing.assert_allclose(out.detach().numpy(), np.ones((4, 2)))
    assert seen == [(4, 2)]
    pre.remove()
    post.remove()
    x = dl.randn(4, 3)
    np.testing.assert_allclose(net(x).detach().numpy(),
                               F.linear(x, net.weight, net.bias).detach().numpy())


def test_zero_grad_apply_requires_grad_and_counts():
    net = Net()
    net(dl.randn(2, 3)).sum().backward()
    assert all(p.grad is not None for p in net.encoder.parameters())
    net.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in net.encoder.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    order = []
    net.apply(lambda m: order.append(type(m).__name__))
    assert order[-1] == "Net" and order.index("Affine") < order.index("Sequential")
    assert net.num_parameters() == sum(p.numel() for p in TorchNet().parameters())
    net.requires_grad_(False)
    assert net.num_parameters(only_trainable=True) == 0


def test_paths_freeze_thaw_and_groups():
    net = Net()
    assert net.get_submodule("encoder.1") is net.encoder[1]
    assert net.get_parameter("heads.a.bias") is net.heads["a"].bias
    with pytest.raises(AttributeError, match=r"no submodule 'x'.*encoder.*children there: 0, 1"):
        net.get_submodule("encoder.x")
    with pytest.raises(AttributeError, match="no parameter 'nope'"):
        net.get_parameter("heads.a.nope")
    net.freeze("encoder").thaw("encoder.1")
    net(dl.randn(2, 3)).sum().backward()
    assert net.encoder[0].weight.grad is None and net.encoder[1].weight.grad is not None
    assert net.heads["a"].weight.grad is not None
    assert {id(p) for p in net.parameters_at("heads")} == \
        {id(p) for p in net.heads.parameters()}
    net.freeze()
    assert all(p.grad is None and not p.requires_grad for p in net.parameters())


def test_repr_follows_torch_layout():
    assert repr(nn.Sequential(nn.Identity(), nn.ModuleList([nn.Identity()]))) == repr(
        torch.nn.Sequential(torch.nn.Identity(), torch.nn.ModuleList([torch.nn.Identity()])))


def test_constructor_arguments_are_recorded_from_the_outermost_call():
    class Wide(Net):
        def __init__(self, extra: int = 1, **kwargs):
            super().__init__(width=8)
            self.extra = extra

    assert Net(width=5).get_config() == {"width": 5}
    assert Wide(extra=3, tag="x").get_config() == {"extra": 3, "kwargs": {"tag": "x"}}
