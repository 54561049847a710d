"""The client of the lost-work test: 1,000 tasks of 20 ms held as futures on two workers; once
40 have finished it SIGKILLs the worker whose address comes first (its results die with it),
then a task that needs every result makes the scheduler recompute the lost ones. Writes the
killed worker's address to OUT and shuts the cluster down.

    python lost_client.py SCHEDULER_FILE OUT
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

TILES = 1000


def tile(i: int) -> int:
    time.sleep(0.02)
    return i


def total(*xs: int) -> int:
    return sum(xs)


def main(argv: list[str]) -> None:
    from distributed import Client, wait

    with Client(scheduler_file=argv[0], timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
        pids = client.run(os.getpid)
        victim = sorted(pids)[0]
        # (the victim still has tasks to run when the kill comes, however late this loop sees
        # the 40th: its last executions are not flushed yet; with 120 tasks, and once with
        # 400 (about 2 s of work), a loaded host let it finish and flush its share first)
        futures = client.map(tile, range(TILES), key=[f"tile-{i}" for i in range(TILES)])
        while sum(f.done() for f in futures) < 40:
            time.sleep(0.01)
        os.kill(pids[victim], signal.SIGKILL)
        assert client.submit(total, *futures, key="total-0").result() == sum(range(TILES))
        wait(futures)
        Path(argv[1]).write_text(victim)
        client.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
