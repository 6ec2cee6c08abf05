"""The `Optimizer` base contract: param groups, lazy state, zero_grad, step with a closure,
state_dict checks, and the two methods a subclass writes."""

from __future__ import annotations

import dlfree as dl
from dlfree import optim
from dlfree.optim import SGD, Adam, Optimizer

import numpy as np
import pytest


class SignDescent(Optimizer):
    """A minimal subclass written against the documented hooks: p -= lr * sign(g)."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    def _validate(self, group):
        self._check("lr", group["lr"], lambda v: v > 0, "> 0")

    def _update(self, group, params):
        for p in params:
            state = self.state[p]
            state["step"] = state.get("step", 0) + 1
            direction = self._scratch(p)
            p.device.xp.sign(p.grad.array, out=direction)
            p.sub_(dl.as_tensor(direction * group["lr"]))


def _param(*values) -> dl.Parameter:
    return dl.Parameter(dl.tensor(np.array(values, dtype=np.float64)))


def test_a_subclass_needs_only_validate_and_update():
    p, q = _param(1.0, -2.0), _param(3.0)
    opt = SignDescent([p, q], lr=0.5)
    assert not opt.state
    p.grad = dl.tensor(np.array([2.0, -3.0]))
    opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), [0.5, -1.5])
    np.testing.assert_array_equal(q.detach().numpy(), [3.0])
    assert opt.state[p] == {"step": 1} and q not in opt.state
    with pytest.raises(ValueError, match="^SignDescent: lr must be > 0, got 0"):
        SignDescent([p], lr=0)


def test_update_is_required():
    class Incomplete(Optimizer):
        pass

    p = _param(1.0)
    p.grad = dl.ones_like(p)
    with pytest.raises(NotImplementedError, match="Incomplete does not implement _update"):
        Incomplete([p], {}).step()


def test_param_groups_take_defaults_and_keep_overrides():
    a, b, c = _param(1.0), _param(2.0), _param(3.0)
    opt = SGD([{"params": [a]}, {"params": b, "lr": 0.5, "name": "head"}], lr=0.1, momentum=0.9)
    assert [g["params"] for g in opt.param_groups] == [[a], [b]]
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["name"] == "head"
    assert opt.defaults["lr"] == 0.1
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.0
    assert "Parameter Group 2" in repr(opt) and "momentum: 0.0" in repr(opt)


@pytest.mark.parametrize("params, error, message", [
    ([], ValueError, "empty parameter list"),
    (_param(1.0), TypeError, "iterable"),
    ({_param(1.0)}, TypeError, "iterable"),
    (3, TypeError, "iterable"),
    ([np.zeros(2)], TypeError, "parameter 0 is a ndarray"),
    ([dl.tensor([1, 2])], TypeError, "only floating-point"),
    ([_param(1.0) * 2], ValueError, "not a leaf"),
    ([{"lr": 0.1}], ValueError, "'params' key"),
    ([{"params": {_param(1.0)}}], TypeError, "ordered"),
])
def test_bad_params_are_rejected(params, error, message):
    with pytest.raises(error, match=message):
        SGD(params, lr=0.1)


def test_a_tensor_may_belong_to_one_group_once():
    p, q = _param(1.0), _param(2.0)
    with pytest.raises(ValueError, match="same tensor twice"):
        SGD([p, p])
    with pytest.raises(ValueError, match="more than one param group"):
        SGD([{"params": [p]}, {"params": [q, p]}])
    opt = SGD([p])
    with pytest.raises(ValueError, match="more than one param group"):
        opt.add_param_group({"params": [p]})


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    p, q = _param(1.0, 2.0), _param(3.0)
    opt = SGD([p, q])
    p.grad = dl.tensor(np.array([4.0, 5.0]))
    grad = p.grad
    opt.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert p.grad is None
    else:
        assert p.grad is grad
        np.testing.assert_array_equal(grad.numpy(), [0.0, 0.0])
    assert q.grad is None


def test_step_runs_the_closure_with_grad_enabled_and_returns_its_loss():
    p = _param(1.0, -2.0)
    opt = SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with dl.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, -1.6], rtol=1e-15)
    assert opt.step() is None


def test_state_is_created_lazily_per_parameter():
    p, q = _param(1.0), _param(2.0)
    opt = Adam([p, q])
    assert not opt.state and p not in opt.state
    p.grad = dl.ones_like(p)
    opt.step()
    assert set(opt.state[p]) == {"step", "exp_avg", "exp_avg_sq"} and q not in opt.state


def _trained_adam():
    p, q = _param(1.0, 2.0), _param(3.0)
    opt = Adam([{"params": [p]}, {"params": [q], "lr": 0.01}], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        ((p * p).sum() + (q * q * q).sum()).backward()
        opt.step()
    return opt, p, q


def test_state_dict_layout_and_copies():
    opt, p, q = _trained_adam()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.01 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert set(sd["state"]) == {0, 1} and sd["state"][0]["step"] == 3
    sd["state"][0]["exp_avg"].zero_()
    sd["param_groups"][0]["lr"] = 5.0
    assert opt.state[p]["exp_avg"].abs().sum().item() > 0
    assert opt.param_groups[0]["lr"] == 0.1


def test_load_state_dict_copies_and_restores_groups():
    opt, p, q = _trained_adam()
    sd = opt.state_dict()
    fresh = Adam([{"params": [p]}, {"params": [q]}], lr=0.5)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[1]["lr"] == 0.01 and fresh.param_groups[1]["params"] == [q]
    sd["state"][0]["exp_avg"].zero_()
    np.testing.assert_array_equal(fresh.state[p]["exp_avg"].numpy(),
                                  opt.state[p]["exp_avg"].numpy())


def test_load_state_dict_accepts_state_keys_that_went_through_json():
    opt, p, q = _trained_adam()
    sd = opt.state_dict()
    sd["state"] = {str(k): v for k, v in sd["state"].items()}
    fresh = Adam([{"params": [p]}, {"params": [q]}])
    fresh.load_state_dict(sd)
    np.testing.assert_array_equal(fresh.state[q]["exp_avg_sq"].numpy(),
                                  opt.state[q]["exp_avg_sq"].numpy())


def test_load_state_dict_casts_state_to_the_parameter_dtype():
    opt, p, q = _trained_adam()
    sd = opt.state_dict()
    sd["state"][0]["exp_avg"] = sd["state"][0]["exp_avg"].float()
    sd["state"][0]["step"] = dl.tensor(3.0)
    fresh = Adam([{"params": [p]}, {"params": [q]}])
    fresh.load_state_dict(sd)
    assert fresh.state[p]["exp_avg"].dtype == dl.float64
    assert fresh.state[p]["step"] == 3 and isinstance(fresh.state[p]["step"], int)


@pytest.mark.parametrize("change, message", [
    (lambda sd: sd["param_groups"].pop(), "1 param groups, this optimizer has 2"),
    (lambda sd: sd["param_groups"][0]["params"].append(7), "group 0 has 2 parameters"),
    (lambda sd: sd["state"][0].update(exp_avg=dl.zeros(3, dtype=dl.float64)),
     r"'exp_avg' of parameter 0 has shape \(3,\), but the parameter has shape \(2,\)"),
    (lambda sd: sd["state"].update({5: {}}), "state for parameter 5"),
    (lambda sd: sd.pop("state"), "keys 'state' and 'param_groups'"),
    (lambda sd: sd["param_groups"][1].update(lr=-1.0), "Adam: lr must be >= 0"),
])
def test_load_state_dict_rejects_a_mismatch(change, message):
    opt, p, q = _trained_adam()
    sd = opt.state_dict()
    change(sd)
    before = opt.state_dict()
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(sd)
    np.testing.assert_array_equal(opt.state[p]["exp_avg"].numpy(),
                                  before["state"][0]["exp_avg"].numpy())
    assert opt.param_groups[1]["lr"] == before["param_groups"][1]["lr"]


def test_scratch_arrays_are_shared_and_shaped_like_the_parameter():
    opt = SignDescent([_param(1.0, 2.0, 3.0), dl.Parameter(dl.zeros(2, 2, dtype=dl.float64))])
    big, small = opt.param_groups[0]["params"][0], opt.param_groups[0]["params"][1]
    a, b = opt._scratch(small), opt._scratch(big)
    assert a.shape == (2, 2) and b.shape == (3,) and a.dtype == np.float64
    assert np.shares_memory(opt._scratch(small), opt._scratch(big))
    assert not np.shares_memory(opt._scratch(small, 0), opt._scratch(small, 1))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop",
                                  "Adagrad", "Adadelta", "LAMB", "NovoGrad", "AdaBound", "LARS",
                                  "Lion", "Adafactor"])
def test_a_schedule_may_bring_lr_to_zero_and_the_state_still_loads(name):
    """Cosine decay ends at lr 0; that state must save, load and step without change (LARS
    excepted: as in its paper, lr scales what enters the velocity, which keeps moving)."""
    cls = getattr(optim, name)
    extra = {"relative_step": False} if name == "Adafactor" else {}
    p = dl.Parameter(dl.tensor([[1.0, -2.0], [0.5, 3.0]]))
    opt = cls([p], lr=0.1, **extra)
    p.grad = dl.ones(2, 2)
    opt.step()
    opt.param_groups[0]["lr"] = 0.0
    before = p.detach().numpy().copy()
    opt.step()
    if name != "LARS":
        np.testing.assert_array_equal(p.detach().numpy(), before)
    fresh = cls([p], lr=0.1, **extra)
    fresh.load_state_dict(opt.state_dict())
    assert fresh.param_groups[0]["lr"] == 0.0


def _three_params_with_grads(*bad):
    """Parameters of three shapes with finite gradients, except `bad`: (index, flat, value)."""
    params = [_param(1.0, 2.0), dl.Parameter(dl.ones(2, 3)), _param(0.5)]
    for p in params:
        p.grad = dl.ones_like(p) * 0.25
    for index, flat, value in bad:
        grad = params[index].grad.numpy().copy()
        grad.reshape(-1)[flat] = value
        params[index].grad = dl.tensor(grad)
    return params


@pytest.mark.parametrize("bad", [(1, 4, np.inf), (2, 0, -np.inf), (0, 1, np.nan),
                                 (1, 0, np.nan)], ids=["inf", "-inf", "nan", "nan-first"])
def test_gradients_are_finite_is_false_for_any_nan_or_inf(bad):
    opt = SGD(_three_params_with_grads(bad), lr=0.1)
    result = opt.gradients_are_finite()
    assert result is False


def test_gradients_are_finite_is_true_when_all_are_and_skips_params_without_grads():
    params = _three_params_with_grads()
    params.append(_param(np.inf))  # its value is not its gradient, and it has none
    opt = SGD([{"params": params[:2]}, {"params": params[2:], "lr": 0.5}], lr=0.1)
    assert opt.gradients_are_finite() is True
    opt.zero_grad()
    assert opt.gradients_are_finite() is True  # no gradients at all: nothing is wrong


def test_gradients_are_finite_combines_all_tensors_before_one_host_read(monkeypatch):
    """The per-tensor answers are stacked on the device and read once (one sync on CuPy)."""
    params = _three_params_with_grads()
    opt = SGD(params, lr=0.1)
    stacked = []
    real_stack = np.stack

    def spy(arrays, *args, **kwargs):
        stacked.append(len(arrays))
        return real_stack(arrays, *args, **kwargs)

    monkeypatch.setattr(np, "stack", spy)
    assert opt.gradients_are_finite() is True
    assert stacked == [len(params)]
