"""Dask jobs for the fault tests: every task touches a marker file named after its key (the
truth of what ran), so a test can check each one is recorded or counted as missing."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def marked(key: str, folder: str, seconds: float) -> int:
    time.sleep(seconds)
    Path(folder, key).write_text(str(os.getpid()))  # (which process ran it)
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


def forks(key: str, folder: str) -> int:
    """Marks itself after a child process forked from the worker (multiprocessing's fork
    context, as a task using a process pool would) has run and ended."""
    import multiprocessing

    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(0.01,))
    child.start()
    child.join()
    Path(folder, key).touch()
    return child.exitcode


def fork_job(folder: str, n: str) -> None:
    """Two worker processes x 2 threads; each task forks a child process (workers that are
    not daemons may have children)."""
    import dask
    from distributed import Client, LocalCluster

    dask.config.set({"distributed.worker.daemon": False})
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        codes = client.gather([client.submit(forks, f"f-{i}", folder, key=f"f-{i}", pure=False)
                               for i in range(int(n))])
        assert codes == [0] * int(n)
    Path(folder).parent.joinpath("done").touch()


def hog(key: str, folder: str, mib: int) -> int:
    """Marks itself, then holds ``mib`` MiB until its worker's nanny kills the process."""
    Path(folder, key).touch()
    block = bytearray(mib << 20)
    for i in range(0, len(block), 4096):  # touched: resident, as the nanny measures it
        block[i] = 1
    time.sleep(30)
    return len(block)


def lifecycle_job(folder: str, what: str, n: str) -> None:
    """Two worker processes x 2 threads, ``n`` marked tasks before and after the cluster
    event ``what``: ``restart`` (client.restart: every worker process replaced), ``retire``
    (one worker retired while tasks run), ``memory`` (a task holds more than its worker's
    memory limit: the nanny kills the worker and starts a new process)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, memory_limit="400MiB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        run_tasks(client, folder, int(n), 0.01)
        if what == "restart":
            client.restart()
        elif what == "retire":
            later = [client.submit(marked, f"r-{i}", folder, 0.01, key=f"r-{i}", pure=False)
                     for i in range(int(n))]
            client.retire_workers([next(iter(client.scheduler_info()["workers"]))])
            client.gather(later)
        elif what == "memory":
            hogged = client.submit(hog, "hog", folder, 600, key="hog", pure=False)
            try:
                hogged.result()
            except Exception as err:  # noqa: BLE001 - KilledWorker: the point of the job
                print(f"hog: {type(err).__name__}", file=sys.stderr)
        client.wait_for_workers(1)
        futures = [client.submit(marked, f"after-{i}", folder, 0.01, key=f"after-{i}",
                                 pure=False) for i in range(int(n))]
        client.gather(futures)
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
    {"inprocess": inprocess_job, "cluster": cluster_job, "client": cli_client,
     "lifecycle": lifecycle_job, "fork": fork_job}[sys.argv[1]](
        *sys.argv[2:])
