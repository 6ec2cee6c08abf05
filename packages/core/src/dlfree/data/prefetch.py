"""Background prefetching for the DataLoader: batches load on worker threads while the
model trains, and come back in order.

Why threads, not processes: NumPy (and CuPy) release the GIL while they copy and compute,
so loading overlaps training; the dataset is shared, never pickled into worker processes;
and GPU arrays can be made in any thread, while CUDA does not survive a fork.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

THREAD_PREFIX = "dlfree-data"


class Prefetcher:
    """Runs `tasks` (callables) on `workers` threads, at most `depth` ahead of the consumer,
    and yields their results in the order of the tasks.

    A task's exception is raised in the consumer's thread with the worker's traceback;
    `close()` (also run when the results run out or on an error) cancels what has not
    started, waits for what has, and ends the threads.
    """

    def __init__(self, tasks: Iterator[Callable[[], object]], workers: int, depth: int):
        self._pool: ThreadPoolExecutor | None = None
        self._tasks = tasks
        self._depth = depth
        self._pending: collections.deque = collections.deque()
        self._submitted = 0
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=THREAD_PREFIX)
        self._fill()

    def _fill(self) -> None:
        try:
            for task in itertools.islice(self._tasks, self._depth - len(self._pending)):
                self._pending.append((self._submitted, self._pool.submit(task)))
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
            result = future.result()
        except BaseException as e:
            self.close()
            if hasattr(e, "add_note"):
                e.add_note(f"(raised in a DataLoader worker thread, in task {number} of "
                           "this epoch)")
            raise
        self._fill()
        return result

    def close(self) -> None:
        """Stop the workers: cancel queued tasks, wait for running ones, join the threads."""
        pool, self._pool = self._pool, None
        if pool is not None:
            self._pending.clear()
            pool.shutdown(wait=True, cancel_futures=True)

    def __del__(self):
        self.close()
