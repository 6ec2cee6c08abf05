"""Trainer.fit / evaluate / predict: the loop against a hand-written PyTorch loop (gradient
accumulation, clipping, schedulers), convergence, batch forms, step_fn, amp, errors."""

from __future__ import annotations

import dlfree as dl
from dlfree import nn, optim
from dlfree.metrics import Accuracy

import numpy as np
import pytest
import sklearn.metrics
import torch

from support.train import blobs


def _torch_copy(model) -> torch.nn.Sequential:
    copy = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for name, p in copy.named_parameters():
            p.copy_(torch.from_numpy(model.state_dict()[name].numpy()))
    return copy


def _torch_loop(model, x, y, *, batch_size, accumulation, clip, interval, epochs):
    """The documented semantics written out: groups of `accumulation` batches (the last group
    of an epoch divided by its own size), clipping, SGD step, StepLR by epoch or step."""
    tmodel = _torch_copy(model)
    opt = torch.optim.SGD(tmodel.parameters(), lr=0.5, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    batches = [(xs[i:i + batch_size], ys[i:i + batch_size]) for i in range(0, len(x), batch_size)]
    step_losses, lrs, clipped = [], [], []
    for _ in range(epochs):
        for start in range(0, len(batches), accumulation):
            group = batches[start:start + accumulation]
            lrs.append(opt.param_groups[0]["lr"])
            losses = []
            for xb, yb in group:
                loss = torch.nn.functional.cross_entropy(tmodel(xb), yb)
                (loss / len(group) if len(group) > 1 else loss).backward()
                losses.append(loss.item())
            kind, limit = clip
            if kind == "norm":
                clipped.append(float(torch.nn.utils.clip_grad_norm_(tmodel.parameters(),
                                                                     limit)) > limit)
            else:
                clipped.append(any(bool((p.grad.abs() > limit).any())
                                   for p in tmodel.parameters()))
                torch.nn.utils.clip_grad_value_(tmodel.parameters(), limit)
            opt.step()
            opt.zero_grad()
            step_losses.append(sum(losses) / len(losses))
            if interval == "step":
                sched.step()
        if interval == "epoch":
            sched.step()
    return tmodel, step_losses, lrs, clipped


@pytest.mark.parametrize("interval", ["epoch", "step"])
@pytest.mark.parametrize("clip", [("norm", 0.5), ("value", 0.05)], ids=["norm", "value"])
def test_fit_matches_a_hand_written_torch_loop(mlp, interval, clip):
    x, y = blobs(24)
    model = mlp()
    tmodel, step_losses, lrs, clipped = _torch_loop(model, x, y, batch_size=4, accumulation=4,
                                                    clip=clip, interval=interval, epochs=2)
    assert any(clipped)  # the clipping limit is reached, so the comparison covers it
    opt = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    data = dl.data.DataLoader(dl.data.TensorDataset(dl.tensor(x), dl.tensor(y)), batch_size=4)
    clip_option = {"grad_clip_norm" if clip[0] == "norm" else "grad_clip_value": clip[1]}
    trainer = dl.train.Trainer(model, opt, nn.CrossEntropyLoss(), max_epochs=2,
                               scheduler=optim.lr_scheduler.StepLR(opt, 1, 0.5),
                               scheduler_interval=interval, grad_accumulation=4, **clip_option)
    history = trainer.fit(data)
    assert trainer.state.global_step == 4  # 6 batches an epoch: groups of 4 and 2
    assert history["step_lr"].values == lrs
    assert history["step_loss"].values == pytest.approx(step_losses, rel=1e-5)
    for name, p in tmodel.named_parameters():
        np.testing.assert_allclose(model.state_dict()[name].numpy(), p.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_accumulating_k_batches_equals_one_step_on_their_union(mlp):
    x, y = blobs(12)
    results = []
    for batch_size, accumulation in ((2, 3), (6, 1)):
        model = mlp()
        data = dl.data.DataLoader(dl.data.TensorDataset(dl.tensor(x), dl.tensor(y)),
                                  batch_size=batch_size)
        dl.train.Trainer(model, optim.SGD(model.parameters(), lr=1.0), nn.CrossEntropyLoss(),
                         max_steps=1, grad_accumulation=accumulation).fit(data)
        results.append(model.state_dict())
    moved = [not np.allclose(results[0][k].numpy(), mlp().state_dict()[k].numpy())
             for k in results[0]]
    assert all(moved)
    for name, value in results[0].items():
        np.testing.assert_allclose(value.numpy(), results[1][name].numpy(), rtol=1e-6,
                                   atol=1e-7)


def test_fit_learns_and_evaluate_and_predict_agree_with_oracles(mlp):
    x, y = blobs(60)
    data = dl.data.TensorDataset(dl.tensor(x), dl.tensor(y))
    train = dl.data.DataLoader(data, batch_size=10, shuffle=True)
    val = dl.data.DataLoader(data, batch_size=25)
    model = mlp(hidden=16)
    trainer = dl.train.Trainer(model, optim.Adam(model.parameters(), lr=0.05),
                               nn.CrossEntropyLoss(), max_epochs=15, seed=0,
                               metrics={"acc": Accuracy(task="multiclass", num_classes=3)})
    history = trainer.fit(train, val)
    assert history["loss"].values[-1] < 0.2 * history["loss"].values[0]
    assert history["val_acc"].last >= 0.95
    assert len(history["val_loss"]) == 15 and len(history["step_loss"]) == 90
    logits = trainer.predict(val)
    assert tuple(logits.shape) == (60, 3)
    scores = trainer.evaluate(val)
    assert set(scores) == {"loss", "acc"}
    assert scores["acc"] == pytest.approx(
        sklearn.metrics.accuracy_score(y, logits.numpy().argmax(1)), rel=1e-6)
    want = torch.nn.functional.cross_entropy(torch.from_numpy(logits.numpy()),
                                             torch.from_numpy(y)).item()
    assert scores["loss"] == pytest.approx(want, rel=1e-5)
    unlabeled = [dl.tensor(x[i:i + 7]) for i in range(0, 60, 7)]
    np.testing.assert_array_equal(trainer.predict(unlabeled).numpy(), logits.numpy())
    assert model.training  # evaluate and predict restore the mode


class _Net(nn.Module):
    """The conftest MLP behind a forward that takes keywords, optionally computing its loss."""

    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x, labels=None):
        logits = self.body(x)
        if labels is None:
            return logits
        return {"logits": logits, "loss": dl.functional.cross_entropy(logits, labels)}


class _Dicts(dl.data.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


def _fit_one_epoch(model, data, **options):
    dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.3), max_epochs=1,
                     **options).fit(data)
    return {k: v.numpy() for k, v in model.state_dict().items()}


