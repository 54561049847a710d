"""A job for the "unknown is not zero" tests: CPU-bound, sleeping, coroutine and file-writing
tasks on a LocalCluster of 2 worker processes × 2 threads. ``unknown_job.py DATA_DIR``."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from distributed import Client, LocalCluster


def burn(i: int) -> int:
    s = 0
    for k in range(200_000):
        s += k * i
    return s


def nap(i: int) -> int:
    time.sleep(0.3)  # wall time that is neither CPU nor I/O
    return i


async def co(i: int) -> int:
    await asyncio.sleep(0.05)
    return i


def save(i: int, folder: str) -> int:
    (Path(folder) / f"f{i}.bin").write_bytes(b"x" * 100_000)
    return i


if __name__ == "__main__":
    data = sys.argv[1]
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        futures = (client.map(burn, range(12)) + client.map(nap, range(4))
                   + client.map(co, range(4)) + client.map(save, range(6), folder=data))
        client.gather(futures)
