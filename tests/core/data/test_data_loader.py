"""DataLoader: batches against torch's DataLoader, identical batches with and without worker
threads, reproducible shuffling, prefetching that overlaps the consumer, worker errors,
clean shutdown, device placement and argument checks."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import traceback

import dlfree as dl
from dlfree.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
)
from dlfree.data.prefetch import THREAD_PREFIX

import numpy as np
import pytest
import torch
import torch.utils.data as tud


def worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


@pytest.fixture(autouse=True)
def no_threads_left_behind():
    yield
    assert worker_threads() == []


class Records(Dataset):
    """Items {'x': a float32 row, 'y': an int}; optionally slow, logging each fetch."""

    def __init__(self, n: int = 23, delay: float = 0.0, events: list | None = None):
        self.x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        self.delay, self.events = delay, events

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.events is not None:
            self.events.append(("fetch", i))
        if self.delay:
            time.sleep(self.delay)
        return {"x": self.x[i], "y": i}


class Unsized(IterableDataset):
    def __init__(self, n: int = 23):
        self.n = n

    def __iter__(self):
        return ((np.full(2, i, dtype=np.int64), i * 0.5) for i in range(self.n))


class Stream(Unsized):
    def __len__(self):
        return self.n


class TorchStream(Stream, tud.IterableDataset):
    """The same stream, marked iterable for torch's DataLoader."""


def as_lists(loader) -> list:
    """A loader's batches as plain nested lists, for comparison."""
    def plain(value):
        if isinstance(value, dl.Tensor | torch.Tensor):
            return value.tolist()
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value
    return [plain(batch) for batch in loader]


@pytest.mark.parametrize("batch_size, drop_last", [(1, False), (4, False), (4, True), (23, True),
                                                    (30, False), (30, True)])
def test_in_order_batches_match_torch(batch_size, drop_last):
    data = Records()
    ours = DataLoader(data, batch_size=batch_size, drop_last=drop_last)
    theirs = tud.DataLoader(data, batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert as_lists(ours) == as_lists(theirs)


@pytest.mark.parametrize("batch_size, drop_last", [(5, False), (5, True), (None, False)])
def test_iterable_batches_match_torch(batch_size, drop_last):
    ours = DataLoader(Stream(), batch_size=batch_size, drop_last=drop_last)
    theirs = tud.DataLoader(TorchStream(), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert as_lists(ours) == as_lists(theirs)


def test_unbatched_loading_converts_single_items():
    ours = DataLoader(Records(5), batch_size=None)
    theirs = tud.DataLoader(Records(5), batch_size=None)
    assert len(ours) == 5 and as_lists(ours) == as_lists(theirs)
    assert isinstance(next(iter(ours))["x"], dl.Tensor)


def _loader(kind: str, workers: int, **kw):
    if kind == "shuffled":
        return DataLoader(Records(), batch_size=4, shuffle=True, num_workers=workers,
                          generator=dl.Generator().manual_seed(9), **kw)
    if kind == "in order, drop_last":
        return DataLoader(Records(), batch_size=4, drop_last=True, num_workers=workers, **kw)
    if kind == "batch_sampler":
        sampler = BatchSampler(SequentialSampler(range(23)), 6, False)
        return DataLoader(Records(), batch_sampler=sampler, num_workers=workers, **kw)
    if kind == "unbatched":
        return DataLoader(Records(7), batch_size=None, num_workers=workers, **kw)
    if kind == "iterable":
        return DataLoader(Stream(), batch_size=4, num_workers=workers, **kw)
    raise AssertionError(kind)


KINDS = ["shuffled", "in order, drop_last", "batch_sampler", "unbatched", "iterable"]


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_workers_yield_exactly_the_batches_of_no_workers(kind, workers):
    expected = as_lists(_loader(kind, 0))
    assert as_lists(_loader(kind, workers)) == expected
    assert as_lists(_loader(kind, workers, prefetch_factor=1)) == expected


def test_shuffling_is_reproducible():
    def order(**kw):
        return [b["y"].tolist() for b in DataLoader(Records(), batch_size=5, shuffle=True, **kw)]

    seeded = order(generator=dl.Generator().manual_seed(1))
    assert sorted(sum(seeded, [])) == list(range(23))
    assert seeded == order(generator=dl.Generator().manual_seed(1))
    assert seeded != order(generator=dl.Generator().manual_seed(2))
    dl.manual_seed(4)
    first = order()
    dl.manual_seed(4)
    assert order() == first
    loader = DataLoader(Records(), batch_size=5, shuffle=True,
                        generator=dl.Generator().manual_seed(1))
    assert as_lists(loader) != as_lists(loader)  # each epoch reshuffles


def test_the_global_rng_is_drawn_at_the_same_moment_with_and_without_workers():
    def run(workers):
        dl.manual_seed(6)
        iterator = iter(DataLoader(Records(), batch_size=5, shuffle=True, num_workers=workers))
        between = dl.rand(2).tolist()  # e.g. a model initialised after iter(loader)
        return between, as_lists(iterator)

    assert run(0) == run(2)


class Failing(Records):
    def __getitem__(self, i):
        if i == 9:
            raise KeyError(f"record {i} is damaged")
        return super().__getitem__(i)


@pytest.mark.parametrize("workers", [0, 2])
def test_an_error_while_loading_is_raised_with_the_original_traceback(workers):
    loader = DataLoader(Failing(), batch_size=4, num_workers=workers)
    seen = []
    with pytest.raises(KeyError, match="record 9 is damaged") as info:
        for batch in loader:
            seen.append(batch["y"].tolist())
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7]]
    frames = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1] == "__getitem__"  # the line in the dataset that raised
    if workers:
        assert "DataLoader worker thread" in "".join(info.value.__notes__)


