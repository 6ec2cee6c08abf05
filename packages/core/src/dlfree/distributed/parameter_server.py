"""`ParameterServer`: server ranks own shards of the parameters and their optimizer;
worker ranks compute gradients on their own batches, push them and pull parameters.

Everything travels as MPI point-to-point messages on a communicator of the server's own:
a worker sends each server its shard's gradient (one flat buffer) and asks for the
shard's current values; the server applies gradients with its optimizer and answers a
request once the staleness bound allows. The shards are cut by parameter size so that
the servers hold (and update) about as many numbers each.

Staleness: a worker's clock counts its pushes. With `max_staleness=s > 0` (stale-
synchronous parallel) every gradient is applied as it arrives, and a worker at clock c
gets parameters only once the slowest worker still running has reached c - s. With
`max_staleness=0` the servers wait for every worker's gradient of a round, apply their
mean in one step and then answer: synchronous SGD, and with one worker plain training.
"""

from __future__ import annotations

import numbers
import os
import time

import numpy as np

from ..autograd import no_grad
from ..errors import DistributedError
from ..tensor import Tensor
from . import coalesce
from .group import member_group
from .work import MPIWork

_GRAD, _PULL, _CLOSE, _PARAMS = 1, 2, 3, 4


def shard_by_size(sizes: list[int], servers: int) -> list[list[int]]:
    """Indices of the parameters each server owns: the largest parameter goes first to the
    server holding the fewest numbers so far (ties to the lower server); each shard keeps
    the parameters' order."""
    loads = [0] * servers
    shards: list[list[int]] = [[] for _ in range(servers)]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        s = min(range(servers), key=lambda s: (loads[s], s))
        shards[s].append(i)
        loads[s] += sizes[i]
    return [sorted(shard) for shard in shards]