def test_dict_batches_step_fn_and_model_computed_losses_train_alike(mlp):
    x, y = blobs(12)
    tuples = dl.data.DataLoader(dl.data.TensorDataset(dl.tensor(x), dl.tensor(y)), batch_size=4)
    dicts = dl.data.DataLoader(_Dicts(x, y), batch_size=4)
    loss_fn = nn.CrossEntropyLoss()
    seen_outputs = []

    class Outputs:
        def dlfree_train_batch_end(self, outputs):
            seen_outputs.append(outputs)

    def step_fn(trainer, batch):
        inputs, target = batch
        return loss_fn(trainer.model(inputs), target)

    want = _fit_one_epoch(mlp(), tuples, loss_fn=loss_fn)
    runs = {
        "dict batches": _fit_one_epoch(_Net(mlp()), dicts, loss_fn=loss_fn),
        "loss from the model": _fit_one_epoch(_Net(mlp()), dicts),
        "step_fn": _fit_one_epoch(mlp(), tuples, step_fn=step_fn, callbacks=[Outputs()]),
    }
    for run, got in runs.items():
        for name, value in want.items():
            assert np.array_equal(got[f"body.{name}" if run != "step_fn" else name],
                                  value), run
    assert seen_outputs == [None, None, None]


def test_schedulers_that_step_on_a_monitored_value_get_it(mlp, loaders):
    class Plateau:
        def __init__(self):
            self.values = []

        def step(self, metrics):
            self.values.append(metrics)

    train, val = loaders()
    model = mlp()
    scheduler = Plateau()
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), scheduler=scheduler, max_epochs=3)
    trainer.fit(train, val)
    assert scheduler.values == trainer.history["val_loss"].values
    scheduler = Plateau()  # validating every other epoch: stepped on those epochs only
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), scheduler=scheduler, max_epochs=4,
                               validate_every_n_epochs=2)
    trainer.fit(train, val)
    assert len(scheduler.values) == 2 and scheduler.values == trainer.history["val_loss"].values
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), scheduler=Plateau(), max_epochs=1)
    with pytest.raises(ValueError, match="scheduler Plateau: monitors 'val_loss', a validation "
                                         r"value, but fit\(\) got no val_data"):
        trainer.fit(train)
    assert "loss" not in trainer.history  # refused before the first batch
    with pytest.raises(ValueError, match="needs a monitored value.*scheduler_interval='epoch'"):
        dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1), scheduler=Plateau(),
                         scheduler_interval="step")