@pytest.mark.parametrize("kind", ["shuffled", "iterable"])
def test_leaving_a_loop_early_stops_the_worker_threads(kind):
    loader = _loader(kind, 3)
    for k, _ in enumerate(loader):
        assert worker_threads()  # the workers are running now
        if k == 1:
            break
    assert worker_threads() == []
    iterator = iter(_loader(kind, 2))
    next(iterator)
    del iterator  # dropping an iterator also stops them
    assert worker_threads() == []


def test_closing_waits_for_a_slow_batch_and_leaves_no_thread():
    loader = DataLoader(Records(40, delay=0.02), batch_size=2, num_workers=2)
    iterator = iter(loader)
    next(iterator)
    iterator.close()
    assert worker_threads() == []
    with pytest.raises(StopIteration):
        next(iterator)


class Recorder:
    """A thread-safe event log with a clock of its own (the order of appends)."""

    def __init__(self):
        self.events, self._lock = [], threading.Lock()

    def append(self, event):
        with self._lock:
            self.events.append(event)

    def position(self, event) -> int:
        return self.events.index(event)


@pytest.mark.parametrize("workers", [1, 3])
def test_the_next_batches_load_while_the_consumer_works(workers):
    log = Recorder()
    loader = DataLoader(Records(16, delay=0.002, events=log), batch_size=2,
                        num_workers=workers)
    iterator = iter(loader)
    next(iterator)
    time.sleep(0.1)  # the training step on batch 0
    log.append(("consume end", 0))
    iterator.close()
    # The next `workers` batches (items 2 .. 2 * workers + 1) were requested before the
    # consumer finished batch 0.
    first_done = log.position(("consume end", 0))
    assert all(log.position(("fetch", i)) < first_done for i in range(2, 2 * workers + 2))


def test_prefetching_stays_within_prefetch_factor_times_workers():
    log = Recorder()
    workers, factor, batch_size = 2, 2, 2
    loader = DataLoader(Records(40, events=log), batch_size=batch_size, num_workers=workers,
                        prefetch_factor=factor)
    for k, _ in enumerate(loader):
        time.sleep(0.002)
        fetched = sum(event[0] == "fetch" for event in log.events)
        # in flight: the batch in hand plus at most factor * workers more
        assert fetched <= batch_size * (k + 1 + factor * workers)


def test_batches_are_placed_on_the_device(fake_device):
    for workers in (0, 2):
        loader = DataLoader(Records(6), batch_size=4, num_workers=workers, device=fake_device)
        batches = list(loader)
        assert all(b["x"].device == fake_device and b["y"].device == fake_device
                   for b in batches)
        assert as_lists(batches) == as_lists(DataLoader(Records(6), batch_size=4))
    assert DataLoader(Records(6), device="cpu").device == dl.Device("cpu")
    with pytest.raises(dl.DeviceError, match="unknown device type 'nowhere'"):
        DataLoader(Records(6), device="nowhere")


def test_custom_collate_fn_and_tensor_dataset():
    data = TensorDataset(dl.arange(10), dl.arange(10) * 2.0)
    loader = DataLoader(data, batch_size=3, collate_fn=lambda items: len(items))
    assert list(loader) == [3, 3, 3, 1]
    xs, ys = next(iter(DataLoader(data, batch_size=4)))
    assert xs.tolist() == [0, 1, 2, 3] and ys.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_len_of_an_iterable_without_len_is_a_clear_type_error():
    loader = DataLoader(Unsized(5), batch_size=2)
    assert len(list(loader)) == 3
    with pytest.raises(TypeError, match="iterable dataset Unsized defines no __len__"):
        len(loader)


