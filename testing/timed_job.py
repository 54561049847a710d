"""A job of no-op Dask tasks for a given time: ``python testing/timed_job.py SECONDS [--batch N]
[--pause S] [--open] [--coroutines] [--transfers] [--spans] [--scatter]``. LocalCluster 2 workers x 2 threads (worker
processes); batches of ``inc`` tasks, each result checked, until SECONDS have passed (at least
one batch); prints ``tasks=N``. ``--open``: each task also reads a file (this script), so that
the workers record file opens. ``--coroutines``: each batch also runs ``async def`` tasks (the
workers record coroutine slices). ``--transfers``: each batch ends with a task summing its
results, which moves them between the workers (transfers). ``--spans``: each batch runs in a
Dask span, its tasks annotated (the scheduler records both). ``--scatter``: each batch scatters a
value through ``collectors.api.scatter`` that its tasks add (data from the client, and the
client's note of it). Run by its path, it imports only Dask (and the collectors with
``--scatter``): a benchmark runs it under another tree's collectors (``--baseline-tree``) too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time

import dask
from distributed import Client, LocalCluster, span

#: coroutine tasks per batch (``--coroutines``)
COROUTINES = 4


def inc(x: int) -> int:
    return x + 1


def add(x: int, y: int) -> int:
    return x + y


def inc_reading(x: int) -> int:
    with open(__file__, "rb") as fh:
        fh.read(1)
    return x + 1


async def inc_awaiting(x: int) -> int:
    await asyncio.sleep(0.001)
    return x + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seconds", type=float)
    parser.add_argument("--batch", type=int, default=100, help="tasks per batch")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between batches")
    parser.add_argument("--open", action="store_true", help="each task reads a file")
    parser.add_argument("--coroutines", action="store_true",
                        help=f"{COROUTINES} async def tasks per batch")
    parser.add_argument("--transfers", action="store_true",
                        help="a task per batch sums its results (moves them between workers)")
    parser.add_argument("--spans", action="store_true",
                        help="each batch in a Dask span, its tasks annotated")
    parser.add_argument("--scatter", action="store_true",
                        help="each batch scatters a value (collectors.api.scatter) its tasks add")
    args = parser.parse_args()
    task = inc_reading if args.open else inc
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        end, n = time.monotonic() + args.seconds, 0
        while True:
            with contextlib.ExitStack() as batch_context:
                if args.spans:
                    batch_context.enter_context(span("batch"))
                    batch_context.enter_context(dask.annotate(retries=1))
                n += _batch(client, args, task, n)
            if time.monotonic() > end:
                break
            time.sleep(args.pause)
    print(f"tasks={n}")


def _batch(client: Client, args: argparse.Namespace, task: object, n: int) -> int:
    """One batch of tasks from ``n``, each result checked; the tasks it ran."""
    batch = range(n, n + args.batch)
    if args.scatter:
        from collectors import api

        # (a key of its own: the same value's key, released with the last batch's futures
        # while this batch's tasks take it, could be lost to them)
        zero = api.scatter(client, 0, step="batch", rank=0, hash=False)
        futures = [client.submit(add, client.submit(task, x, pure=False), zero, pure=False)
                   for x in batch]
        ran = 2 * len(futures)
    else:
        futures = client.map(task, batch)
        ran = len(futures)
    if args.coroutines:
        futures += client.map(inc_awaiting, range(n, n + COROUTINES), pure=False)
        ran += COROUTINES
    want = [x + 1 for x in batch] + [x + 1 for x in range(n, n + COROUTINES)
                                      if args.coroutines]
    if args.transfers:
        total = client.submit(sum, futures, pure=False).result()
        assert total == sum(want), "wrong sum"
        ran += 1
    got = client.gather(futures)
    assert got == want, "wrong results"
    return ran


if __name__ == "__main__":
    main()
