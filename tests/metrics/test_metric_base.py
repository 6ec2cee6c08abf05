"""The Metric contract (declared states, update/forward/compute, exact merge, state_dict,
reset, devices), MetricCollection and registration."""

from __future__ import annotations

import dlfree as dl
from dlfree.metrics import (
    Accuracy,
    MeanSquaredError,
    Metric,
    MetricCollection,
    Precision,
    R2Score,
)
from dlfree.metrics.plugin import METRICS

import numpy as np
import pytest

from support.metrics import assert_close, check_streaming, to_numpy


# ------------------------------------------------------------------ a toy metric
@pytest.fixture
def float64_results():
    """Results in float64, so that exactness can be checked far below float32's precision."""
    dl.set_default_dtype(dl.float64)
    yield
    dl.set_default_dtype(dl.float32)


class Summary(Metric):
    """One state of each reduction: count, sum, mean, min, max and every value."""

    def __init__(self):
        super().__init__()
        self.add_state("count", 0, "sum")
        self.add_state("total", 0.0, "sum")
        self.add_state("mean", 0.0, "mean", weight="count")
        self.add_state("low", np.inf, "min")
        self.add_state("high", -np.inf, "max")
        self.add_state("values", [], "cat")

    def update(self, values) -> None:
        (values,) = self.as_arrays(values)
        xp = self._device.xp
        values = values.astype(xp.float64).reshape(-1)
        self._merge_states({"count": xp.asarray(values.size), "total": values.sum(),
                            "mean": values.mean(), "low": values.min(), "high": values.max(),
                            "values": [values]})

    def compute(self):
        xp = self._device.xp
        values = xp.concatenate(self.values) if self.values else xp.zeros(0)
        return {name: self.as_result(v) for name, v in
                (("count", self.count), ("total", self.total), ("mean", self.mean),
                 ("low", self.low), ("high", self.high), ("values", values))}


def _summary(values):
    return {"count": values.size, "total": values.sum(), "mean": values.mean(),
            "low": values.min(), "high": values.max(), "values": values}


def test_every_reduction_streams_and_merges_exactly(rng, float64_results):
    batches = [(rng.normal(size=n) * 100 + 7,) for n in (5, 1, 8, 3)]
    check_streaming(Summary, batches, _summary, tol=1e-12)


def test_merge_of_several_shards_equals_one_metric(rng, float64_results):
    shards = [rng.normal(size=n) for n in (4, 9, 2)]
    merged = Summary()
    for shard in shards:
        part = Summary()
        part.update(shard)
        merged.merge(part)
    assert_close(merged.compute(), _summary(np.concatenate(shards)), tol=1e-12)


def test_merge_with_a_fresh_metric_changes_nothing(rng, float64_results):
    values = rng.normal(size=6)
    metric = Summary()
    metric.update(values)
    assert metric.merge(Summary()) is metric
    assert_close(metric.compute(), _summary(values), tol=1e-12)
    fresh = Summary().merge(metric)
    assert_close(fresh.compute(), _summary(values), tol=1e-12)


def test_forward_returns_the_batch_value_and_accumulates(rng):
    metric = MeanSquaredError()
    a, b = rng.normal(size=(2, 10)), rng.normal(size=(2, 4))
    assert_close(metric(a[0], a[1]), np.mean((a[0] - a[1]) ** 2))
    assert_close(metric(b[0], b[1]), np.mean((b[0] - b[1]) ** 2))
    both = np.concatenate([a, b], axis=1)
    assert_close(metric.compute(), np.mean((both[0] - both[1]) ** 2))


def test_forward_that_fails_leaves_the_state_unchanged(rng):
    metric = MeanSquaredError()
    metric.update(np.ones(3), np.zeros(3))
    with pytest.raises(dl.ShapeError):
        metric(np.ones(2), np.ones(3))
    assert_close(metric.compute(), 1.0)


