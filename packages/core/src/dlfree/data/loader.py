"""`DataLoader`: batches from a dataset, in sampler order, optionally prefetched by worker
threads, placed on a device, and resumable in the middle of an epoch."""

from __future__ import annotations

import collections.abc
import itertools
import math
import multiprocessing
import numbers
import pickle

from ..device import Device
from ..random import Generator
from ..tensor import Tensor
from .collate import default_collate, default_convert, rebuild_mapping
from .dataset import IterableDataset
from .prefetch import Prefetcher, Workers
from .sampler import BatchSampler, RandomSampler, SequentialSampler, boolean, positive_int

_END = object()


class DataLoader:
    """Iterate over `dataset` in batches, with PyTorch's `torch.utils.data.DataLoader` contract.

    - Map-style datasets are visited in `sampler` order (`shuffle=True`: a RandomSampler
      drawing from `generator`, or, without one, from the global RNG, so `dl.manual_seed`
      fixes the order), grouped by `batch_size` (`drop_last` drops a short last batch) or by
      `batch_sampler`, and turned into batches by `collate_fn` (`default_collate`).
      `batch_size=None` yields single items (converted by `default_convert`).
    - Iterable datasets are read in their own order, `batch_size` items at a time.
    - `num_workers > 0` loads batches on that many background threads, keeping up to
      `prefetch_factor * num_workers` batches in flight, so the next batch is ready while the
      model trains. Batches arrive in order and are exactly those of `num_workers=0`; an
      error in a worker is raised here with the worker's traceback; leaving a loop early
      stops the threads. An iterable dataset is read by one thread (it yields in order), with
      the same number of batches buffered. Threads rather than processes: NumPy releases the
      GIL while copying, the dataset is never pickled, and CuPy works in threads. A dataset
      that draws random numbers per item should seed them from the index, since worker
      threads run items in no fixed order. `worker_init_fn(id)` runs at the start of each
      worker thread of an epoch, where `dlfree.data.get_worker_info()` tells the worker's id
      and count (None outside workers); `timeout` (seconds, 0: no limit) bounds the wait for
      a batch, raising TimeoutError. With `multiprocessing_context` (a start method's name,
      such as "spawn", or a context) the workers of a map-style dataset are processes
      instead, for items whose loading is mostly Python; the dataset, collate_fn and
      worker_init_fn must then pickle, and `device=` placement happens in this process.
      `persistent_workers=True` keeps the workers from one epoch to the next (worker_init_fn
      runs once per worker) until `close()` or the loader is collected: starting processes
      each epoch costs about a second.
    - `device=` places every tensor of a batch on that device (after collation, in the
      worker when there are workers).
    - `pin_memory` is accepted for compatibility and ignored: batches are copied to the
      device by `device=`.
    - `state_dict()` / `load_state_dict()` resume an interrupted epoch (see `state_dict`).
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool = False,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, *,
                 generator: Generator | None = None, prefetch_factor: int = 2,
                 persistent_workers: bool = False, device=None):
        self._workers: Workers | None = None  # the persistent ones, once started
        if not isinstance(shuffle, bool):
            raise ValueError(f"DataLoader: shuffle must be True or False, got {shuffle!r}")
        if not isinstance(num_workers, numbers.Integral) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative integer, got "
                             f"{num_workers!r}")
        if not isinstance(prefetch_factor, numbers.Integral) or prefetch_factor < 1:
            raise ValueError(f"DataLoader: prefetch_factor must be a positive integer, got "
                             f"{prefetch_factor!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or \
                not timeout >= 0:
            raise ValueError(f"DataLoader: timeout must be a number of seconds >= 0 (0: wait "
                             f"as long as it takes), got {timeout!r}")
        if timeout and not num_workers:
            raise ValueError("DataLoader: timeout applies to worker threads; set "
                             "num_workers > 0, or leave timeout at 0")
        if not isinstance(persistent_workers, bool):
            raise ValueError(f"DataLoader: persistent_workers must be True or False, got "
                             f"{persistent_workers!r}")
        if persistent_workers and not num_workers:
            raise ValueError("DataLoader: persistent_workers keeps worker threads or "
                             "processes between epochs; set num_workers > 0 as well")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"DataLoader: worker_init_fn must be callable (it gets the worker's "
                            f"id), got {worker_init_fn!r}")
        iterable = isinstance(dataset, IterableDataset)
        context = _process_context(multiprocessing_context, iterable, num_workers)
        if iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError("DataLoader: an IterableDataset sets its own order; shuffle, "
                             "sampler and batch_sampler are for map-style datasets")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: give either sampler= or shuffle=True, not both "
                             "(the sampler decides the order)")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler decides the batches; leave "
                                 "batch_size, shuffle, sampler and drop_last at their defaults")
            batch_size = None
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: drop_last=True needs a batch_size")
        if not iterable:
            if sampler is None:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else \
                    SequentialSampler(dataset)
            if batch_size is not None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        elif batch_size is not None:
            positive_int("batch_size", batch_size, "DataLoader")
            boolean("drop_last", drop_last, "DataLoader")
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = int(num_workers)
        self.prefetch_factor = int(prefetch_factor)
        self.generator = generator
        self.pin_memory = pin_memory
        self.timeout = float(timeout)
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = context
        self.persistent_workers = persistent_workers
        self.device = Device(device) if device is not None else None
        self._batched = batch_sampler is not None or (iterable and batch_size is not None)
        self.collate_fn = collate_fn or (default_collate if self._batched else default_convert)
        self._iterable = iterable
        if context is not None:
            _check_picklable(self._fetch(), worker_init_fn)
        # Resume bookkeeping (see state_dict): the epoch running, its sampler state and the
        # number of batches it has yielded; or, between epochs, the batches a loaded state
        # says to skip.
        self._epoch_id = 0
        self._in_epoch = False
        self._pass_state = None
        self._yielded = 0
        self._skip = 0

    # ------------------------------------------------------------------ batches
    @property
    def _index_source(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def _fetch(self) -> _Fetch:
        return _Fetch(self.dataset, self.collate_fn, self._batched)

    def _load(self, indices):
        """One batch: fetch the items, collate them, place them."""
        return self._place(self._fetch()(indices))

    def _prefetcher(self, arguments, count: int, job=None) -> Prefetcher:
        """This epoch's prefetcher over `arguments`, on the persistent workers or on `count`
        new ones; the job loads a batch of indices unless given (a stream's reader)."""
        processes = self.multiprocessing_context is not None  # (never for a stream)
        if job is None:
            job = self._fetch() if processes else self._load
        workers = self._workers
        if workers is None:
            workers = Workers(count, job=job if processes else None, dataset=self.dataset,
                              worker_init_fn=self.worker_init_fn,
                              context=self.multiprocessing_context if processes else None)
            if self.persistent_workers:
                self._workers = workers
        return Prefetcher(workers, job, arguments, self.prefetch_factor * self.num_workers,
                          timeout=self.timeout or None,
                          finish=self._place if processes else None,
                          shared=self.persistent_workers)

    def close(self) -> None:
        """Stop the persistent workers now (they also stop when the loader is collected)."""
        workers, self._workers = self._workers, None
        if workers is not None:
            workers.shutdown()

    def __del__(self):
        workers = getattr(self, "_workers", None)
        if workers is not None:
            workers.shutdown(wait=False)

    def _index_batches(self, epoch_id: int, skip: int):
        """The sampler's batches of indices for one epoch, the first `skip` left out. The pass
        starts now, in this thread, so random samplers draw at the same moment with and
        without workers."""
        indices = iter(self._index_source)
        first = next(indices, _END)
        if epoch_id == self._epoch_id:
            self._pass_state = self._sampler_state()  # the pass has begun: its seed is known
        if first is _END:
            return iter(())
        return itertools.islice(itertools.chain([first], indices), skip, None)

    def _iterable_batches(self, skip: int):
        """The batches of an iterable dataset, the first `skip` left out; like the sampler
        pass, the dataset's iterator is made now, in this thread."""
        items = iter(self.dataset)
        size = self.batch_size or 1
        # Skipped batches of an iterable dataset must still be read, but are not collated.
        for _ in itertools.islice(items, skip * size):
            pass
        if not self._batched:
            return (self._place(self.collate_fn(item)) for item in items)
        return self._collated_chunks(items, size)

    def _collated_chunks(self, items, size: int):
        while chunk := list(itertools.islice(items, size)):
            if len(chunk) < size and self.drop_last:
                return
            yield self._place(self.collate_fn(chunk))

    def _place(self, batch):
        return batch if self.device is None else _to_device(batch, self.device)

    def __iter__(self) -> _EpochIterator:
        return _EpochIterator(self)

    def __len__(self) -> int:
        if not self._iterable:
            return len(self._index_source)
        if not hasattr(self.dataset, "__len__"):
            raise TypeError(f"len(DataLoader): the iterable dataset "
                            f"{type(self.dataset).__name__} defines no __len__")
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    # ------------------------------------------------------------------ resume
    def _sampler_state(self):
        get_state = getattr(self._index_source, "state_dict", None)
        return get_state() if get_state is not None else None

    def state_dict(self) -> dict:
        """Where the loader is, as JSON-able data: the sampler's state at the start of the
        current epoch (its shuffling generator's state, or the seed it drew) and the number of
        batches that epoch has yielded; between epochs, the state the next epoch starts from.

        After `load_state_dict(state)`, the next `iter(loader)` produces the same order and
        starts at the next batch; the skipped batches are not loaded (an iterable dataset's
        skipped items are read, but not collated). The global RNG is not part of it: save it
        with `dl.get_rng_state()`."""
        if self._in_epoch:
            sampler = self._pass_state if self._pass_state is not None else \
                self._sampler_state()
            return {"sampler": sampler, "batches_yielded": self._yielded}
        return {"sampler": self._sampler_state(), "batches_yielded": self._skip}

    def load_state_dict(self, state: dict) -> None:
        """Make the next epoch resume where the `state_dict()` it is given was taken."""
        if not isinstance(state, dict) or state.keys() != {"sampler", "batches_yielded"}:
            raise ValueError(f"DataLoader.load_state_dict: expected the dict state_dict() "
                             f"returns (keys 'sampler', 'batches_yielded'), got {state!r}")
        skip = state["batches_yielded"]
        if not isinstance(skip, numbers.Integral) or skip < 0:
            raise ValueError(f"DataLoader.load_state_dict: batches_yielded must be a "
                             f"non-negative integer, got {skip!r}")
        if not self._iterable and skip > _length(self):
            raise ValueError(f"DataLoader.load_state_dict: the state has {skip} batches "
                             f"yielded, but this loader has only {len(self)} per epoch; was "
                             "it saved from a loader over other data?")
        if (state["sampler"] is None) != (self._sampler_state() is None):
            raise ValueError("DataLoader.load_state_dict: the saved loader's sampler and this "
                             "one's differ in whether they keep a random state; build the "
                             "loader with the same shuffle/sampler/generator settings")
        if state["sampler"] is not None:
            self._index_source.load_state_dict(state["sampler"])
        self._in_epoch = False
        self._skip = int(skip)

    def _begin_epoch(self) -> tuple[int, int]:
        self._epoch_id += 1
        skip, self._skip = self._skip, 0
        self._in_epoch, self._pass_state, self._yielded = True, None, skip
        return self._epoch_id, skip

    def _counted(self, epoch_id: int) -> None:
        if epoch_id == self._epoch_id:
            self._yielded += 1

    def _finished(self, epoch_id: int) -> None:
        if epoch_id == self._epoch_id:
            self._in_epoch, self._pass_state, self._yielded = False, None, 0


class _EpochIterator:
    """One pass over a DataLoader; stops its worker threads when exhausted, closed or
    dropped."""

    def __init__(self, loader: DataLoader):
        self._batches = iter(())
        self._loader = loader
        self._epoch_id, skip = loader._begin_epoch()
        if loader._iterable:
            batches = loader._iterable_batches(skip)
            if loader.num_workers:
                # A stream yields in order, so one thread reads it; tasks pull the next batch.
                stream = batches
                batches = loader._prefetcher(itertools.repeat(None), 1,
                                             job=lambda _: next(stream, _END))
        else:
            indices = loader._index_batches(self._epoch_id, skip)
            if loader.num_workers:
                batches = loader._prefetcher(indices, loader.num_workers)
            else:
                batches = map(loader._load, indices)
        self._batches = batches

    def __iter__(self):
        return self

    def __next__(self):
        batch = next(self._batches, _END)
        if batch is _END:
            self.close()
            self._loader._finished(self._epoch_id)
            raise StopIteration
        self._loader._counted(self._epoch_id)
        return batch

    def __len__(self) -> int:
        return len(self._loader)

    def close(self) -> None:
        """Stop the worker threads now (also done when the iterator is exhausted or dropped)."""
        if isinstance(self._batches, Prefetcher):
            self._batches.close()

    def __del__(self):
        self.close()


def _process_context(context, iterable: bool, num_workers: int):
    """The multiprocessing context worker processes start from, or None for threads."""
    if context is None:
        return None
    if iterable:
        raise ValueError("DataLoader: multiprocessing_context is for map-style datasets; an "
                         "iterable dataset is read in order by one worker thread")
    if not num_workers:
        raise ValueError("DataLoader: multiprocessing_context starts worker processes; set "
                         "num_workers > 0 as well")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"DataLoader: multiprocessing_context {context!r} is not a start "
                             f"method here; valid: {', '.join(methods)}")
        return multiprocessing.get_context(context)
    if not hasattr(context, "Process") or not hasattr(context, "Queue"):
        raise TypeError(f"DataLoader: multiprocessing_context must be a start method's name "
                        f"or a multiprocessing context, got {context!r}")
    return context


