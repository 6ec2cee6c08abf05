"""dl.amp: autocast regions (nesting, threads, the weight-cast cache, numerics against
torch.autocast) and GradScaler against torch.amp.GradScaler on the same overflow pattern.
Each op's policy is tested in test_amp_policies.py.
"""

from __future__ import annotations

import json
import threading

import dlfree as dl
import dlfree.nn as nn
import dlfree.optim as optim

import numpy as np
import pytest
import torch

F = dl.functional
TF = torch.nn.functional
HALF, FLOAT = "float16", "float32"


def test_float64_and_integer_tensors_are_never_cast():
    a, b = dl.randn(3, 4, dtype=dl.float64), dl.randn(4, 2, dtype=dl.float64)
    with dl.amp.autocast():
        assert (a @ b).dtype == dl.float64
        assert F.softmax(a, 1).dtype == dl.float64
        assert dl.arange(6).reshape(2, 3).sum().dtype == dl.int64


def test_mixed_inputs_are_cast_together_and_promote_afterwards():
    x, w = dl.randn(4, 6, dtype=dl.float16), dl.randn(5, 6)
    with pytest.raises(dl.DTypeError):
        F.linear(x, w)  # outside autocast mixed dtypes are an error, as in torch
    with dl.amp.autocast():
        y = F.linear(x, w)
        assert y.dtype == dl.float16
        assert (y + dl.ones(5)).dtype == dl.float32


def test_regions_nest_and_restore():
    x = dl.randn(2, 3)
    assert not dl.amp.is_autocast_enabled()
    with dl.amp.autocast():
        assert dl.amp.get_autocast_dtype("cpu") == dl.float16
        with dl.amp.autocast(enabled=False):
            assert (x @ x.T).dtype == dl.float32
            assert not dl.amp.is_autocast_enabled("cpu")
            with dl.amp.autocast("cpu"):
                assert (x @ x.T).dtype == dl.float16
            assert (x @ x.T).dtype == dl.float32
        assert (x @ x.T).dtype == dl.float16
    assert (x @ x.T).dtype == dl.float32
    assert not dl.amp.is_autocast_enabled() and dl.amp.get_autocast_dtype("cpu") is None


def test_device_type_limits_the_region_to_that_device():
    x = dl.randn(2, 3)
    with dl.amp.autocast("cuda"):
        assert dl.amp.is_autocast_enabled("cuda") and not dl.amp.is_autocast_enabled("cpu")
        assert (x @ x.T).dtype == dl.float32


def test_decorator_and_exceptions_restore_the_setting():
    @dl.amp.autocast()
    def product(a):
        return a @ a.T

    x = dl.randn(2, 3)
    assert product(x).dtype == dl.float16
    assert (x @ x.T).dtype == dl.float32
    with pytest.raises(KeyError), dl.amp.autocast():
        raise KeyError("out")
    assert not dl.amp.is_autocast_enabled()


def test_the_setting_is_per_thread():
    seen = []
    x = dl.randn(2, 3)
    with dl.amp.autocast():
        worker = threading.Thread(target=lambda: seen.append((x @ x.T).dtype))
        worker.start()
        worker.join()
        assert (x @ x.T).dtype == dl.float16
    assert seen == [dl.float32]


def test_float32_weights_get_float32_gradients_equal_to_explicit_casts():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6)).astype(FLOAT)
    w = dl.Parameter(rng.standard_normal((5, 6)).astype(FLOAT))
    with dl.amp.autocast():
        F.linear(dl.tensor(x), w).float().sum().backward()
    assert w.grad.dtype == dl.float32
    w16 = dl.tensor(w.detach().numpy().astype(HALF), requires_grad=True)
    F.linear(dl.tensor(x.astype(HALF)), w16).float().sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), w16.grad.numpy().astype(FLOAT))


