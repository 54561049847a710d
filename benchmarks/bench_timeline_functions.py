"""Benchmark: where the timeline's time goes. ``correlate RUN -o OUT --no-reports`` in this
process, with the wall time of each of the timeline's steps summed over its calls (one part
of the transitions or one range of ``events`` a call) and printed, largest first, with the
number of calls and the highest resident memory sampled (every 20 ms) while the step ran;
``--rows-per-part`` forces the transitions into parts of that many rows
(``spill.KEYED_ROWS_PER_PART``) to time the path a big run takes on a smaller one. The steps
nest (``Merged.put`` holds ``Merged._in_order`` and ``Coded.take``, ``_Taken.add`` the
waits' steps): the sums are not to be added up.

    CORRELATE_STAGE_LOG=stages.jsonl python benchmarks/bench_timeline_functions.py RUN OUT \
        [--rows-per-part N]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import Counter
from typing import Any

from correlate.frames import allocator

allocator.configure()  # (before polars loads, as the command does)

from correlate import outcome, sinks  # noqa: E402
from correlate.cli import main  # noqa: E402
from correlate.frames import spill  # noqa: E402
from correlate.timeline import align, endings, lost, pipeline, waits  # noqa: E402

#: the steps timed: (module or class, its function names)
STEPS: list[tuple[Any, list[str]]] = [
    (pipeline, ["_read", "_events_table", "_with_free_thread_waits", "_with_external_waits",
                "message_bounds"]),
    (pipeline._Taken, ["add", "key_waits"]),
    (waits, ["thread_use", "thread_waits", "free_thread_waits", "scheduler_waits",
             "pause_rows", "paused_waits", "external_arrivals"]),
    (endings, ["with_endings"]), (lost, ["results_lost"]), (outcome, ["seen_part", "seen_of"]),
    (align, ["worker_offsets", "worker_shift"]), (spill, ["spilled_coded"]),
    (sinks, ["output_order", "conform", "spilled_coded"]),
    (sinks.Merged, ["add", "put", "_in_order"]), (spill.Coded, ["take"]),
]


#: the steps running now (they nest), and each step's highest resident bytes sampled
ACTIVE: list[str] = []
PEAK: Counter = Counter()


def timed(owner: Any, name: str, seconds: Counter, calls: Counter) -> None:
    """``owner.name`` replaced by a wrapper adding its wall time to ``seconds``."""
    label = f"{getattr(owner, '__name__', owner).split('.')[-1]}.{name}"
    function = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        ACTIVE.append(label)
        try:
            return function(*args, **kwargs)
        finally:
            ACTIVE.pop()
            seconds[label] += time.perf_counter() - start
            calls[label] += 1

    setattr(owner, name, wrapper)


def sample_rss(stop: threading.Event) -> None:
    """Every 20 ms: the resident bytes, counted against every step running."""
    page = os.sysconf("SC_PAGE_SIZE")
    with open("/proc/self/statm") as statm:
        while not stop.wait(0.02):
            statm.seek(0)
            rss = int(statm.read().split()[1]) * page
            for label in set(ACTIVE):
                PEAK[label] = max(PEAK[label], rss)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("out")
    parser.add_argument("--rows-per-part", type=int, default=None)
    args = parser.parse_args(argv)
    if args.rows_per_part:
        spill.KEYED_ROWS_PER_PART = args.rows_per_part
    seconds: Counter = Counter()
    calls: Counter = Counter()
    for owner, names in STEPS:
        for name in names:
            timed(owner, name, seconds, calls)
    stop = threading.Event()
    sampler = threading.Thread(target=sample_rss, args=(stop,), daemon=True)
    sampler.start()
    try:
        code = main([args.run, "-o", args.out, "--no-reports", "--memory-limit", "none",
                     "--force"])
    finally:
        stop.set()
        sampler.join()
    print("  wall s calls peak GB  step")
    for label, total in seconds.most_common():
        print(f"{total:8.2f} {calls[label]:5d} {PEAK[label] / 1e9:7.2f}  {label}")
    return code


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
