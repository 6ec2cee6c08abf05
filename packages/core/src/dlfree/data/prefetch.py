"""Background prefetching for the DataLoader: batches load on worker threads (or, asked
for, worker processes) while the model trains, and come back in order.

Why threads by default: NumPy (and CuPy) release the GIL while they copy and compute, so
loading overlaps training; the dataset is shared, never pickled into worker processes; and
GPU arrays can be made in any thread, while CUDA does not survive a fork. Processes suit
items whose loading is mostly Python (decoding, augmentation), which threads would run one
at a time.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import NamedTuple

THREAD_PREFIX = "dlfree-data"


class WorkerInfo(NamedTuple):
    """What `get_worker_info()` tells code running in a DataLoader worker."""

    id: int  # 0 .. num_workers - 1
    num_workers: int  # the workers loading this epoch's batches (1 for an iterable dataset)
    dataset: object  # in a worker process, its own copy


_CURRENT = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker, its WorkerInfo; None elsewhere (the main thread, or
    `num_workers=0`), as torch.utils.data.get_worker_info. An iterable dataset is read by a
    single thread, so code that shards a stream by worker reads all of it."""
    return getattr(_CURRENT, "info", None)


def _start_worker(worker_id: int, workers: int, dataset, worker_init_fn) -> None:
    _CURRENT.info = WorkerInfo(worker_id, workers, dataset)
    if worker_init_fn is not None:
        worker_init_fn(worker_id)


# in a worker process: the callable its tasks apply to their arguments, and what its first
# task starts the worker with (so that an error in worker_init_fn reaches the loader)
_JOB = None
_START = None


def _start_process(ids, workers: int, job, dataset, worker_init_fn) -> None:
    global _JOB, _START
    _JOB, _START = job, (ids, workers, dataset, worker_init_fn)


def _run_job(argument):
    global _START
    if _START is not None:
        ids, workers, dataset, worker_init_fn = _START
        _START = None
        _start_worker(ids.get(), workers, dataset, worker_init_fn)
    return _JOB(argument)


class Workers:
    """The DataLoader's workers: `count` threads, or processes of a multiprocessing `context`
    each holding a copy of `job` (which must pickle). Each worker, before its first task,
    gets its WorkerInfo (`get_worker_info`) for `dataset` and calls `worker_init_fn(id)`
    when given; an error there is that task's error. One epoch's Prefetcher uses them, or
    every epoch's (persistent workers)."""

    def __init__(self, count: int, *, job: Callable | None = None, dataset=None,
                 worker_init_fn: Callable[[int], object] | None = None, context=None):
        self.kind = "thread" if context is None else "process"
        self._start = (count, dataset, worker_init_fn)
        self._ids = itertools.count()  # next() on a count is atomic under the GIL
        if context is None:
            self._executor: ThreadPoolExecutor | ProcessPoolExecutor = ThreadPoolExecutor(
                count, thread_name_prefix=THREAD_PREFIX)
        else:
            ids = context.Queue()
            for worker_id in range(count):
                ids.put(worker_id)
            self._executor = ProcessPoolExecutor(
                count, mp_context=context, initializer=_start_process,
                initargs=(ids, count, job, dataset, worker_init_fn))

    def submit(self, job: Callable, argument) -> concurrent.futures.Future:
        """job(argument) on a worker thread; on a worker process, the process's own job."""
        if self.kind == "process":
            return self._executor.submit(_run_job, argument)
        return self._executor.submit(self._run_in_thread, job, argument)

    def _run_in_thread(self, job: Callable, argument):
        if getattr(_CURRENT, "workers", None) is not self:  # this thread's first task here
            _CURRENT.workers = self
            count, dataset, worker_init_fn = self._start
            _start_worker(next(self._ids), count, dataset, worker_init_fn)
        return job(argument)

    def shutdown(self, wait: bool = True) -> None:
        """Cancel what has not started and end the workers (after what runs, if `wait`)."""
        self._executor.shutdown(wait=wait, cancel_futures=True)


class Prefetcher:
    """Runs `job` on each of `arguments` on `workers` (a Workers), at most `depth` ahead of
    the consumer, and yields the results in the order of the arguments, each passed through
    `finish` (in the consumer's thread) when given.

    A task's exception is raised in the consumer's thread with the worker's traceback; a
    result not ready within `timeout` seconds (when given) raises TimeoutError and stops
    waiting for the workers (a thread cannot be stopped: a stuck one ends when its task
    does). `close()` (also run when the results run out or on an error) cancels what has not
    started and waits for what has; it shuts the workers down too unless they are `shared`
    with later epochs.
    """

    def __init__(self, workers: Workers, job: Callable, arguments: Iterator, depth: int, *,
                 timeout: float | None = None, finish: Callable | None = None,
                 shared: bool = False):
        self._pool: Workers | None = workers
        self._job = job
        self._arguments = arguments
        self._depth = depth
        self._timeout = timeout
        self._finish = finish
        self._shared = shared
        self._kind = workers.kind
        self._pending: collections.deque = collections.deque()
        self._submitted = 0
        self._fill()

    def _fill(self) -> None:
        try:
            for argument in itertools.islice(self._arguments, self._depth - len(self._pending)):
                self._pending.append((self._submitted, self._pool.submit(self._job, argument)))
                self._submitted += 1
        except BaseException:
            self.close()
            raise

    def __iter__(self):
        return self

    def __next__(self):
        if not self._pending:
            self.close()
            raise StopIteration
        number, future = self._pending.popleft()
        try:
            result = future.result(self._timeout)
        except concurrent.futures.TimeoutError:
            self.close(wait=False)  # a thread cannot be stopped: it ends with its task
            raise TimeoutError(f"DataLoader: batch {number} of this epoch was not loaded "
                               f"within timeout={self._timeout} s") from None
        except BaseException as e:
            self.close()
            if hasattr(e, "add_note"):
                e.add_note(f"(raised in a DataLoader worker {self._kind}, loading batch "
                           f"{number} of this epoch)")
            raise
        self._fill()
        return result if self._finish is None else self._finish(result)

    def close(self, wait: bool = True) -> None:
        """Cancel queued tasks, wait for running ones (unless not `wait`), and end the
        workers unless they are shared."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        futures = [future for _, future in self._pending]
        self._pending.clear()
        if not self._shared:
            pool.shutdown(wait=wait)
            return
        for future in futures:
            future.cancel()
        if wait:
            concurrent.futures.wait(futures)

    def __del__(self):
        self.close()
