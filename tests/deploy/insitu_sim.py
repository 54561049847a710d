"""The "simulation" of the in-situ job: each MPI rank computes a block per step and scatters it
into Dask (``collectors.scatter``: its rank comes from MPICH's ``PMI_RANK``), publishing the
future on the ``distributed.Queue`` "blocks". Rank ``SLOW_RANK`` takes ``SLOW_S`` longer on
odd steps, so its block of those steps comes last; the ranks keep in step with an MPI barrier
(as a simulation's halo exchange would), and start once the analytics is ready (the
``distributed.Event`` "analytics-ready").

    mpiexec -n 3 python insitu_sim.py SCHEDULER_FILE STEPS SLOW_S
"""

from __future__ import annotations

import sys
import time

SLOW_RANK = 2
#: elements of each rank's block: rank r sends (r + 1) × this many float64
BLOCK = 1000


def block_of(rank: int, step: int):
    import numpy as np

    return np.full((rank + 1) * BLOCK, float(step * 10 + rank))


def main(scheduler_file: str, steps: int, slow_s: float) -> None:
    from distributed import Client, Event, Queue
    from mpi4py import MPI

    import collectors

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    with Client(scheduler_file=scheduler_file, timeout=60) as client:
        queue = Queue("blocks", client=client)
        if not Event("analytics-ready", client=client).wait(timeout=60):
            raise SystemExit("the analytics never became ready")
        comm.Barrier()
        for step in range(steps):
            time.sleep(0.1 + (slow_s if rank == SLOW_RANK and step % 2 else 0.0))
            futures = collectors.scatter(client, {(f"field-{step}", rank): block_of(rank, step)})
            queue.put(next(iter(futures.values())))
            comm.Barrier()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