class ParameterServer:
    """Train `model` with the first `servers` ranks of `group` as parameter servers and the
    others as workers.

    `optimizer` makes a server's optimizer from the parameters of its shard (any dl.free
    optimizer: `lambda params: dl.optim.SGD(params, lr=0.1)`). Every rank builds the same
    model; at construction all take rank 0's values. Then:

        ps = ParameterServer(model, optimizer, servers=1, max_staleness=2)
        if ps.is_server:
            ps.serve()                  # until every worker has closed
        else:
            for x, y in my_batches:
                model.zero_grad(); loss_fn(model(x), y).backward()
                ps.step()               # push the gradients, pull fresh parameters
            ps.close()

    When `serve()` and `close()` return, every rank holds the final parameters.
    """

    def __init__(self, model, optimizer, servers: int = 1, max_staleness: int = 0,
                 group=None):
        pg = member_group(group, "ParameterServer")
        if not isinstance(servers, numbers.Integral) or not 1 <= servers < pg.size:
            raise ValueError(f"ParameterServer: servers must be an integer in [1, "
                             f"{pg.size - 1}] (at least one rank must be a worker; the group "
                             f"has {pg.size}), got {servers!r}")
        if not isinstance(max_staleness, numbers.Integral) or max_staleness < 0:
            raise ValueError(f"ParameterServer: max_staleness must be an integer >= 0, got "
                             f"{max_staleness!r}")
        self.params = [p for p in model.parameters() if p.requires_grad]
        dtypes = sorted({str(p.dtype) for p in self.params})
        if len(dtypes) != 1:
            raise ValueError(f"ParameterServer: the parameters must share one dtype, got "
                             f"{', '.join(dtypes) or 'no parameters'}; cast the model first")
        self.dtype = self.params[0]._data.dtype
        self.max_staleness = int(max_staleness)
        self.timeout = pg.timeout
        self.servers = list(range(servers))
        self.workers = list(range(servers, pg.size))
        self.rank = pg.rank
        coalesce.check_same_layout(list(model.named_parameters()), "ParameterServer", group)
        with no_grad():
            coalesce.broadcast_tensors(self.params, pg.ranks[0], group)
        self.shards = shard_by_size([p.numel() for p in self.params], servers)
        self.comm = pg.mpi.comm.Dup()
        self.mpi = pg.mpi.mpi
        self.clock = 0
        self.max_staleness_seen = 0
        self.optimizer = None
        if self.is_server:
            mine = [self.params[i] for i in self.shards[self.rank]]
            self.optimizer = optimizer(mine) if mine else None

    @property
    def is_server(self) -> bool:
        return self.rank in self.servers

    @property
    def is_worker(self) -> bool:
        return not self.is_server

    # ---------------------------------------------------------------- helpers
    def _flat(self, server: int, grads: bool) -> np.ndarray:
        """One server's shard (its gradients, zero where none) as one flat host array."""
        parts = []
        for i in self.shards[server]:
            p = self.params[i]
            t = p.grad if grads else p
            if t is None:
                parts.append(np.zeros(p.numel(), dtype=self.dtype))
            else:
                parts.append(p._device.backend.to_numpy(t._data).reshape(-1))
        return np.concatenate(parts) if parts else np.empty(0, dtype=self.dtype)

    def _set_shard(self, server: int, flat: np.ndarray, into_grads: bool = False) -> None:
        offset = 0
        for i in self.shards[server]:
            p = self.params[i]
            part = p._device.xp.asarray(flat[offset:offset + p.numel()].reshape(p._data.shape))
            offset += p.numel()
            if into_grads:
                p.grad = Tensor._make(part.copy(), p._device)
            else:
                p._device.xp.copyto(p._data, part)
                p._vc[0] += 1

    def _size(self, server: int) -> int:
        return sum(self.params[i].numel() for i in self.shards[server])

    def _wait(self, requests: list, what: str) -> None:
        MPIWork(requests, f"ParameterServer {what} on rank {self.rank}", self.timeout,
                self.mpi).wait()

    # ----------------------------------------------------------------- worker
    def step(self) -> None:
        """Push this worker's gradients to the servers, then pull the current parameters
        (waiting as long as the staleness bound requires)."""
        if not self.is_worker:
            raise DistributedError(f"ParameterServer.step: rank {self.rank} is a server; "
                                   "servers call serve()")
        self.clock += 1
        requests, replies, keep = [], {}, []
        clock = np.array([self.clock], dtype=np.int64)
        for s in self.servers:
            if not self.shards[s]:
                continue
            grads = self._flat(s, grads=True)
            keep.append(grads)
            requests.append(self.comm.Isend(grads, s, _GRAD))
            requests.append(self.comm.Isend(clock, s, _PULL))
            replies[s] = np.empty(self._size(s), dtype=self.dtype)
            requests.append(self.comm.Irecv(replies[s], s, _PARAMS))
        self._wait(requests, "step")
        with no_grad():
            for s, flat in replies.items():
                self._set_shard(s, flat)

    def close(self) -> None:
        """Tell the servers this worker is done, then receive the final parameters."""
        done = np.zeros(1, dtype=np.int64)
        self._wait([self.comm.Isend(done, s, _CLOSE) for s in self.servers], "close")
        self._final_parameters()

    # ----------------------------------------------------------------- server
    def serve(self) -> None:
        """Apply the workers' gradients and answer their requests until all have closed."""
        if not self.is_server:
            raise DistributedError(f"ParameterServer.serve: rank {self.rank} is a worker; "
                                   "workers call step() and close()")
        size = self._size(self.rank)
        clocks = dict.fromkeys(self.workers, 0)
        running = set(self.workers)
        waiting: list[int] = []
        total = np.zeros(size, dtype=self.dtype)
        arrived = 0
        gradient = np.empty(size, dtype=self.dtype)
        scratch = np.empty(1, dtype=np.int64)
        status = self.mpi.Status()
        while running or waiting:
            self._probe(status)
            source, tag = status.Get_source(), status.Get_tag()
            if tag == _GRAD:
                self.comm.Recv(gradient, source, _GRAD)
                clocks[source] += 1
                if self.max_staleness == 0:
                    total += gradient
                    arrived += 1
                    if arrived == len(running):
                        self._apply(total / arrived)
                        total[...] = 0
                        arrived = 0
                else:
                    self._apply(gradient)
            elif tag in (_PULL, _CLOSE):
                self.comm.Recv(scratch, source, tag)
                if tag == _PULL:
                    waiting.append(source)
                else:
                    running.discard(source)
            waiting = self._answer(waiting, clocks, running, arrived)
        self._final_parameters()

    def _probe(self, status) -> None:
        """Wait for the next message, yielding the CPU to the workers while none comes."""
        spins = 0
        started = time.monotonic()
        while not self.comm.Iprobe(self.mpi.ANY_SOURCE, self.mpi.ANY_TAG, status):
            spins += 1
            if spins < 50:
                continue
            waited = time.monotonic() - started
            if self.timeout is not None and waited > self.timeout:
                raise DistributedError(f"ParameterServer.serve on rank {self.rank}: no message "
                                       f"from any worker for {self.timeout:g} s")
            if waited < 0.001:
                os.sched_yield()
            else:
                time.sleep(0)

    def _apply(self, flat: np.ndarray) -> None:
        if self.optimizer is None:
            return
        with no_grad():
            self._set_shard(self.rank, flat, into_grads=True)
        self.optimizer.step()

    def _answer(self, waiting: list, clocks: dict, running: set, arrived: int) -> list:
        """Send the shard to the waiting workers that may read it; return those still waiting."""
        slowest = min((clocks[w] for w in running), default=None)
        still = []
        reply = None
        for w in waiting:
            floor = clocks[w] if slowest is None else slowest
            if self.max_staleness == 0:
                ready = arrived == 0 and floor >= clocks[w]
            else:
                ready = floor >= clocks[w] - self.max_staleness
            if not ready:
                still.append(w)
                continue
            if reply is None:
                reply = self._flat(self.rank, grads=False)
            self.max_staleness_seen = max(self.max_staleness_seen, clocks[w] - floor)
            self.comm.Send(reply, w, _PARAMS)
        return still

    # ---------------------------------------------------------------- the end
    def _final_parameters(self) -> None:
        """Every rank takes each server's final shard (a broadcast per server)."""
        with no_grad():
            for s in self.servers:
                if not self.shards[s]:
                    continue
                flat = self._flat(s, grads=False) if self.rank == s else \
                    np.empty(self._size(s), dtype=self.dtype)
                self._wait([self.comm.Ibcast(flat, s)], "final broadcast")
                if self.rank != s:
                    self._set_shard(s, flat)
        self.comm.Free()