def test_amp_uses_autocast_and_a_grad_scaler_like_the_documented_loop(mlp):
    x, y = blobs(12)
    loss_fn = nn.CrossEntropyLoss()
    model = mlp()
    opt = optim.SGD(model.parameters(), lr=0.3)
    scaler = dl.amp.GradScaler()
    for i in range(0, 12, 4):
        with dl.amp.autocast():
            loss = loss_fn(model(dl.tensor(x[i:i + 4])), dl.tensor(y[i:i + 4]))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    auto = mlp()
    data = dl.data.DataLoader(dl.data.TensorDataset(dl.tensor(x), dl.tensor(y)), batch_size=4)
    trainer = dl.train.Trainer(auto, optim.SGD(auto.parameters(), lr=0.3), loss_fn, amp=True,
                               max_epochs=1)
    trainer.fit(data)
    assert trainer.config["amp"] == "float16"
    assert trainer.scaler.get_scale() == scaler.get_scale()
    for name, value in model.state_dict().items():
        assert np.array_equal(auto.state_dict()[name].numpy(), value.numpy()), name


@pytest.mark.parametrize("init_scale", [2.0 ** 16, 2.0 ** 40], ids=["finite", "overflowing"])
def test_amp_clipping_unscales_then_clips_with_dlfree_optim(mlp, init_scale):
    """Under amp, clipping sees the unscaled gradients and is dlfree.optim's (torch's): also
    when the scale makes them overflow, the step is skipped and the scale backs off."""
    x, y = blobs(12)
    loss_fn = nn.CrossEntropyLoss()
    model = mlp()
    opt = optim.SGD(model.parameters(), lr=0.3)
    scaler = dl.amp.GradScaler(init_scale=init_scale)
    norms = []
    for i in range(0, 12, 4):
        with dl.amp.autocast():
            loss = loss_fn(model(dl.tensor(x[i:i + 4])), dl.tensor(y[i:i + 4]))
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        norms.append(float(optim.clip_grad_norm_(model.parameters(), 0.1)))
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    auto = mlp()
    data = dl.data.DataLoader(dl.data.TensorDataset(dl.tensor(x), dl.tensor(y)), batch_size=4)
    trainer = dl.train.Trainer(auto, optim.SGD(auto.parameters(), lr=0.3), loss_fn, amp=True,
                               max_epochs=1, grad_clip_norm=0.1)
    trainer.scaler = dl.amp.GradScaler(init_scale=init_scale)
    trainer.fit(data)
    assert trainer.scaler.get_scale() == scaler.get_scale()
    if init_scale > 2.0 ** 16:
        assert scaler.get_scale() < init_scale  # steps were skipped on non-finite gradients
        assert not all(np.isfinite(norms))
    else:
        assert all(np.isfinite(norms)) and max(norms) > 0.1  # so clipping scaled them
    for name, value in model.state_dict().items():
        assert np.array_equal(auto.state_dict()[name].numpy(), value.numpy()), name


def test_device_places_the_model_and_batches(mlp, loaders, device):
    model = mlp()
    train, val = loaders()
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), max_epochs=1, device=device)
    trainer.fit(train, val)
    assert {p.device.type for p in model.parameters()} == {dl.Device(device).type}
    assert trainer.predict(val).device.type == dl.Device(device).type
    assert trainer.config["device"] == str(dl.Device(device))


