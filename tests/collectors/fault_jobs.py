"""Dask jobs for the fault tests: every task touches a marker file named after its key (the
truth of what ran), so a test can check each one is recorded or counted as missing."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def marked(key: str, folder: str, seconds: float) -> int:
    time.sleep(seconds)
    Path(folder, key).touch()
    return os.getpid()


def run_tasks(client, folder: str, n: int, seconds: float) -> list[int]:
    futures = [client.submit(marked, f"t-{i}", folder, seconds, key=f"t-{i}", pure=False)
               for i in range(n)]
    return client.gather(futures)


def inprocess_job(folder: str, n: str) -> None:
    """Two workers in the job's own process (a notebook's LocalCluster(processes=False))."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        run_tasks(client, folder, int(n), 0.01)


def cluster_job(folder: str, n: str, seconds: str) -> None:
    """Two worker processes x 2 threads; the tasks take ``seconds`` each. Writes ``ready`` to
    the folder once the cluster is up (the moment a test injects its fault)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        Path(folder).parent.joinpath("ready").touch()
        pids = run_tasks(client, folder, int(n), float(seconds))
        assert len(pids) == int(n)
    Path(folder).parent.joinpath("done").touch()


def cli_client(scheduler_file: str, folder: str, n: str, seconds: str) -> None:
    """A client of a `dask scheduler` started by a batch script. Writes ``ready`` beside the
    folder once it is connected."""
    from distributed import Client

    with Client(scheduler_file=scheduler_file) as client:
        client.wait_for_workers(2)
        Path(folder).parent.joinpath("ready").touch()
        run_tasks(client, folder, int(n), float(seconds))
    Path(folder).parent.joinpath("done").touch()


if __name__ == "__main__":
    {"inprocess": inprocess_job, "cluster": cluster_job, "client": cli_client}[sys.argv[1]](
        *sys.argv[2:])
