"""dlfree.nn.quantization against torch.ao.quantization: fusion, quantization-aware
training steps, post-training calibration and dynamic int8 Linear."""

import copy

import dlfree as dl
from dlfree import nn
from dlfree.nn import quantization as Q

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def _nets(seed=0):
    """The same Conv-BN-ReLU / Linear-ReLU net in dl.free and torch, with equal weights and
    batch-norm statistics; both in eval mode."""
    dl.manual_seed(seed)
    ours = nn.Sequential(Q.QuantStub(), nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4),
                         nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 8), nn.ReLU(),
                         nn.Linear(8, 3))
    ref = torch.nn.Sequential(tq.QuantStub(), torch.nn.Conv2d(2, 4, 3, padding=1),
                              torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 6 * 6, 8), torch.nn.ReLU(),
                              torch.nn.Linear(8, 3), tq.DeQuantStub())
    rng = np.random.default_rng(seed)
    bn = ours[2]
    bn.running_mean.copy_(dl.tensor(rng.standard_normal(4).astype(np.float32)))
    bn.running_var.copy_(dl.tensor(rng.uniform(0.5, 2, 4).astype(np.float32)))
    with dl.no_grad():
        bn.weight.copy_(dl.tensor(rng.uniform(0.5, 1.5, 4).astype(np.float32)))
        bn.bias.copy_(dl.tensor(rng.standard_normal(4).astype(np.float32)))
    ref.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                         for k, v in ours.state_dict().items()}, strict=False)
    return ours.eval(), ref.eval()


GROUPS = [["1", "2", "3"], ["5", "6"]]


def _inputs(n=5, seed=1):
    x = np.random.default_rng(seed).standard_normal((n, 2, 6, 6)).astype(np.float32)
    return x


