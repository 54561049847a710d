"""The dask-mpi pattern: `mpiexec -n 4 python mpi_job.py TRUTH DATA_DIR`. Rank 0 runs the
scheduler, rank 1 this client code, ranks 2-3 the workers; `collect env`'s variables in the
environment (forwarded by mpiexec) make them record.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import client as graph_module  # the workers import it too: PYTHONPATH holds tests/deploy


def main(truth: str, data: str) -> None:
    from dask_mpi import initialize
    from distributed import Client

    initialize(nthreads=2, dashboard=False, interface="lo", protocol="tcp")  # loopback only
    with Client() as c:
        c.wait_for_workers(2, timeout=60)
        Path(truth).write_text(json.dumps(graph_module.graph(c, data)))


if __name__ == "__main__":
    main(*sys.argv[1:3])
