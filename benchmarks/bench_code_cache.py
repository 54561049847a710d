"""CPU per task of ``collectors.code_cache`` (yappi modes): the run spec of a task of
``long_yappi_job.py`` (its ``work`` and 6 helpers, pickled by value as the scheduler sends it)
unpickled anew per task, as a worker does, then canonicalised. Prints the thread CPU per task
of the unpickling (for scale) and of ``canonicalise``, best of ``--repeat``.

    python benchmarks/bench_code_cache.py [--tasks 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

import cloudpickle
from dask._task_spec import Task

from collectors.code_cache import CodeCache

JOB = Path(__file__).resolve().parent / "long_yappi_job.py"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    ns: dict = {"__name__": "long_yappi_job_by_value"}  # not importable: sent by value
    exec(compile(JOB.read_text(), str(JOB), "exec"), ns)  # noqa: S102
    blob = cloudpickle.dumps(Task("work-0", ns["work"], 3))
    load, canon = [], []
    for _ in range(args.repeat):
        cache = CodeCache()
        c0 = time.thread_time_ns()
        specs = [pickle.loads(blob) for _ in range(args.tasks)]
        c1 = time.thread_time_ns()
        for spec in specs:
            cache.canonicalise(spec)
        c2 = time.thread_time_ns()
        assert cache.replaced == 7 * (args.tasks - 1), cache.replaced
        load.append((c1 - c0) / args.tasks / 1e3)
        canon.append((c2 - c1) / args.tasks / 1e3)
    print(f"{args.tasks:,} tasks x {args.repeat}: thread CPU per task, best (median): "
          f"unpickle {min(load):.1f} µs ({sorted(load)[len(load) // 2]:.1f}), canonicalise "
          f"{min(canon):.1f} µs ({sorted(canon)[len(canon) // 2]:.1f})")


if __name__ == "__main__":
    main()
