"""The Trainer on several processes (`Trainer(strategy=...)`, or launched by `mpiexec`):
the process group, the wrapped model (or the parameter server), each rank's shard of the
data, and the sums, flags and metric states combined over the ranks (over the workers
under a parameter server), through `dlfree.distributed`."""

from __future__ import annotations

import contextlib
import os

import dlfree.distributed as dist
from dlfree.data import BatchSampler, DataLoader, DistributedSampler, RandomSampler

STRATEGIES = ("auto", "ddp", "periodic", "parameter_server")
PARAMETER_SERVER_OPTIONS = ("servers", "max_staleness")
# Set by the launchers that start MPI jobs (MPICH's hydra, Open MPI, PMIx, SLURM): only then
# is MPI initialized to ask it for the world, so a plain single-process run never loads it.
_LAUNCHED_BY = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "SLURM_PROCID")


def _launched_in_parallel() -> bool:
    if dist.is_initialized():
        return dist.get_world_size() > 1
    if os.environ.get("PMI_SIZE") == "1" or not any(v in os.environ for v in _LAUNCHED_BY):
        return False
    if not dist.is_available():
        return False
    dist.init_process_group()
    return dist.get_world_size() > 1


class _Shard:
    """Positions rank, rank + world, ... of range(n), unpadded: each rank evaluates its own
    samples and together the ranks see every sample exactly once."""

    def __init__(self, n: int, rank: int, world: int):
        self.indices = range(rank, n, world)

    def __iter__(self):
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


def _resharded(loader: DataLoader, sampler) -> DataLoader:
    """`loader` with its batches drawn from `sampler` instead, everything else kept."""
    return DataLoader(
        loader.dataset, batch_size=loader.batch_size, sampler=sampler,
        num_workers=loader.num_workers, collate_fn=loader.collate_fn,
        drop_last=loader.drop_last, timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        prefetch_factor=loader.prefetch_factor, persistent_workers=loader.persistent_workers,
        device=loader.device)


def refuse_under_parameter_server(refused: dict[str, bool]) -> None:
    """Raise for the Trainer settings a parameter server cannot honour: `refused` maps a
    setting's reason (shown) to whether it was asked for."""
    asked = [reason for reason, on in refused.items() if on]
    if asked:
        raise ValueError("Trainer: strategy='parameter_server' does not support "
                         + "; ".join(asked) + " (use strategy='ddp' for those)")


def _shardable(data) -> bool:
    """A DataLoader over a map-style dataset whose batches come from its own sampler (not a
    custom batch_sampler, and not already sharded)."""
    return isinstance(data, DataLoader) and not data._iterable and \
        type(data.batch_sampler) is BatchSampler and data.batch_sampler.sampler is data.sampler \
        and not isinstance(data.sampler, DistributedSampler)