def _check_picklable(fetch: _Fetch, worker_init_fn) -> None:
    """Worker processes get the dataset, collate_fn and worker_init_fn by pickle: say so at
    once rather than from a broken pool."""
    try:
        pickle.dumps((fetch, worker_init_fn))
    except Exception as e:
        raise ValueError(f"DataLoader: with multiprocessing_context, the dataset, collate_fn "
                         f"and worker_init_fn go to the worker processes and must pickle: "
                         f"{type(e).__name__}: {e}") from None


class _Fetch:
    """Loads one batch without placing it: the items of `indices` from `dataset`, collated.
    Picklable when the dataset and collate_fn are, so worker processes get a copy."""

    def __init__(self, dataset, collate_fn, batched: bool):
        self.dataset, self.collate_fn, self.batched = dataset, collate_fn, batched

    def __call__(self, indices):
        if self.batched:
            return self.collate_fn([self.dataset[i] for i in indices])
        return self.collate_fn(self.dataset[indices])


def _length(loader: DataLoader) -> float:
    """Batches per epoch; infinite for a sampler without a length."""
    try:
        return len(loader)
    except TypeError:
        return math.inf


def _to_device(batch, device: Device):
    """`batch` with every tensor inside it moved to `device`."""
    if isinstance(batch, Tensor):
        return batch.to(device)
    if isinstance(batch, collections.abc.Mapping):
        return rebuild_mapping(batch, {k: _to_device(v, device) for k, v in batch.items()})
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_to_device(v, device) for v in batch))
    if isinstance(batch, tuple | list):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch
