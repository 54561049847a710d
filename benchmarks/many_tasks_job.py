"""Jobs of many short tasks for ``bench_many_tasks.py`` (run plain or under ``collect``). Each
starts a LocalCluster of 2 worker processes x 2 threads, runs one workload and prints
``compute_seconds=`` (the workload alone, cluster start-up excluded), ``tasks=`` and
``cpu_roles=`` (the CPU seconds the scheduler's process and the workers together used during
the workload, each process's ``time.process_time()`` before and after; a LocalCluster runs its
scheduler in the client's process, so the first holds the client's work too).

    python benchmarks/many_tasks_job.py tiles --out /tmp/tiles [--tiles 600]
    python benchmarks/many_tasks_job.py noop [--tasks 5000]
    python benchmarks/many_tasks_job.py coro [--tasks 3000]

- ``tiles``: an image-processing-like job of 5 tasks per tile (1-20 ms each): read a 256 KiB
  tile from its file in 64 KiB reads, smooth it (numpy), a little pure-Python statistics,
  combine it with its neighbour tile (which usually lives on the other worker, so data moves
  between workers), write a mask in 16 KiB writes.
- ``noop``: ``client.map(inc, range(N))``: Dask's own cost per task, and the collectors'.
- ``coro``: ``async def`` tasks awaiting a few times each (run on the workers' event loops).

``--yappi-alone`` starts Yappi in every worker as ``collect --profile yappi`` does (wall clock,
every thread but the event loop) with no collectors, no tags and no reading of its tables:
what Yappi's per-call hook alone costs the job, the floor of any Yappi-based profile.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

import numpy as np

TILE = 256  # 256 x 256 float32 = 256 KiB


def read_tile(path: str) -> np.ndarray:
    chunks = []
    with open(path, "rb", buffering=0) as fh:
        while True:
            b = fh.read(65536)
            if not b:
                break
            chunks.append(b)
    return np.frombuffer(b"".join(chunks), dtype=np.float32).reshape(TILE, TILE).copy()


def smooth(tile: np.ndarray) -> np.ndarray:
    out = tile
    for _ in range(6):
        out = (out + np.roll(out, 1, 0) + np.roll(out, -1, 0) + np.roll(out, 1, 1)
               + np.roll(out, -1, 1)) / 5
    return out


def _bucket(v: float) -> int:
    return int(v * 4) if v > 0 else 0


def py_stats(tile: np.ndarray) -> dict[int, int]:
    """Pure-Python work: a histogram of a sample of the tile, one call per value."""
    hist: dict[int, int] = {}
    for v in tile[::8, ::8].ravel().tolist():
        b = _bucket(v)
        hist[b] = hist.get(b, 0) + 1
    return hist


def combine(a: np.ndarray, b: np.ndarray, stats: dict[int, int]) -> np.ndarray:
    return (a + b) * 0.5 > (max(stats) / 8 if stats else 0)


def write_mask(mask: np.ndarray, path: str) -> int:
    data = np.packbits(mask).tobytes() * 8  # 64 KiB
    with open(path, "wb", buffering=0) as fh:
        for i in range(0, len(data), 16384):
            fh.write(data[i:i + 16384])
    return int(mask.sum())


def inc(x: int) -> int:
    return x + 1


async def coro_task(i: int) -> int:
    for _ in range(3):
        await asyncio.sleep(0)
    await asyncio.sleep(0.001)
    return i + 1


def yappi_alone_plugin():
    from distributed.diagnostics.plugin import WorkerPlugin

    class YappiAlone(WorkerPlugin):
        name = "yappi-alone"

        def setup(self, worker) -> None:  # on the worker's event loop
            import sys

            import yappi

            yappi.set_clock_type("wall")
            yappi.start(builtins=False, profile_threads=True)
            sys.setprofile(None)

    return YappiAlone()


def make_tiles(folder: Path, n: int) -> list[str]:
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, (TILE, TILE)).astype(np.float32)
    paths = []
    for i in range(n):
        p = folder / f"tile-{i:05d}.raw"
        if not p.exists():
            np.roll(base, i, 0).tofile(p)
        paths.append(str(p))
    return paths


def tiles_job(client, folder: Path, n: int) -> int:
    paths = make_tiles(folder, n)
    t0 = time.perf_counter()
    raw = client.map(read_tile, paths, key=[f"read-{i}" for i in range(n)])
    sm = client.map(smooth, raw, key=[f"smooth-{i}" for i in range(n)])
    st = client.map(py_stats, sm, key=[f"stats-{i}" for i in range(n)])
    comb = [client.submit(combine, sm[i], sm[(i + 1) % n], st[i], key=f"combine-{i}")
            for i in range(n)]
    out = client.map(write_mask, comb, [str(folder / f"mask-{i:05d}.raw") for i in range(n)],
                     key=[f"write-{i}" for i in range(n)])
    total = sum(client.gather(out))
    print(f"compute_seconds={time.perf_counter() - t0:.4f}")
    print(f"foreground={total}")
    return 5 * n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("workload", choices=("tiles", "noop", "coro"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/dask-correlate-tiles"))
    ap.add_argument("--tiles", type=int, default=600)
    ap.add_argument("--tasks", type=int, default=5000)
    ap.add_argument("--yappi-alone", action="store_true")
    args = ap.parse_args()
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        if args.yappi_alone:
            client.register_plugin(yappi_alone_plugin())
        before = role_cpu(client)
        if args.workload == "tiles":
            args.out.mkdir(parents=True, exist_ok=True)
            tasks = tiles_job(client, args.out, args.tiles)
        else:
            fn = inc if args.workload == "noop" else coro_task
            t0 = time.perf_counter()
            futures = client.map(fn, range(args.tasks))
            client.gather(futures)
            print(f"compute_seconds={time.perf_counter() - t0:.4f}")
            tasks = args.tasks
        print(f"tasks={tasks}")
        after = role_cpu(client)
        print("cpu_roles=" + ",".join(f"{b - a:.4f}" for a, b in zip(before, after, strict=True)))
        os.sys.stdout.flush()


def role_cpu(client) -> tuple[float, float]:
    """CPU seconds so far of the scheduler's process and of the workers together."""
    return (client.run_on_scheduler(time.process_time),
            sum(client.run(time.process_time).values()))


if __name__ == "__main__":
    main()
