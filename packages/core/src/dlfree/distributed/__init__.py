"""dlfree.distributed: collectives and data-parallel training on MPI and NCCL.

torch.distributed's names: `init_process_group`, the collectives on Tensors, `new_group`,
plus three ways to train on several processes: `DistributedDataParallel` (gradients
averaged in buckets during backward), `PeriodicAveraging` (Local SGD) and
`ParameterServer`. MPI runs through mpi4py (`pip install 'dlfree[mpi]'`) and NCCL through
CuPy; importing this package imports neither (docs/distributed.md).
"""

from ..errors import DistributedError
from . import functional
from .collectives import (
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    barrier,
    broadcast,
    broadcast_object_list,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)
from .ddp import DistributedDataParallel
from .group import (
    ProcessGroup,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    new_group,
)
from .info import engine_info
from .parameter_server import ParameterServer
from .periodic import PeriodicAveraging
from .reduce_op import ReduceOp
from .work import Work