def test_inputs_may_be_tensors_arrays_or_lists():
    preds, target = [0.2, 0.7, 0.9, 0.4], [0, 1, 0, 0]
    expected = Accuracy("binary")(np.array(preds), np.array(target))
    grad = dl.tensor(preds, requires_grad=True)
    for p, t in ((preds, target), (dl.tensor(preds), dl.tensor(target)), (grad, target)):
        assert_close(Accuracy("binary")(p, t), expected.numpy())


def test_results_are_tensors_in_the_default_dtype(rng):
    result = Accuracy("binary")(rng.random(5), rng.integers(0, 2, 5))
    assert isinstance(result, dl.Tensor) and result.shape == () and result.dtype == dl.float32
    dl.set_default_dtype(dl.float64)
    try:
        assert Accuracy("binary")(rng.random(5), rng.integers(0, 2, 5)).dtype == dl.float64
    finally:
        dl.set_default_dtype(dl.float32)


def test_state_dict_holds_plain_arrays_and_round_trips(rng):
    metric = Summary()
    metric.update(rng.normal(size=5))
    metric.update(rng.normal(size=3))
    state = metric.state_dict()
    assert set(state) == {"count", "total", "mean", "low", "high", "values"}
    assert all(isinstance(v, np.ndarray) for k, v in state.items() if k != "values")
    assert isinstance(state["values"], list) and len(state["values"]) == 2
    restored = Summary()
    restored.load_state_dict(state)
    assert_close(restored.compute(), to_numpy(metric.compute()), tol=0)
    state["total"][...] = 123.0  # the dict is a copy, not the live state
    assert float(metric.total) != 123.0


def test_load_state_dict_rejects_missing_unexpected_and_misshapen_states():
    state = Accuracy("multiclass", num_classes=3).state_dict()
    with pytest.raises(KeyError, match=r"missing states \['tp'\].*unexpected states \['x'\]"):
        Accuracy("multiclass", num_classes=3).load_state_dict(
            {**{k: v for k, v in state.items() if k != "tp"}, "x": 1})
    with pytest.raises(dl.ShapeError, match=r"'tp' has shape \(4,\), got \(3,\)"):
        Accuracy("multiclass", num_classes=4).load_state_dict(state)
    with pytest.raises(TypeError, match="list of arrays"):
        Summary().load_state_dict({**Summary().state_dict(), "values": np.zeros(2)})


def test_reset_returns_to_the_initial_state(rng):
    metric = Summary()
    initial = metric.state_dict()
    metric.update(rng.normal(size=4))
    metric.reset()
    after = metric.state_dict()
    assert after["values"] == [] and all(
        np.array_equal(after[k], initial[k]) for k in initial if k != "values")


def test_merge_rejects_other_types_and_other_configurations():
    with pytest.raises(TypeError, match="expected a Accuracy, got Precision"):
        Accuracy("binary").merge(Precision("binary"))
    with pytest.raises(dl.ShapeError, match=r"state 'tp' has shape \(3,\) here and \(4,\)"):
        Accuracy("multiclass", num_classes=3).merge(Accuracy("multiclass", num_classes=4))


def test_clone_is_independent(rng):
    metric = MeanSquaredError()
    metric.update(np.ones(2), np.zeros(2))
    copy = metric.clone()
    copy.update(np.zeros(2), np.zeros(2))
    assert_close(metric.compute(), 1.0)
    assert_close(copy.compute(), 0.5)


class _Bare(Metric):
    def __init__(self, **state):
        super().__init__()
        self.add_state(**state)


