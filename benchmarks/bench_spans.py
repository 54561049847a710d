"""What recording spans and annotations costs the scheduler, per task, side by side in one run:
a graph of N tasks submitted without a span (Dask's default span: its tasks carry no
annotation), inside ``distributed.span`` and inside ``span`` + ``dask.annotate(stage=...)``.

For each, on a real scheduler holding the graph (an in-process LocalCluster, the futures kept
alive), the scheduler plugin's ``update_graph`` hook is run again over the same keys (it only
reads the task states) and its flush-time expansion into rows; both are timed, best of 5, and
given per task. The hook's cost without spans is its cost before spans were recorded plus one
test of ``ts.annotations`` per task.

    python benchmarks/bench_spans.py [--tasks 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time

import dask
from distributed import Client, LocalCluster, span

from collectors.scheduler_plugin import CorrelateSchedulerPlugin


def inc(x: int) -> int:
    return x + 1


def _best(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(client: Client, plugin: CorrelateSchedulerPlugin, n: int, how: str) -> tuple:
    scheduler = client.cluster.scheduler
    ctx = {"none": contextlib.nullcontext(), "span": span("bench"),
           "span+annotate": span("bench")}[how]
    with ctx, (dask.annotate(stage="fit") if how == "span+annotate"
               else contextlib.nullcontext()):
        futures = client.map(inc, range(n), key=[f"{how}-{i}" for i in range(n)])
        client.gather(futures)
    keys = [f.key for f in futures]

    def hook() -> None:
        plugin.update_graph(scheduler, client="bench", tasks=keys)
        plugin._graphs.clear()
        plugin._annotations.clear()

    hook_s = _best(hook)
    rows = len(plugin._annotations)

    def expand() -> None:
        plugin.update_graph(scheduler, client="bench", tasks=keys)
        plugin._graphs.clear()
        plugin._expand()

    expand_s = _best(expand) - hook_s
    del futures
    return hook_s / n * 1e6, max(0.0, expand_s) / n * 1e6, rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as run, LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False,
            dashboard_address=None) as cluster, Client(cluster) as client:
        plugin = CorrelateSchedulerPlugin(run)
        plugin._start(cluster.scheduler)
        print(f"{args.tasks:,} tasks; per task, best of 5 (µs)")
        print(f"{'graph':>15} {'update_graph hook':>18} {'flush expansion':>16}")
        for how in ("none", "span", "span+annotate"):
            hook_us, expand_us, _ = measure(client, plugin, args.tasks, how)
            print(f"{how:>15} {hook_us:>18.2f} {expand_us:>16.2f}")
        plugin._close()


if __name__ == "__main__":
    main()