def test_fuse_modules_folds_bn_as_torch():
    ours, ref = _nets()
    x = _inputs()
    expected = ours(dl.tensor(x)).detach().numpy()
    fused = Q.fuse_modules(ours, GROUPS)
    rfused = tq.fuse_modules(ref, GROUPS)
    assert isinstance(fused[1], Q.FusedReLU) and isinstance(fused[2], nn.Identity)
    np.testing.assert_allclose(fused[1][0].weight.detach().numpy(),
                               rfused[1][0].weight.detach().numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(fused[1][0].bias.detach().numpy(),
                               rfused[1][0].bias.detach().numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(fused(dl.tensor(x)).detach().numpy(), expected, rtol=1e-5,
                               atol=1e-6)
    assert ours[2].__class__ is nn.BatchNorm2d  # not in place by default


def test_fuse_modules_rejects_training_bn_and_bad_groups():
    ours, _ = _nets()
    with pytest.raises(ValueError, match="needs eval mode"):
        Q.fuse_modules(ours.train(), GROUPS)
    with pytest.raises(ValueError, match=r"can fuse .* got \['ReLU', 'Flatten'\]"):
        Q.fuse_modules(ours.eval(), [["3", "4"]])


def _prepared_pair(qconfig, ref_qconfig):
    ours, ref = _nets()
    ours = Q.prepare_qat(Q.fuse_modules(ours, GROUPS).train(), qconfig)
    ref = tq.fuse_modules(ref, GROUPS)
    ref.qconfig = ref_qconfig
    ref = tq.prepare_qat(ref.train())
    return ours, ref


@pytest.mark.parametrize("per_channel", [False, True])
def test_qat_training_steps_match_torch(per_channel):
    if per_channel:
        ref_qconfig = tq.QConfig(
            activation=tq.default_fake_quant,
            weight=tq.FakeQuantize.with_args(observer=tq.PerChannelMinMaxObserver,
                                             quant_min=-128, quant_max=127, dtype=torch.qint8,
                                             qscheme=torch.per_channel_symmetric))
        qconfig = Q.default_per_channel_qat_qconfig
    else:
        ref_qconfig, qconfig = tq.default_qat_qconfig, Q.default_qat_qconfig
    ours, ref = _prepared_pair(qconfig, ref_qconfig)
    float_model = Q.fuse_modules(_nets()[0], GROUPS)
    for step in range(3):
        x = _inputs(seed=10 + step) * (1 + step)
        xo, xr = dl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        yo, yr = ours(xo), ref(xr)
        np.testing.assert_allclose(yo.detach().numpy(), yr.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        drift = yo.detach().numpy() - float_model(dl.tensor(x)).detach().numpy()
        assert np.abs(drift).max() > 1e-4  # fake quantization is really on
        (yo * yo).sum().backward()
        (yr * yr).sum().backward()
        np.testing.assert_allclose(xo.grad.numpy(), xr.grad.numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(ours[5].weight.grad.numpy(), ref[5].weight.grad.numpy(),
                                   rtol=1e-4, atol=1e-6)
    # frozen for inference: the last qparams stay, fake quantization keeps running
    converted = Q.convert(ours)
    ref.apply(tq.disable_observer)
    ref.eval()
    x = _inputs(seed=20) * 5
    np.testing.assert_allclose(converted(dl.tensor(x)).detach().numpy(),
                               ref(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_post_training_calibration_matches_torch_observers():
    ours, ref = _nets()
    ours = Q.prepare(Q.fuse_modules(ours, GROUPS))
    ref = tq.fuse_modules(ref, GROUPS)
    ref.qconfig = tq.default_qconfig
    ref = tq.prepare(ref)
    batches = [_inputs(seed=30 + i) * (i + 1) for i in range(3)]
    before = ours(dl.tensor(batches[0])).detach().numpy()
    Q.calibrate(ours, [dl.tensor(b) for b in batches])
    with torch.no_grad():
        for b in batches:
            ref(torch.from_numpy(b))
    pairs = [(ours[0].activation_post_process, ref[0].activation_post_process),
             (ours[1].activation_post_process, ref[1].activation_post_process),
             (ours[5].activation_post_process, ref[5].activation_post_process)]
    for fq, obs in pairs:
        scale, zp = fq.calculate_qparams()
        rscale, rzp = obs.calculate_qparams()
        np.testing.assert_allclose(scale, rscale.item(), rtol=1e-6)
        assert int(zp) == int(rzp.item())
    converted = Q.convert(ours)
    after = converted(dl.tensor(batches[0])).detach().numpy()
    float_out = Q.fuse_modules(_nets()[0], GROUPS)(dl.tensor(batches[0])).detach().numpy()
    np.testing.assert_allclose(before, float_out, rtol=1e-5, atol=1e-6)  # observers only
    assert not np.array_equal(after, float_out)
    assert np.abs(after - float_out).max() < 0.1 * np.abs(float_out).max()


def test_calibrate_and_convert_need_a_prepared_model():
    with pytest.raises(ValueError, match="call prepare"):
        Q.calibrate(nn.Linear(2, 2), [dl.zeros(1, 2)])
    with pytest.raises(ValueError, match="call prepare or prepare_qat"):
        Q.convert(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="training mode"):
        Q.prepare_qat(nn.Linear(2, 2).eval())


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_quantize_dynamic_matches_torch(per_channel):
    dl.manual_seed(3)
    ours = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ref = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    ref.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                         for k, v in ours.state_dict().items()})
    spec = {nn.Linear: Q.per_channel_dynamic_qconfig} if per_channel else {nn.Linear}
    their_spec = {torch.nn.Linear: tq.per_channel_dynamic_qconfig} if per_channel else \
        {torch.nn.Linear}
    qo = Q.quantize_dynamic(ours, spec, dtype="qint8")
    qr = tq.quantize_dynamic(copy.deepcopy(ref), their_spec, dtype=torch.qint8)
    assert isinstance(qo[0], Q.DynamicQuantizedLinear) and isinstance(ours[0], nn.Linear)
    assert qo[0].weight_scale.shape == ((32,) if per_channel else ())
    x = (np.random.default_rng(4).standard_normal((64, 16)) * 2).astype(np.float32)
    yo = qo(dl.tensor(x)).numpy()
    yr = qr(torch.from_numpy(x)).detach().numpy()
    yf = ref(torch.from_numpy(x)).detach().numpy()
    # the same integer arithmetic as torch's fbgemm kernel: equal up to float rounding,
    # while both are visibly off the float model
    np.testing.assert_allclose(yo, yr, rtol=1e-5, atol=1e-6)
    assert np.abs(yr - yf).max() > 1e-3
    # the quantized layer's state (int8 weight, scales, bias) is its state_dict
    assert set(qo.state_dict()) == {f"{i}.{k}" for i in (0, 2)
                                    for k in ("weight_int8", "weight_scale", "bias")}
    with pytest.raises(ValueError, match="dtype must be 'qint8'"):
        Q.quantize_dynamic(ours, {nn.Linear}, dtype="float16")
