"""The analytics of the in-situ job: takes the simulation's blocks from the queue "blocks" and,
once all the ranks' blocks of a step are there, submits two reductions over them (sum-<step>,
max-<step>), each taking every block of the step as an input. Writes what it saw to TRUTH
(per block: key, rank, bytes as Dask's sizeof says; per step: its reductions' results) and
shuts the cluster down.

    python insitu_analytics.py SCHEDULER_FILE STEPS RANKS TRUTH
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def step_sum(*blocks):
    return float(sum(b.sum() for b in blocks))


def step_max(*blocks):
    return float(max(b.max() for b in blocks))


def main(scheduler_file: str, steps: int, ranks: int, truth: str) -> None:
    from dask.sizeof import sizeof
    from distributed import Client, Event, Queue
    from insitu_sim import block_of

    with Client(scheduler_file=scheduler_file, timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
        queue = Queue("blocks", client=client)
        Event("analytics-ready", client=client).set()
        waiting: dict[int, list] = {}
        results, blocks = [], []
        for _ in range(steps * ranks):
            future = queue.get(timeout=60)
            name, rank = future.key
            step = int(name.split("-")[1])
            blocks.append({"key": str((name, rank)), "step": name, "rank": rank,
                           "nbytes": sizeof(block_of(rank, step))})
            waiting.setdefault(step, []).append(future)
            if len(waiting[step]) == ranks:
                parts = waiting.pop(step)
                results.append(client.submit(step_sum, *parts, key=f"sum-{step}"))
                results.append(client.submit(step_max, *parts, key=f"max-{step}"))
        done = dict(zip([f.key for f in results], client.gather(results), strict=True))
        Path(truth).write_text(json.dumps({"blocks": blocks, "results": done}))
        client.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