def test_config_timings_and_state_are_reported(mlp, loaders, tmp_path):
    model = mlp()
    train, val = loaders()
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), max_epochs=2, run_dir=tmp_path / "run",
                               checkpoint_dir=tmp_path / "ckpt")
    trainer.fit(train, val)
    assert trainer.config["optimizer"] == "SGD" and trainer.config["lr"] == [0.1]
    assert trainer.config["loss_fn"] == "CrossEntropyLoss" and trainer.config["max_epochs"] == 2
    assert set(trainer.timings) >= {"data", "step", "validation", "checkpoint", "callbacks",
                                    "total"}
    assert trainer.timings["total"] >= trainer.timings["step"] > 0
    assert (trainer.state.epoch, trainer.state.global_step, trainer.state.steps_per_epoch) == \
        (2, 12, 6)
    assert (tmp_path / "run").is_dir()


@pytest.mark.parametrize("options, error, match", [
    ({"max_epochs": 0}, ValueError, "max_epochs must be an integer >= 1 or None, got 0"),
    ({"grad_accumulation": 0}, ValueError, "grad_accumulation must be an integer >= 1, got 0"),
    ({"grad_clip_norm": -1.0}, ValueError, "grad_clip_norm must be a positive finite number"),
    ({"scheduler_interval": "batch"}, ValueError, "scheduler_interval must be 'epoch' or "
                                                  "'step', got 'batch'"),
    ({"metrics": {"acc": object()}}, TypeError, "metric 'acc' .*lacks update, compute, reset"),
    ({"metrics": [Accuracy(task="binary"), Accuracy(task="binary")]}, ValueError,
     "two metrics are named 'accuracy'"),
    ({"loss_fn": "mse"}, TypeError, "loss_fn must be callable, got str"),
    ({"amp": "int8"}, dl.DTypeError, "dtype must be dlfree.float16 or dlfree.bfloat16"),
])
def test_bad_settings_are_explained(mlp, options, error, match):
    model = mlp()
    with pytest.raises(error, match=match):
        dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1), **options)


def test_bad_fits_are_explained(mlp, loaders):
    model = mlp()
    train, _ = loaders()
    opt = optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="give max_epochs or max_steps"):
        dl.train.Trainer(model, opt, nn.CrossEntropyLoss()).fit(train)
    with pytest.raises(ValueError, match="give an optimizer, or a step_fn"):
        dl.train.Trainer(model, max_epochs=1).fit(train)
    with pytest.raises(ValueError, match="yielded no batches in epoch 0"):
        dl.train.Trainer(model, opt, nn.CrossEntropyLoss(), max_epochs=1).fit([])
    with pytest.raises(ValueError, match="the batch has no target for loss_fn"):
        dl.train.Trainer(model, opt, nn.CrossEntropyLoss(), max_epochs=1).fit(
            [dl.tensor(blobs(4)[0])])
    with pytest.raises(TypeError, match=r"the loss must be a one-element tensor, got a tensor "
                                        r"of shape \(4,\)"):
        dl.train.Trainer(model, opt, nn.CrossEntropyLoss(reduction="none"),
                         max_epochs=1).fit(train)


def test_a_model_whose_outputs_carry_loss_and_logits_needs_no_loss_fn(mlp):
    """HuggingFace style: batches are dicts with labels, the model returns loss and logits;
    metrics see the logits."""
    class WithLoss(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, inputs, labels):
            logits = self.inner(inputs)
            return {"loss": dl.functional.cross_entropy(logits, labels), "logits": logits}

    x, y = blobs(24, seed=0)
    rows = [{"inputs": dl.tensor(a), "labels": dl.tensor(b)} for a, b in zip(x, y)]
    data = dl.data.DataLoader(rows, batch_size=6)
    model = WithLoss(mlp())
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.5), max_epochs=3,
                               metrics={"acc": Accuracy(task="multiclass", num_classes=3)})
    history = trainer.fit(data, data)
    assert history["loss"].values[-1] < history["loss"].values[0]
    with dl.no_grad():
        logits = model.inner(dl.tensor(x))
    expected = float((logits.argmax(dim=1) == dl.tensor(y)).float().mean())
    assert history["val_acc"].last == pytest.approx(expected)