def test_backward_inside_the_region_computes_in_the_forward_dtypes():
    def grads(inside: bool):
        dl.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 3))
        x, y = dl.randn(5, 6), dl.tensor([0, 1, 2, 0, 1])
        with dl.amp.autocast():
            loss = F.cross_entropy(model(x), y)
            if inside:
                loss.backward()
        if not inside:
            loss.backward()
        return [p.grad.numpy() for p in model.parameters()]

    for a, b in zip(grads(True), grads(False), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_weight_is_cast_once_per_region_and_serves_several_graphs():
    x1, x2 = dl.randn(4, 6), dl.randn(3, 6)
    w = dl.Parameter(dl.randn(5, 6))
    with dl.amp.autocast():
        a, b = F.linear(x1, w), F.linear(x2, w)
        assert a.grad_fn.next_edges[1] is b.grad_fn.next_edges[1]  # one cast node
        with dl.amp.autocast(cache_enabled=False):
            c = F.linear(x1, w)
        assert c.grad_fn.next_edges[1] is not a.grad_fn.next_edges[1]
        a.float().sum().backward()
        b.float().sum().backward()  # the shared cast survives the first backward
    ones = dl.ones(5, 4, dtype=dl.float16), dl.ones(5, 3, dtype=dl.float16)
    expected = (ones[0] @ x1.half()).float() + (ones[1] @ x2.half()).float()
    np.testing.assert_array_equal(w.grad.numpy(), expected.numpy())
    with dl.no_grad():
        w.add_(1.0)
    with dl.amp.autocast():
        np.testing.assert_array_equal(F.linear(x1, w).detach().numpy(),
                                      F.linear(x1.half(), w.detach().half()).numpy())


def _mlp_pair(seed: int = 0):
    """The same three-layer MLP in dl.free and torch, float32 weights."""
    torch.manual_seed(seed)
    reference = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 5))
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 5))
    with dl.no_grad():
        for p, q in zip(model.parameters(), reference.parameters(), strict=True):
            p.copy_(dl.tensor(q.detach().numpy()))
    return model, reference


def test_mlp_forward_and_backward_match_torch_float16_autocast():
    model, reference = _mlp_pair()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 12)).astype(FLOAT)
    y = rng.integers(0, 5, 16)
    with dl.amp.autocast("cpu"):
        logits = model(dl.tensor(x))
        loss = F.cross_entropy(logits, dl.tensor(y))
    loss.backward()
    with torch.autocast("cpu", dtype=torch.float16):
        t_logits = reference(torch.from_numpy(x))
        t_loss = TF.cross_entropy(t_logits, torch.from_numpy(y))
    t_loss.backward()
    assert logits.dtype == dl.float16 and loss.dtype == dl.float32
    # float16 tolerances: the two differ by float16 roundings of the layer outputs (2^-11
    # relative, 2.4e-4 at the logits' size), and the gradients by the same through backward
    np.testing.assert_allclose(logits.detach().float().numpy(), t_logits.float().detach().numpy(),
                               rtol=2e-3, atol=1e-3)
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-4)
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        assert p.grad.dtype == dl.float32
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-2, atol=1e-4)


@pytest.mark.parametrize("kwargs, error", [
    ({"dtype": dl.float32}, dl.DTypeError),
    ({"dtype": dl.float64}, dl.DTypeError),
    ({"device_type": "cuda:0"}, ValueError),
    ({"device_type": "tpu"}, ValueError),
    ({"device_type": 0}, TypeError),
])
def test_bad_autocast_arguments_are_refused(kwargs, error):
    with pytest.raises(error, match="autocast"):
        dl.amp.autocast(**kwargs)


# ------------------------------------------------------------------- GradScaler
STEPS = 30
OVERFLOWS = {2: np.inf, 3: np.nan, 9: np.inf, 15: -np.inf, 16: np.inf, 17: np.nan, 25: np.inf}


class TorchSGD:
    """Plain SGD for torch parameters, duck-typed as GradScaler needs (building a
    torch.optim optimizer first imports torch's compiler stack, seconds of test time)."""

    def __init__(self, params, lr: float):
        self.param_groups = [{"params": list(params), "lr": lr}]

    def zero_grad(self) -> None:
        for p in self.param_groups[0]["params"]:
            p.grad = None

    @torch.no_grad()
    def step(self) -> str:
        for p in self.param_groups[0]["params"]:
            p -= self.param_groups[0]["lr"] * p.grad
        return "stepped"


class Stepped:
    """A dl.free optimizer whose step() returns a value, to see GradScaler.step hand it on."""

    def __init__(self, optimizer):
        self.optimizer, self.param_groups = optimizer, optimizer.param_groups

    def zero_grad(self) -> None:
        self.optimizer.zero_grad()

    def step(self) -> str:
        self.optimizer.step()
        return "stepped"


