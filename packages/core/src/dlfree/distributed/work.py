"""Work handles: what a collective started with `async_op=True` returns.

`wait()` blocks until the collective is done (then its tensors hold the result);
`is_completed()` asks without blocking. Finishing steps that follow the engine's own
(dividing a SUM into an AVG, copying a staging buffer back into a tensor) run once, at
completion, in the order they were added.
"""

from __future__ import annotations

import os
import time

from ..errors import DistributedError

# How a wait polls: a few tight polls first (~1 us each: a collective between ranks that
# both run usually completes within them), then polls that yield the CPU to any other
# runnable process, and after _YIELD_S polls between short sleeps. A rank that waits long
# (for a slower peer, for rank 0's evaluation) then leaves its core to the ranks that
# compute, which matters when ranks share cores (MPI's own waits spin: they would not).
_BUSY_SPINS = 50
_YIELD_S = 0.001


class Work:
    """The handle of one started collective."""

    def __init__(self, what: str, timeout: float | None):
        self._what = what
        self._timeout = timeout
        self._finishers: list = []
        self._completed = False

    def _poll(self) -> bool:
        """True once the engine has finished its part (subclasses)."""
        raise NotImplementedError

    def then(self, finish) -> Work:
        """Run `finish()` once the engine's part is done (before `wait` returns)."""
        self._finishers.append(finish)
        return self

    def _complete(self) -> None:
        self._completed = True
        for finish in self._finishers:
            finish()
        self._finishers = []

    def is_completed(self) -> bool:
        """Whether the collective has finished; never blocks."""
        if not self._completed and self._poll():
            self._complete()
        return self._completed

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the collective has finished; a DistributedError after `timeout`
        seconds (default: the process group's) instead of waiting forever."""
        if self._completed:
            return True
        limit = self._timeout if timeout is None else timeout
        spins = 0
        started = None
        while not self._poll():
            spins += 1
            if spins < _BUSY_SPINS:
                continue
            now = time.monotonic()
            if started is None:
                started = now
            waited = now - started
            if limit is not None and waited > limit:
                raise DistributedError(
                    f"{self._what} did not complete within {limit:g} s: another rank may have "
                    "failed, stopped early or called a different collective")
            if waited < _YIELD_S:
                os.sched_yield()
            else:
                time.sleep(0)
        self._complete()
        return True


class MPIWork(Work):
    """MPI requests (from Iallreduce, Ibcast, Isend, ...) that complete together. `keep`
    holds the arrays they read and write until then: MPI works on their memory, and a
    temporary passed to a collective (`all_reduce(t * 2, async_op=True)`) must not be
    freed while it does."""

    def __init__(self, requests: list, what: str, timeout: float | None, mpi,
                 keep: tuple = ()):
        super().__init__(what, timeout)
        self._requests = requests
        self._testall = mpi.Request.Testall
        self._keep = keep

    def _poll(self) -> bool:
        if self._testall(self._requests):
            self._keep = ()
            return True
        return False


class DoneWork(Work):
    """A collective that finished when it was called (nothing left to wait for)."""

    def __init__(self, what: str):
        super().__init__(what, None)

    def _poll(self) -> bool:
        return True


class StreamWork(Work):
    """NCCL calls queued on their own CUDA stream, done when the event recorded after them
    is. `wait()` makes the caller's current stream wait for that event (the host does not
    block, as torch's NCCL work does), so later kernels see the result."""

    def __init__(self, event, what: str, timeout: float | None, current_stream, keep: tuple):
        super().__init__(what, timeout)
        self._event = event
        self._current_stream = current_stream
        self._keep = keep  # the arrays the queued calls use must outlive them

    def _poll(self) -> bool:
        return self._event.done

    def wait(self, timeout: float | None = None) -> bool:
        if not self._completed:
            self._current_stream().wait_event(self._event)
            self._complete()
        return True


class AllOf(Work):
    """Several Works that complete together (a send's header and its payload)."""

    def __init__(self, parts: list, what: str, timeout: float | None):
        super().__init__(what, timeout)
        self._parts = parts

    def _poll(self) -> bool:
        return all([part.is_completed() for part in self._parts])
