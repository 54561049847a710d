"""Benchmark: what the critical path and the findings (``correlate.findings.analyse``) cost at
1M task executions, against the tables-only ``correlate`` of the 1M + 10M synthetic run
(its figure is in docs/performance.md, "correlate at scale"; the target is at most 10% of it).
Wall and CPU (every thread of the process) are printed: on a loaded host the CPU is the figure
that compares.

The tables are built in memory, shaped as the synthetic run's are: 8 workers × 4 threads,
chains of three prefixes (load → transform → store), each thread running its executions back
to back, one task_files row per execution (a fifth of them in small requests).

Then the CPU of the critical path and of each rule, once each.

    python benchmarks/bench_findings.py [--executions 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import polars as pl

from correlate.findings import Evidence, analyse, critical_path, rules
from correlate.findings.context import Context
from correlate.frames.scalars import integer
from correlate.schema import TABLES, conform

PREFIXES = ("load-chunk", "transform", "store-chunk")


def tables(n: int, workers: int = 8, threads: int = 4, seed: int = 0
           ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """tasks, task_files, dependencies and the scheduler's times of ``n`` executions."""
    rng = np.random.default_rng(seed)
    lanes = workers * threads
    ids = np.arange(n)
    lane = ids % lanes
    dur = rng.gamma(2.0, 5e6, n).astype(np.int64)  # ~10 ms each
    gap = rng.integers(50_000, 500_000, n)
    # each lane runs its executions back to back: start = cumulative (dur + gap) within a lane
    order = np.lexsort((ids, lane))
    step = (dur + gap)[order]
    start = np.empty(n, dtype=np.int64)
    lane_sorted = lane[order]
    cum = np.cumsum(step) - step
    first = np.r_[0, np.flatnonzero(np.diff(lane_sorted)) + 1]
    base = np.repeat(cum[first], np.diff(np.r_[first, n]))
    start[order] = cum - base
    start += 1_790_000_000_000_000_000
    chain, step_of = ids // 3, ids % 3
    keys = [f"{PREFIXES[s]}-{c:x}-{s}" for c, s in zip(chain.tolist(), step_of.tolist(), strict=True)]
    cpu = dur * rng.uniform(0.2, 0.9, n) * 1e-9
    io = dur * rng.uniform(0.0, 0.3, n) * 1e-9
    tasks = pl.DataFrame({
        "execution_id": ids, "key": keys, "prefix": [PREFIXES[s] for s in step_of.tolist()],
        "worker": (lane // threads).astype(str), "host": "node", "pid": lane // threads,
        "thread_id": lane.astype(np.uint64), "start_ns": start, "stop_ns": start + dur,
        "duration_s": dur * 1e-9, "cpu_s": cpu, "io_time_s": io, "status": "ok",
        "wait_thread_s": rng.uniform(0, 1e-3, n), "wait_queued_s": None,
    })
    # the engine numbers executions by process, then start (``engine.number_executions``)
    tasks = tasks.sort("pid", "start_ns").with_columns(
        execution_id=pl.int_range(pl.len(), dtype=pl.Int64))
    tasks = conform(tasks, TABLES["tasks"])
    deps = pl.DataFrame({"key": keys, "prev": [None] + keys[:-1], "s": step_of}).filter(
        pl.col("s") > 0).select("key", depends_on="prev")
    small = rng.random(n) < 0.2
    nbytes = np.where(small, 2_000_000, 64_000_000).astype(float)
    ops = np.where(small, 2_000, 16).astype(float)
    files = conform(pl.DataFrame({
        "execution_id": tasks.join(pl.DataFrame({"key": keys}), on="key", how="right",
                                   maintain_order="right")["execution_id"], "key": keys, "path": [f"/data/{c % 1000}.bin" for c in chain],
        "op": "read", "bytes": nbytes, "ops": ops, "io_time_s": io, "attribution":
        "exact-thread"}), TABLES["task_files"])
    times = tasks.select("key", submitted_ns=pl.col("start_ns").min(),
                         assigned_ns=pl.col("start_ns") - 100_000)
    return tasks, files, deps, times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--executions", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    tasks, files, deps, times = tables(args.executions)
    took, cpu, found = [], [], None
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        found = analyse(tasks, files, deps, times, Evidence(io_captured=True, dxt=True))
        took.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert found is not None
    print(f"analyse at {args.executions:,} executions: median {statistics.median(took):.2f} s "
          f"wall, {statistics.median(cpu):.2f} s CPU (all threads; runs "
          f"{', '.join(f'{t:.2f}/{c:.2f}' for t, c in zip(took, cpu, strict=True))}); path "
          f"{found.critical_path.height:,} "
          f"links, {found.findings.height} finding(s): "
          f"{', '.join(found.findings['kind'].to_list())}")
    print("CPU s per part, once each: " + ", ".join(
        f"{name} {cpu:.2f}" for name, cpu in per_part(tasks, files, deps, times)))


def per_part(tasks: pl.DataFrame, files: pl.DataFrame, deps: pl.DataFrame,
             times: pl.DataFrame) -> list[tuple[str, float]]:
    """(part, CPU seconds): the critical path, then each rule over it (as ``rules.findings``
    calls them)."""
    c0 = time.process_time()
    path = critical_path.critical_path(tasks, deps, times)
    out = [("critical path", time.process_time() - c0)]
    window = ((integer(tasks["stop_ns"].max()) or 0)
              - (integer(tasks["start_ns"].min()) or 0)) * 1e-9
    ctx = Context(tasks, files, path, Evidence(io_captured=True, dxt=True), window,
                  tasks.select("host", "pid", "thread_id").unique().height,
                  float(tasks["duration_s"].sum()))
    for rule in rules.RULES:
        c0 = time.process_time()
        rule(ctx)
        out.append((rule.__name__, time.process_time() - c0))
    return out


if __name__ == "__main__":
    main()
