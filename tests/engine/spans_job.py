"""A job with nested Dask spans and a custom annotation, for tests/engine/test_spans.py:
``etl`` › ``load`` (stage=read) and ``etl`` › ``train`` (stage=fit, priority 5), then tasks
outside any span. LocalCluster of 2 worker processes × 2 threads. ``spans_job.py [TRAIN]``:
the train tasks do TRAIN times the work (default 1)."""

from __future__ import annotations

import sys
import time

import dask
from distributed import Client, LocalCluster, span


def burn(i: int, times: int = 1) -> int:
    s = 0
    for k in range(300_000 * times):
        s += k * (i + 1)
    return s


def nap(i: int) -> int:
    time.sleep(0.05)
    return i


if __name__ == "__main__":
    train = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    with LocalCluster(n_workers=2, threads_per_worker=2, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        with span("etl"):
            with span("load"), dask.annotate(stage="read"):
                client.gather(client.map(burn, range(10), key=[f"load-{i}" for i in range(10)]))
            with span("train"), dask.annotate(stage="fit", priority=5):
                client.gather(client.map(burn, range(20), times=train,
                                          key=[f"train-{i}" for i in range(20)]))
        client.gather(client.map(nap, range(5), key=[f"nap-{i}" for i in range(5)]))
        # Dask's metrics reach the scheduler with the workers' heartbeats
        time.sleep(2.5)
