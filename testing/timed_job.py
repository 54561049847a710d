"""A job of no-op Dask tasks for a given time: ``python testing/timed_job.py SECONDS [--batch N]
[--pause S] [--open]``. LocalCluster 2 workers x 2 threads (worker processes); batches of
``inc`` tasks, each result checked, until SECONDS have passed (at least one batch); prints
``tasks=N``. ``--open``: each task also reads a file (this script), so that the workers record
file opens. Run by its path, it imports only Dask: a benchmark runs it under another tree's
collectors (``--baseline-tree``) too.
"""

from __future__ import annotations

import argparse
import time

from distributed import Client, LocalCluster


def inc(x: int) -> int:
    return x + 1


def inc_reading(x: int) -> int:
    with open(__file__, "rb") as fh:
        fh.read(1)
    return x + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seconds", type=float)
    parser.add_argument("--batch", type=int, default=100, help="tasks per batch")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between batches")
    parser.add_argument("--open", action="store_true", help="each task reads a file")
    args = parser.parse_args()
    task = inc_reading if args.open else inc
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        end, n = time.monotonic() + args.seconds, 0
        while True:
            batch = range(n, n + args.batch)
            got = client.gather(client.map(task, batch))
            assert got == [x + 1 for x in batch], "wrong results"
            n += args.batch
            if time.monotonic() > end:
                break
            time.sleep(args.pause)
    print(f"tasks={n}")


if __name__ == "__main__":
    main()