class Parallel:
    """How one Trainer runs on the ranks: `active` once `setup` found more than one rank
    (or a strategy was asked for); then `rank`, `world`, and the model training runs through
    (`train_model`: the DDP wrapper, or the model itself with periodic averaging or a
    parameter server).

    Under a parameter server, `server` is this fit's `ParameterServer`; on a server rank
    `serving` is True, and on a worker `group`, `rank` and `world` are the workers' group
    and this rank in it until `finish` (the data shards, sums, flags and metrics are the
    workers' alone)."""

    def __init__(self, strategy: str | None, options: dict | None):
        if strategy is not None and strategy not in STRATEGIES:
            raise ValueError(f"Trainer: strategy must be one of {STRATEGIES} ('auto': DDP when "
                             f"launched on several processes, else plain training) or None "
                             f"(this process alone), got {strategy!r}")
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"Trainer: strategy_options must be a dict of keyword arguments "
                            f"for the strategy's wrapper, got {type(options).__name__}")
        if strategy == "periodic" and "period" not in (options or {}):
            raise ValueError("Trainer: strategy='periodic' needs strategy_options={'period': "
                             "k} (parameters averaged every k optimizer steps)")
        unknown = sorted(set(options or {}) - set(PARAMETER_SERVER_OPTIONS))
        if strategy == "parameter_server" and unknown:
            raise ValueError(f"Trainer: strategy='parameter_server' takes strategy_options "
                             f"{PARAMETER_SERVER_OPTIONS} (default 1 server, max_staleness 0), "
                             f"got {unknown}")
        self.strategy = strategy
        self.options = dict(options or {})
        self.active = False
        self.rank, self.world = 0, 1
        self.train_model = None
        self.averaging = None
        self.server = None
        self.group = None  # what the sums, flags and metrics combine over (None: the world)
        self._workers = None
        self._wrapped = None

    def join(self) -> None:
        """Join (or start) the process group, unless this Trainer runs alone."""
        if self.active or self.strategy is None or \
                (self.strategy == "auto" and not _launched_in_parallel()):
            return
        if not dist.is_initialized():
            dist.init_process_group()
        self.active = True
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    def setup(self, model, optimizer=None) -> None:
        """`join`, then wrap `model` for training (once per Trainer and model), or start
        this fit's parameter server with `optimizer` as the servers' optimizer."""
        self.join()
        if self.active and self.strategy == "parameter_server":
            self._start_parameter_server(model, optimizer)
            return
        if self._wrapped is model:
            return
        self._wrapped = model
        if not self.active:
            self.train_model = model
        elif self.strategy == "periodic":
            self.averaging = dist.PeriodicAveraging(model, **self.options)
            self.train_model = model
        else:
            self.train_model = dist.DistributedDataParallel(model, **self.options)

    def _start_parameter_server(self, model, optimizer) -> None:
        # The servers step the Trainer's own optimizer: it updates only the parameters that
        # have a gradient, and on a server those are the ones of its shard. A ParameterServer
        # is closed at the end of a fit, so every fit starts a new one (on every rank).
        self.server = dist.ParameterServer(
            model, lambda shard: optimizer, servers=self.options.get("servers", 1),
            max_staleness=self.options.get("max_staleness", 0))
        if self._workers is None:
            self._workers = dist.new_group(self.server.workers)  # (every rank calls it)
        self.train_model = model
        if self.server.is_worker:
            self.group = self._workers
            self.rank, self.world = self._workers.rank, self._workers.size

    @property
    def serving(self) -> bool:
        """Whether this rank is a parameter server in the fit now starting."""
        return self.server is not None and self.server.is_server

    def serve(self) -> None:
        """A server's part of a fit: apply the workers' gradients until all have finished
        (then this rank holds the final parameters too)."""
        self.server.serve()
        self.server = None

    def optimizer_step(self, optimizer) -> None:
        """Step on this rank's gradients: through the parameter server (push them, pull
        the new parameters) when there is one, else `optimizer.step()`."""
        if self.server is not None:
            self.server.step()
        else:
            optimizer.step()

    def finish(self) -> None:
        """A worker's end of a fit: close the parameter server (every rank receives the
        final parameters) and combine over the whole world again."""
        if self.server is None:
            return
        self.server.close()
        self.server = None
        self.group = None
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    # ------------------------------------------------------------------ data
    def train_data(self, data, seed: int):
        """Each rank's shard of the training data: a DataLoader's sampler becomes a
        DistributedSampler (shuffled if the loader shuffled, seeded by `seed`); other data
        is taken as this rank's already."""
        if not self.active or not _shardable(data):
            return data
        # padded to equal shares, so every rank runs as many batches (and collectives)
        sampler = DistributedSampler(data.dataset, num_replicas=self.world, rank=self.rank,
                                     seed=seed, shuffle=isinstance(data.sampler, RandomSampler))
        return _resharded(data, sampler)

    def eval_data(self, data):
        """Each rank's disjoint, unpadded shard of a validation DataLoader."""
        if not self.active or not _shardable(data):
            return data
        return _resharded(data, _Shard(len(data.dataset), self.rank, self.world))

    @staticmethod
    def set_epoch(data, epoch: int) -> None:
        sampler = getattr(data, "sampler", None)
        if isinstance(sampler, DistributedSampler):
            sampler.set_epoch(epoch)

    # ------------------------------------------------------------------ training
    def no_sync(self, last_of_group: bool):
        """Backward without averaging gradients, for all but the last batch of an
        accumulation group under DDP."""
        if last_of_group or not callable(getattr(self.train_model, "no_sync", None)):
            return contextlib.nullcontext()
        return self.train_model.no_sync()

    def after_step(self) -> None:
        if self.averaging is not None:
            self.averaging.step()

    # ------------------------------------------------------------------ combining
    def sums(self, *values: float) -> list[float]:
        """Each value summed over the ranks (float64)."""
        if not self.active:
            return list(values)
        import dlfree as dl

        summed = dl.tensor([float(v) for v in values], dtype=dl.float64)
        dist.all_reduce(summed, group=self.group)
        return summed.tolist()

    def any(self, flag: bool) -> bool:
        """Whether `flag` is set on any rank (so every rank stops together)."""
        return bool(self.sums(float(bool(flag)))[0]) if self.active else flag

    def sync_metric(self, name: str, metric) -> None:
        """Give `metric` on every rank the state of one metric fed every rank's batches,
        merged through its declared reductions in rank order."""
        if not self.active:
            return
        missing = [m for m in ("state_dict", "load_state_dict", "merge", "clone", "reset")
                   if not callable(getattr(metric, m, None))]
        if missing:
            raise TypeError(f"Trainer: metric {name!r} ({type(metric).__name__}) cannot be "
                            f"combined over the ranks: it lacks {', '.join(missing)}; give a "
                            "dlfree.metrics Metric (its states declare how shards merge)")
        states: list = [None] * self.world
        dist.all_gather_object(states, metric.state_dict(), group=self.group)
        merged = metric.clone()
        merged.reset()
        for state in states:
            part = metric.clone()
            part.load_state_dict(state)
            merged.merge(part)
        metric.load_state_dict(merged.state_dict())

    def broadcast(self, value):
        """Rank 0's `value` (a small picklable object) on every rank."""
        if not self.active:
            return value
        box = [value]
        first = 0 if self.group is None else self.group.ranks[0]
        dist.broadcast_object_list(box, src=first, group=self.group)
        return box[0]