def _torch_run(overflows: dict, steps: int = STEPS, size: float = 1.0, **kwargs):
    """Scales, weights and step results of a torch training run with injected overflows
    (inf or nan at one gradient entry at the given steps); `size` scales the data."""
    w = torch.nn.Parameter(torch.linspace(-1, 1, 6))
    x = torch.linspace(0.5, 2.0, 6) * size
    opt = TorchSGD([w], lr=0.05)
    scaler = torch.amp.GradScaler("cpu", **kwargs)
    scales, weights, results = [], [], []
    for step in range(steps):
        opt.zero_grad()
        scaler.scale(((w * x) ** 2).sum()).backward()
        if step in overflows:
            w.grad[step % 6] = float(overflows[step])
        results.append(scaler.step(opt))
        scaler.update()
        scales.append(scaler.get_scale())
        weights.append(w.detach().numpy().copy())
    return scales, weights, results, scaler


def _dl_run(overflows: dict, steps: int = STEPS, size: float = 1.0, device="cpu", scaler=None,
            **kwargs):
    """`_torch_run` in dl.free."""
    w = dl.Parameter(dl.linspace(-1, 1, 6, device=device))
    x = dl.linspace(0.5, 2.0, 6, device=device) * size
    opt = Stepped(optim.SGD([w], lr=0.05))
    scaler = scaler or dl.amp.GradScaler(**kwargs)
    scales, weights, results = [], [], []
    for step in range(steps):
        opt.zero_grad()
        scaler.scale(((w * x) ** 2).sum()).backward()
        if step in overflows:
            w.grad.array[step % 6] = overflows[step]
        results.append(scaler.step(opt))
        scaler.update()
        scales.append(scaler.get_scale())
        weights.append(w.detach().cpu().numpy().copy())
    return scales, weights, results, scaler