@pytest.mark.parametrize("kwargs, message", [
    ({"shuffle": True, "sampler": range(3)}, "either sampler= or shuffle=True"),
    ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler decides the batches"),
    ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler decides the batches"),
    ({"batch_size": None, "drop_last": True}, "drop_last=True needs a batch_size"),
    ({"num_workers": -1}, "num_workers must be a non-negative integer"),
    ({"prefetch_factor": 0}, "prefetch_factor must be a positive integer"),
    ({"batch_size": 0}, "batch_size must be a positive integer"),
    ({"shuffle": 1}, "shuffle must be True or False"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(Records(3), **kwargs)


def test_iterable_datasets_refuse_shuffling_and_samplers():
    for kwargs in ({"shuffle": True}, {"sampler": range(3)}):
        with pytest.raises(ValueError, match="an IterableDataset sets its own order"):
            DataLoader(Stream(), **kwargs)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        DataLoader(Stream(), batch_size=-2)


class Identified(Dataset):
    """Items that say which worker loaded them (None outside a worker)."""

    def __len__(self):
        return 40

    def __getitem__(self, i):
        info = dl.data.get_worker_info()
        time.sleep(0.002)  # long enough for every worker to take some items
        return i, -1 if info is None else info.id, 0 if info is None else info.num_workers


def test_worker_init_fn_and_worker_info_per_worker_thread():
    started, lock = [], threading.Lock()

    def init(worker_id):
        info = dl.data.get_worker_info()
        with lock:
            started.append((worker_id, info.id, info.num_workers, threading.current_thread().name))

    dataset = Identified()
    loader = DataLoader(dataset, batch_size=4, num_workers=3, worker_init_fn=init)
    seen = [tuple(int(v) for v in row) for batch in loader for row in zip(*batch)]
    assert [s[0] for s in seen] == list(range(40))  # in order, as without workers
    assert {s[1] for s in seen} == {0, 1, 2} and {s[2] for s in seen} == {3}
    assert sorted(s[:3] for s in started) == [(0, 0, 3), (1, 1, 3), (2, 2, 3)]
    assert all(s[3].startswith(THREAD_PREFIX) for s in started)
    assert dl.data.get_worker_info() is None  # the main thread is no worker
    serial = [tuple(int(v) for v in row) for batch in DataLoader(dataset, batch_size=4)
              for row in zip(*batch)]
    assert {s[1:] for s in serial} == {(-1, 0)}


class Sharded(IterableDataset):
    """Shards by worker, as torch code does: with one reader thread it reads everything."""

    def __iter__(self):
        info = dl.data.get_worker_info()
        shard, shards = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(shard, 12, shards))


def test_a_stream_that_shards_by_worker_is_read_whole():
    loader = DataLoader(Sharded(), batch_size=5, num_workers=4)
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]


def test_timeout_bounds_the_wait_for_a_batch():
    loader = DataLoader(Records(8, delay=0.3), batch_size=4, num_workers=1, timeout=0.05)
    with pytest.raises(TimeoutError, match=r"batch 0 of this epoch was not loaded within "
                                           r"timeout=0\.05 s"):
        next(iter(loader))
    for thread in worker_threads():  # the stuck load ends on its own
        thread.join(timeout=10)
    fast = DataLoader(Records(8), batch_size=4, num_workers=2, timeout=5)
    assert [b["y"].tolist() for b in fast] == [[0, 1, 2, 3], [4, 5, 6, 7]]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"timeout": -1, "num_workers": 1}, ValueError, "timeout must be a number of seconds >= 0"),
    ({"timeout": float("nan"), "num_workers": 1}, ValueError, "timeout must be a number"),
    ({"timeout": True, "num_workers": 1}, ValueError, "timeout must be a number"),
    ({"timeout": 2}, ValueError, "timeout applies to worker threads; set num_workers > 0"),
    ({"worker_init_fn": 3}, TypeError, "worker_init_fn must be callable"),
])
def test_timeout_and_worker_init_fn_arguments_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        DataLoader(Records(), **kwargs)


# ----------------------------------------------------------------- worker processes
class WhereLoaded(Dataset):
    """Items (index, pid, worker id) with the seed worker_init_fn set in the worker."""

    def __len__(self):
        return 24

    def __getitem__(self, i):
        if i == 13 and os.environ.get("DLFREE_TEST_BREAK_ITEM") == "13":
            raise KeyError("record 13 is damaged")
        info = dl.data.get_worker_info()
        return {"i": i, "pid": os.getpid(), "worker": -1 if info is None else info.id,
                "seeded": SEEDED.get("id", -1)}


SEEDED: dict = {}


