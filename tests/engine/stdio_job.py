"""A job whose tasks move their data through C stdio (numpy ``tofile``/``fromfile``), for
test_stdio_tasks.py: ``python stdio_job.py TRUTH DATA``. 2 worker processes × 2 threads.
Each ``save`` task writes one array of its own size, each ``load`` task reads it back, and each
``look`` task, after it, opens the same file to read its first bytes in Python (no stdio): two
tasks open every file for reading, one of them reads it through stdio. The truth file lists
every task with its process and the stdio calls it made (op, path, bytes, start and end in
``time.time()`` seconds)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from dask.distributed import Client, LocalCluster

N = 24


def _stdio(op: str, path: str, call) -> dict:
    t0 = time.time()
    nbytes = call()
    return {"pid": os.getpid(), "stdio": [(op, path, nbytes, t0, time.time())]}


def save(i: int, data: str) -> dict:
    values = np.arange(1000 * (i + 1), dtype=np.float64)
    path = f"{data}/array-{i}.bin"
    return _stdio("write", path, lambda: values.tofile(path) or values.nbytes)


def load(i: int, data: str, _saved: dict) -> dict:
    path = f"{data}/array-{i}.bin"
    return _stdio("read", path, lambda: np.fromfile(path, dtype=np.float64).nbytes)


def look(i: int, data: str, _loaded: dict) -> dict:
    with open(f"{data}/array-{i}.bin", "rb") as f:
        f.read(16)
    return {"pid": os.getpid(), "stdio": []}


if __name__ == "__main__":
    truth, data = Path(sys.argv[1]), sys.argv[2]
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True) as cluster, \
            Client(cluster) as client:
        saves = [client.submit(save, i, data, key=f"save-{i}") for i in range(N)]
        loads = [client.submit(load, i, data, s, key=f"load-{i}") for i, s in enumerate(saves)]
        looks = [client.submit(look, i, data, d, key=f"look-{i}") for i, d in enumerate(loads)]
        rows = [{"key": f.key, **f.result()} for f in saves + loads + looks]
    truth.write_text(json.dumps(rows))
