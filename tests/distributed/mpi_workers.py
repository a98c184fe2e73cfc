"""A worker program started without Stadyn's launcher (``mpiexec -n 2``, or two processes
given OpenMPI's environment by the test): ``python mpi_workers.py OUT``; each worker writes
``OUT.rank<r>.json``: what ``init()`` returned, the rank, size, local rank and size, an
all-reduce of ``rank + 1``, and two steps of :class:`stadyn.distributed.QuantizedAllReduce`
(1 bit) over gradients that differ per worker (a (3, 5) matrix, a vector of 4, a scalar): the
sums after each.  ``python mpi_workers.py OUT --crash``: each worker joins, all-reduces and
ends at once, as a crashed job does (no shutdown: the rendezvous file stays).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import torch

import stadyn.distributed as dist


def gradients(rank: int, step: int) -> list[np.ndarray]:
    """The gradients worker ``rank`` has at ``step``."""
    rs = np.random.RandomState(100 * step + rank)
    return [rs.randn(3, 5).astype(np.float32), rs.randn(4).astype(np.float32),
            np.array(rs.randn(), np.float32)]


def main(out: str, crash: bool = False) -> None:
    joined = dist.init()
    rank = dist.rank()
    result: dict = {"joined": joined, "rank": rank, "size": dist.size(),
                    "local_rank": dist.local_rank(), "local_size": dist.local_size()}
    result["sum"] = dist.all_reduce_sum(torch.tensor([rank + 1.0])).tolist()
    if crash:
        os._exit(3)
    q = dist.QuantizedAllReduce(bits=1)
    result["sums"] = []
    for step in range(2):
        g = [torch.from_numpy(a.copy()) for a in gradients(rank, step)]
        q.all_reduce(g)
        result["sums"].append([t.tolist() for t in g])
    with open(f"{out}.rank{rank}.json", "w") as f:
        json.dump(result, f)
    dist.shutdown()


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(sys.argv[1], sys.argv[2:] == ["--crash"])