def remember_worker(worker_id):
    SEEDED["id"] = worker_id


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_worker_processes_load_the_same_batches(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    loader = DataLoader(WhereLoaded(), batch_size=5, num_workers=2, worker_init_fn=remember_worker,
                        multiprocessing_context=method, device="cpu")
    batches = list(loader)
    assert [b["i"].tolist() for b in batches] == [b["i"].tolist() for b in
                                                  DataLoader(WhereLoaded(), batch_size=5)]
    pids = {p for b in batches for p in b["pid"].tolist()}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    workers = [w for b in batches for w in b["worker"].tolist()]
    assert set(workers) <= {0, 1} and workers == [s for b in batches for s in b["seeded"].tolist()]
    assert SEEDED == {}  # worker_init_fn ran in the workers, not here


def test_an_error_in_a_worker_process_is_raised_here(monkeypatch):
    monkeypatch.setenv("DLFREE_TEST_BREAK_ITEM", "13")
    loader = DataLoader(WhereLoaded(), batch_size=5, num_workers=2, multiprocessing_context="spawn")
    with pytest.raises(KeyError, match="record 13 is damaged") as raised:
        list(loader)
    assert "DataLoader worker process, loading batch 2" in "".join(raised.value.__notes__)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"multiprocessing_context": "teleport", "num_workers": 1}, ValueError,
     "'teleport' is not a start method here; valid: "),
    ({"multiprocessing_context": 3, "num_workers": 1}, TypeError,
     "a start method's name or a multiprocessing context"),
    ({"multiprocessing_context": "spawn"}, ValueError, "set num_workers > 0 as well"),
    ({"multiprocessing_context": "spawn", "num_workers": 1, "collate_fn": lambda b: b},
     ValueError, "collate_fn and worker_init_fn go to the worker processes and must pickle"),
])
def test_worker_process_arguments_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        DataLoader(WhereLoaded(), **kwargs)
    with pytest.raises(ValueError, match="multiprocessing_context is for map-style datasets"):
        DataLoader(Unsized(), num_workers=1, multiprocessing_context="spawn")


def test_persistent_worker_threads_serve_every_epoch_until_closed():
    starts = []
    loader = DataLoader(Identified(), batch_size=4, num_workers=2, persistent_workers=True,
                        worker_init_fn=starts.append)
    first = [tuple(int(v) for v in row) for batch in loader for row in zip(*batch)]
    threads_then = {t.ident for t in worker_threads()}
    epoch = iter(loader)
    next(epoch)
    epoch.close()  # leaving an epoch early cancels its queued loads and keeps the workers
    second = [tuple(int(v) for v in row) for batch in loader for row in zip(*batch)]
    assert [s[0] for s in first] == [s[0] for s in second] == list(range(40))
    assert {t.ident for t in worker_threads()} == threads_then and len(threads_then) == 2
    assert sorted(starts) == [0, 1]  # worker_init_fn once per worker, not per epoch
    loader.close()
    assert worker_threads() == []


def test_persistent_worker_processes_keep_their_pids():
    loader = DataLoader(WhereLoaded(), batch_size=6, num_workers=2, persistent_workers=True,
                        multiprocessing_context="spawn")
    try:
        epochs = [[b["pid"].tolist() for b in loader] for _ in range(2)]
        assert {p for e in epochs[1] for p in e} <= {p for e in epochs[0] for p in e}
        assert [b["i"].tolist() for b in loader] == [list(range(i, i + 6))
                                                    for i in range(0, 24, 6)]
    finally:
        loader.close()


def test_persistent_workers_need_workers():
    with pytest.raises(ValueError, match="persistent_workers keeps worker threads or processes"):
        DataLoader(Records(), persistent_workers=True)
    with pytest.raises(ValueError, match="persistent_workers must be True or False"):
        DataLoader(Records(), num_workers=1, persistent_workers="yes")


def test_a_stream_with_persistent_workers_reads_each_epoch_afresh():
    loader = DataLoader(Sharded(), batch_size=5, num_workers=2, persistent_workers=True)
    try:
        for _ in range(2):
            assert [b.tolist() for b in loader] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
    finally:
        loader.close()


def refuse_to_start(worker_id):
    raise OSError(f"worker {worker_id} found no GPU to seed")


@pytest.mark.parametrize("context", [None, "spawn"], ids=["threads", "processes"])
def test_an_error_in_worker_init_fn_is_raised_here_as_itself(context):
    loader = DataLoader(WhereLoaded(), batch_size=4, num_workers=2,
                        worker_init_fn=refuse_to_start, multiprocessing_context=context)
    with pytest.raises(OSError, match=r"worker \d found no GPU to seed"):
        list(loader)