def test_scale_sequence_and_skipped_steps_match_torch(device):
    kwargs = {"init_scale": 2.0**10, "growth_interval": 3}
    t_scales, t_weights, t_results, _ = _torch_run(OVERFLOWS, **kwargs)
    scales, weights, results, _ = _dl_run(OVERFLOWS, device=device, **kwargs)
    assert scales == t_scales
    assert len(set(scales)) > 3  # the pattern both grows and backs off
    for step, (a, b) in enumerate(zip(weights, t_weights, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        if step in OVERFLOWS:  # skipped: the weights did not move, bit for bit
            assert results[step] is None
            np.testing.assert_array_equal(a, weights[step - 1])
    assert results == t_results and results.count(None) == len(OVERFLOWS)


def test_scale_growth_stops_at_float32s_range_as_torch():
    kwargs = {"init_scale": 2.0**126, "growth_interval": 1, "size": 1e-3}
    assert _dl_run({}, 4, **kwargs)[0] == _torch_run({}, 4, **kwargs)[0] == [2.0**127] * 4


def test_misuse_raises_torch_s_errors():
    def sequence(scaler, opt, make_loss):
        errors = []
        scaler.scale(make_loss()).backward()
        scaler.unscale_(opt)
        for call in (lambda: scaler.unscale_(opt), lambda: scaler.step(opt),
                     lambda: scaler.unscale_(opt), lambda: scaler.step(opt)):
            try:
                call()
            except RuntimeError as e:
                errors.append(str(e))
        return errors

    w = dl.Parameter(dl.ones(3))
    tw = torch.nn.Parameter(torch.ones(3))
    ours = sequence(dl.amp.GradScaler(), optim.SGD([w], lr=0.1), lambda: (w * w).sum())
    theirs = sequence(torch.amp.GradScaler("cpu"), TorchSGD([tw], lr=0.1),
                      lambda: (tw * tw).sum())
    assert ours == theirs and len(ours) == 3


def test_step_before_any_scale_and_update_without_step_are_errors():
    w = dl.Parameter(dl.ones(3))
    opt = optim.SGD([w], lr=0.1)
    scaler = dl.amp.GradScaler()
    with pytest.raises(RuntimeError, match="no loss has been scaled"):
        scaler.step(opt)
    scaler.scale((w * w).sum())
    with pytest.raises(RuntimeError, match="no inf checks"):
        scaler.update()
    with pytest.raises(RuntimeError, match="no gradients"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure"):
        scaler.step(opt, closure=lambda: None)


def test_state_dict_matches_torch_and_round_trips_through_json():
    kwargs = {"init_scale": 2.0**8, "growth_interval": 3}
    *_, scaler = _dl_run(OVERFLOWS, 20, **kwargs)
    *_, t_scaler = _torch_run(OVERFLOWS, 20, **kwargs)
    state = scaler.state_dict()
    assert state == t_scaler.state_dict()
    fresh = dl.amp.GradScaler()
    fresh.load_state_dict(json.loads(json.dumps(state)))
    assert fresh.state_dict() == state
    # the restored scaler continues exactly as the original does
    later = {k - 20: v for k, v in OVERFLOWS.items() if k >= 20}
    continued = _dl_run(later, 10, scaler=fresh)[0]
    assert continued == _torch_run(OVERFLOWS, 30, **kwargs)[0][20:]


@pytest.mark.parametrize("state, error", [
    ({}, ValueError),
    ({"scale": 2.0}, ValueError),
    ({"scale": -1.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3,
      "_growth_tracker": 0}, ValueError),
    ({"scale": 1.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3,
      "_growth_tracker": -2}, ValueError),
])
def test_bad_state_dicts_are_refused(state, error):
    with pytest.raises(error, match="GradScaler"):
        dl.amp.GradScaler().load_state_dict(state)


def test_disabled_scaler_passes_everything_through():
    w = dl.Parameter(dl.ones(3))
    opt = optim.SGD([w], lr=0.5)
    scaler = dl.amp.GradScaler(enabled=False)
    loss = (w * w).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(w.detach().numpy(), np.zeros(3, FLOAT))
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()


def test_unscale_divides_gradients_and_refuses_float16_ones():
    w = dl.Parameter(dl.ones(3))
    opt = optim.SGD([w], lr=0.5)
    scaler = dl.amp.GradScaler(init_scale=8.0)
    scaled = scaler.scale([(w * w).sum(), (w * 3).sum()])
    assert isinstance(scaled, list) and scaled[0].item() == 24.0
    scaled[0].backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 16.0, FLOAT))
    scaler.unscale_(opt)
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0, FLOAT))
    half = dl.Parameter(dl.ones(3, dtype=dl.float16))
    half_scaler = dl.amp.GradScaler()
    half_scaler.scale(half.sum()).backward()
    with pytest.raises(ValueError, match="FP16"):
        half_scaler.unscale_(optim.SGD([half], lr=0.1))


def test_update_with_a_new_scale():
    w = dl.Parameter(dl.ones(2))
    scaler = dl.amp.GradScaler()
    scaler.scale(w.sum())
    scaler.update(0.1)
    assert scaler.get_scale() == float(np.float32(0.1))
    scaler.update(dl.tensor([512.0]))
    assert scaler.get_scale() == 512.0
    with pytest.raises(ValueError, match="new_scale"):
        scaler.update(dl.tensor([1.0, 2.0]))


def test_scale_promotes_as_torch():
    scaler, t_scaler = dl.amp.GradScaler(), torch.amp.GradScaler("cpu")
    for shape in [(), (3,)]:
        ours = scaler.scale(dl.ones(shape, dtype=dl.float16))
        theirs = t_scaler.scale(torch.ones(shape, dtype=torch.float16))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


@pytest.mark.parametrize("kwargs, error", [
    ({"init_scale": 0.0}, ValueError),
    ({"init_scale": "cuda"}, TypeError),
    ({"growth_factor": 1.0}, ValueError),
    ({"backoff_factor": 1.0}, ValueError),
    ({"backoff_factor": 0.0}, ValueError),
    ({"growth_interval": 0}, ValueError),
    ({"growth_interval": 2.5}, TypeError),
])
def test_bad_scaler_arguments_are_refused(kwargs, error):
    with pytest.raises(error, match="GradScaler"):
        dl.amp.GradScaler(**kwargs)


def test_factor_setters_validate():
    scaler = dl.amp.GradScaler()
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.25)
    scaler.set_growth_interval(7)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(),
            scaler.get_growth_interval()) == (3.0, 0.25, 7)
    with pytest.raises(ValueError, match="growth_factor"):
        scaler.set_growth_factor(0.5)
