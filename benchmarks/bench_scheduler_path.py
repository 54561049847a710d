"""Benchmark: the scheduler plugin's CPU per task, in one process and without Dask's noise.

The scheduler is the one process every task of a cluster passes through, so its per-task cost
bounds the whole job's rate. This drives the real ``CorrelateSchedulerPlugin`` as Dask's
scheduler calls it for ``client.map(inc, range(N))``: per task one ``update_graph`` entry
and six transitions (released→waiting, waiting→processing, processing→memory with the
task-finished message's worker, thread, size and one startstops entry, memory→released,
released→forgotten, plus a waiting→queued), with Dask's keyword arguments and stimulus ids
(one per graph, one per finished task); then one flush (rows expanded, keys interned, a batch
per table appended and synced) into a fresh process folder, or with ``--flush-every K`` a
flush after each K tasks (the graph's keys all alive at first, as a graph submitted whole),
and with ``--lag L`` a task released and forgotten L tasks after it ran (its result kept
while others run: the map of strings then fills between a key's transitions). CPU of the calling thread
(``thread_time_ns``), hooks and flush apart, best of ``--repeat`` fresh processes per tree,
trees alternated, so the figures of two checkouts are side by side.

What it leaves out: Dask's own cost of calling a plugin (``bench_many_tasks.py --modes null``),
and what the plugin's objects cost the process's garbage collector (``--breakdown`` there).

    python benchmarks/bench_scheduler_path.py [--tasks 20000] [--repeat 5] [--tree DIR ...]
        [--flush-every K] [--lag L]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""
    import json, sys, tempfile, time, types
    from collectors.scheduler_plugin import CorrelateSchedulerPlugin

    n, every, lag = int(sys.argv[1]), int(sys.argv[2]) or int(sys.argv[1]), int(sys.argv[3])
    prefix = types.SimpleNamespace(name="inc")
    group = types.SimpleNamespace(name="inc-0c5e6ef5a2b2d7a2f7d5d6a1e0b1c2d3")
    tasks = {}
    scheduler = types.SimpleNamespace(address="tcp://10.0.0.1:8786", tasks=tasks,
                                      extensions={})
    plugin = CorrelateSchedulerPlugin(tempfile.mkdtemp())
    plugin._start(scheduler)
    plugin.sink._stop.set()  # flushed here, not by its thread
    keys = [f"inc-{i:032x}" for i in range(n)]
    for k in keys:
        tasks[k] = types.SimpleNamespace(prefix=prefix, group=group, dependencies=(),
                                         annotations={})
    graph = f"update-graph-{time.time()}"
    t0 = time.thread_time_ns()
    flushes = 0
    plugin.update_graph(scheduler, client="Client-1", tasks=keys)

    def release(j):
        k = keys[j]
        plugin.transition(k, "memory", "released", stimulus_id=f"client-releases-keys-{j}")
        plugin.transition(k, "released", "forgotten", stimulus_id=f"client-releases-keys-{j}")

    for i, k in enumerate(keys):
        if i and not i % every:
            f0 = time.thread_time_ns()
            plugin.sink.flush()
            flushes += time.thread_time_ns() - f0
        if i >= lag:
            release(i - lag)
        plugin.transition(k, "released", "waiting", stimulus_id=graph)
        plugin.transition(k, "waiting", "processing", stimulus_id=graph)
        done = f"task-finished-{1.7e9 + i / 1000}"
        plugin.transition(k, "processing", "memory", stimulus_id=done,
                          worker="tcp://10.0.0.2:40000", nbytes=28, type=b"int",
                          typename="int", thread=140000000000 + i % 4, metadata={},
                          startstops=({"action": "compute", "start": 1.7e9 + i / 1000,
                                       "stop": 1.7e9 + i / 1000 + 1e-5},),
                          run_id=i)
        plugin.transition(k, "waiting", "queued", stimulus_id=graph)
    for j in range(max(0, n - lag), n):
        release(j)
    t1 = time.thread_time_ns()
    plugin.sink.flush()
    t2 = time.thread_time_ns()
    plugin.close_sink()
    print(json.dumps({"hooks": (t1 - t0 - flushes) / n / 1e3,
                      "flush": (t2 - t1 + flushes) / n / 1e3}))
""")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--lag", type=int, default=0,
                    help="tasks run between a task's memory and its release and forgetting "
                         "(a result kept while others run)")
    ap.add_argument("--flush-every", type=int, default=0,
                    help="flush after each this many tasks' transitions, the graph submitted "
                         "whole first (0: one flush at the end)")
    ap.add_argument("--tree", type=Path, action="append", default=[],
                    help="another checkout's collectors (e.g. `git archive REV collectors "
                         "correlate`), measured in turn with this one")
    args = ap.parse_args()
    trees = {"this tree": REPO, **{str(t): t.resolve() for t in args.tree}}
    got: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.repeat):
        for name, tree in trees.items():
            out = subprocess.run([sys.executable, "-c", CHILD, str(args.tasks),
                                  str(args.flush_every), str(args.lag)],
                                 capture_output=True, text=True, check=True, cwd=tree,
                                 env={**os.environ, "PYTHONPATH": str(tree)})
            got[name].append(json.loads(out.stdout.splitlines()[-1]))
    every = (f"a flush per {args.flush_every} tasks" if args.flush_every else "one flush") + (
        f", released {args.lag} tasks later" if args.lag else "")
    print(f"\nscheduler plugin, {args.tasks} tasks of 6 transitions, {every}: CPU µs per "
          f"task, best (median) of {args.repeat} fresh processes")
    print("| tree | hooks | flush | both |\n|---|---:|---:|---:|")
    for name, runs in got.items():
        cells = []
        for part in ("hooks", "flush", None):
            values = sorted(r[part] if part else r["hooks"] + r["flush"] for r in runs)
            cells.append(f"{values[0]:.2f} ({values[len(values) // 2]:.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
