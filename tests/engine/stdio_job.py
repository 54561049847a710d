"""A job whose tasks move their data through C stdio (numpy ``tofile``/``fromfile``), for
test_stdio_tasks.py: ``python stdio_job.py TRUTH DATA``. 2 worker processes × 2 threads; each
``save`` task writes one array of its own size, each ``load`` task reads one back. The truth
file lists every task's key with the bytes it moved."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from dask.distributed import Client, LocalCluster

N = 24


def save(i: int, data: str) -> int:
    values = np.arange(1000 * (i + 1), dtype=np.float64)
    values.tofile(f"{data}/array-{i}.bin")
    return values.nbytes


def load(i: int, data: str, _saved: int) -> int:
    return np.fromfile(f"{data}/array-{i}.bin", dtype=np.float64).nbytes


if __name__ == "__main__":
    truth, data = Path(sys.argv[1]), sys.argv[2]
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True) as cluster, \
            Client(cluster) as client:
        saves = [client.submit(save, i, data, key=f"save-{i}") for i in range(N)]
        loads = [client.submit(load, i, data, s, key=f"load-{i}") for i, s in enumerate(saves)]
        rows = [{"key": f.key, "bytes": f.result()} for f in saves + loads]
    truth.write_text(json.dumps(rows))
