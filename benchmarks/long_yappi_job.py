"""The long job of ``bench_yappi_long.py``: N short tasks, each calling 7 small Python
functions, on a LocalCluster of 2 workers × 1 thread, submitted in batches; prints the workers'
RSS after the first 10,000 tasks and after the last as ``rss_mb=<at 10k>,<at end>`` (per
worker, MB), after every batch as ``rss_trace=<tasks>:<MB>,<MB>;...``, and ``tasks=N``.
``long_yappi_job.py N [threads per worker, default 1]``"""

from __future__ import annotations

import sys

from distributed import Client, LocalCluster


def f1(x): return x + 1  # noqa: E704
def f2(x): return f1(x) * 2  # noqa: E704
def f3(x): return f2(x) - 1  # noqa: E704
def f4(x): return f3(x) + f1(x)  # noqa: E704
def f5(x): return f4(x) % 97  # noqa: E704
def f6(x): return f5(x) + f2(x)  # noqa: E704


def work(x: int) -> int:
    return f6(x) + f5(x)


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


if __name__ == "__main__":
    n = int(sys.argv[1])
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    batch = 10_000
    with LocalCluster(n_workers=2, threads_per_worker=threads, memory_limit=0,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        at_10k = None
        trace = []
        for start in range(0, n, batch):
            keys = [f"work-{i}" for i in range(start, min(n, start + batch))]
            client.gather(client.map(work, range(start, start + len(keys)), key=keys))
            rss = sorted(client.run(rss_mb).values())
            trace.append(f"{start + len(keys)}:" + ",".join(f"{r:.0f}" for r in rss))
            if at_10k is None:
                at_10k = rss
        at_end = sorted(client.run(rss_mb).values())
        print("rss_trace=" + ";".join(trace))
        print("rss_mb=" + ";".join(f"{a:.1f},{b:.1f}" for a, b in zip(at_10k, at_end, strict=True)))
        print(f"tasks={n}")