@pytest.mark.parametrize("state, message", [
    ({"name": "x", "default": 0, "reduction": "median"},
     "unknown reduction 'median'; valid: 'sum', 'mean', 'cat', 'min', 'max'"),
    ({"name": "x", "default": [1], "reduction": "cat"}, "starts as an empty list"),
    ({"name": "x", "default": 0.0, "reduction": "mean"}, "needs weight= naming a 'sum' state"),
    ({"name": "x", "default": 0, "reduction": "sum", "weight": "n"}, "'mean' states only"),
    ({"name": "_x", "default": 0, "reduction": "sum"}, "not starting with '_'"),
    ({"name": "compute", "default": 0, "reduction": "sum"}, "already has an attribute"),
])
def test_add_state_rejects_bad_declarations(state, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        _Bare(**state)


def test_add_state_before_super_init_is_a_clear_error():
    class Early(Metric):
        def __init__(self):
            self.add_state("x", 0, "sum")

    with pytest.raises(TypeError, match=r"call super\(\).__init__\(\) before add_state"):
        Early()


def test_to_moves_the_state_and_returns_self():
    metric = Accuracy("binary")
    assert metric.to("cpu") is metric and metric.device == dl.Device("cpu")


def test_metrics_run_on_every_backend(device, rng):
    preds, target = rng.random((12, 3)), rng.integers(0, 3, 12)
    on_device = Accuracy("multiclass", num_classes=3, average="macro")
    value = on_device(dl.tensor(preds, device=device), dl.tensor(target, device=device))
    assert value.device == dl.Device(device) and on_device.device == dl.Device(device)
    assert_close(value.to("cpu") if device != "cpu" else value,
                 Accuracy("multiclass", num_classes=3, average="macro")(preds, target).numpy())
    state = on_device.state_dict()
    assert all(isinstance(v, np.ndarray) for v in state.values())
    if device != "cpu":
        with pytest.raises(dl.DeviceError, match="move one of them"):
            on_device.update(preds, target)


# ------------------------------------------------------------- MetricCollection
def test_collection_updates_computes_and_names_with_prefix_and_postfix(rng):
    preds, target = rng.normal(size=(2, 20))
    collection = MetricCollection([MeanSquaredError(), R2Score()], prefix="val_",
                                  postfix="/avg")
    batch = collection(preds, target)
    expected = {"val_MeanSquaredError/avg": np.mean((preds - target) ** 2),
                "val_R2Score/avg": R2Score()(preds, target).numpy()}
    assert_close(batch, expected)
    assert_close(collection.compute(), expected)
    assert list(collection) == ["MeanSquaredError", "R2Score"] and len(collection) == 2
    assert isinstance(collection["R2Score"], R2Score) and "R2Score" in collection


def test_collection_merges_resets_and_round_trips_state(rng):
    data = rng.normal(size=(2, 30))

    def make():
        return MetricCollection({"mse": MeanSquaredError(), "rmse": MeanSquaredError(False)})

    first, second, whole = make(), make(), make()
    first.update(data[0, :10], data[1, :10])
    second.update(data[0, 10:], data[1, 10:])
    whole.update(data[0], data[1])
    expected = to_numpy(whole.compute())
    assert_close(first.merge(second).compute(), expected)
    restored = make()
    restored.load_state_dict(whole.state_dict())
    assert set(whole.state_dict()) == {"mse.total", "mse.count", "rmse.total", "rmse.count"}
    assert_close(restored.compute(), expected)
    whole.reset()
    assert all(np.all(v == 0) for v in whole.state_dict().values())


def test_collection_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"several metrics of class \['MeanSquaredError'\]"):
        MetricCollection([MeanSquaredError(), MeanSquaredError(squared=False)])
    with pytest.raises(TypeError, match="must map a str to a Metric, got int"):
        MetricCollection({"a": 3})
    with pytest.raises(TypeError, match="prefix must be a str"):
        MetricCollection([MeanSquaredError()], prefix=1)
    with pytest.raises(ValueError, match="expected a collection of the metrics"):
        MetricCollection([MeanSquaredError()]).merge(MetricCollection([R2Score()]))
    with pytest.raises(KeyError, match="names no metric"):
        MetricCollection([MeanSquaredError()]).load_state_dict({"R2Score.sse": np.zeros(1)})


# ------------------------------------------------------------------ registration
def test_every_metric_is_registered_by_dlfree_metrics():
    registry = dl.registry.metrics
    for cls in METRICS:
        assert registry.get(cls.__name__) is cls
        assert registry.provider(cls.__name__)["distribution"] == "dlfree-metrics"
    assert {n for n in registry.names()
            if registry.provider(n)["distribution"] == "dlfree-metrics"} == \
        {cls.__name__ for cls in METRICS}
    assert isinstance(registry.create("Accuracy", task="binary"), Accuracy)
