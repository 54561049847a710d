"""Benchmark: reports of a large synthetic run (default 100k executions, 1M DXT segments).

Builds output tables directly with the output schemas (8 workers × 4 threads, 20 prefixes,
10 I/O segments and 5 profiled functions per execution, 3 scheduler transitions per task), then
times ``write_reports`` per kind and prints seconds and file sizes.

    .venv/bin/python benchmarks/bench_reports.py [--executions 100000] [--segments-per-task 10]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from correlate.reports import KINDS, write_reports
from correlate.schema import TABLES, conform

MS = 1_000_000
T0 = 1_700_000_000_000 * MS
WORKERS, THREADS, PREFIXES = 8, 4, 20


def tasks_table(n: int, rng: np.random.Generator) -> pl.DataFrame:
    lane = np.arange(n) % (WORKERS * THREADS)
    dur = rng.integers(5 * MS, 50 * MS, n)
    gap = rng.integers(0, 2 * MS, n)
    df = pl.DataFrame({"lane": lane, "dur": dur, "gap": gap, "i": np.arange(n)})
    df = df.with_columns(start=(pl.col("dur") + pl.col("gap")).cum_sum().over("lane")
                         - pl.col("dur") + T0)
    prefix = pl.format("prefix-{}", (pl.col("i") * 7919 % PREFIXES).cast(pl.String))
    worker = pl.col("lane") // THREADS
    return conform(df.select(
        execution_id=pl.col("i"), key=pl.format("{}-{}", prefix, pl.col("i")), prefix=prefix,
        worker=pl.format("tcp://10.0.0.{}:8786", worker), host=pl.format("node{}", worker),
        pid=1000 + worker, thread_id=(pl.col("lane") % THREADS + 100).cast(pl.UInt64),
        start_ns="start", stop_ns=pl.col("start") + pl.col("dur"),
        local_start_ns="start", local_stop_ns=pl.col("start") + pl.col("dur"),
        duration_s=pl.col("dur") / 1e9, cpu_s=pl.col("dur") / 2e9,
        read_bytes=pl.lit(5 * 65536.0), write_bytes=pl.lit(5 * 65536.0), read_ops=pl.lit(5.0),
        write_ops=pl.lit(5.0), io_time_s=pl.col("dur") / 1e10, attribution=pl.lit("exact-thread"),
        wait_thread_s=pl.lit(0.001), transfer_s=pl.lit(0.0), status=pl.lit("ok")),
        TABLES["tasks"])


def segments_table(tasks: pl.DataFrame, per_task: int) -> pl.DataFrame:
    rep = tasks.select("execution_id", "host", "pid", "thread_id", "start_ns", "duration_s")
    rep = rep.with_columns(j=pl.int_ranges(0, per_task)).explode("j")
    step = (pl.col("duration_s") * 1e9 / per_task).cast(pl.Int64)
    start = pl.col("start_ns") + pl.col("j") * step
    return conform(rep.with_row_index("seg_id").select(
        pl.col("seg_id").cast(pl.Int64), "host", "pid", "thread_id",
        path=pl.format("/data/file-{}.bin", (pl.col("execution_id") % 5000).cast(pl.String)),
        op=pl.when(pl.col("j") % 2 == 0).then(pl.lit("read")).otherwise(pl.lit("write")),
        offset=pl.col("j") * 65536, length=pl.lit(65536), start_ns=start,
        stop_ns=start + step // 10, execution_id="execution_id", attributed_weight=pl.lit(1.0),
        attribution=pl.lit("exact-thread")), TABLES["segments"])


def task_files_table(seg: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    agg = seg.group_by("execution_id", "path", "op").agg(
        bytes=pl.col("length").sum().cast(pl.Float64), ops=pl.len().cast(pl.Float64),
        io_time_s=((pl.col("stop_ns") - pl.col("start_ns")).sum() / 1e9))
    agg = agg.join(tasks.select("execution_id", "key"), on="execution_id")
    return conform(agg.with_columns(attribution=pl.lit("exact-thread")), TABLES["task_files"])


def functions_table(tasks: pl.DataFrame) -> pl.DataFrame:
    f = tasks.select("execution_id", "key", "duration_s").with_columns(
        j=pl.int_ranges(0, 5)).explode("j")
    return conform(f.select(
        "execution_id", "key", module=pl.lit("work"), name=pl.format("fn{}", pl.col("j")),
        file=pl.lit("/src/work.py"), line=pl.col("j") * 10, ncall=pl.lit(3),
        tsub_s=pl.col("duration_s") / 5, ttot_s="duration_s", clock=pl.lit("wall")),
        TABLES["task_functions"])


def events_table(tasks: pl.DataFrame) -> pl.DataFrame:
    parts = [tasks.select(time_ns=pl.col(col) + d, side=pl.lit("scheduler"), key="key",
                          worker=pl.lit(None, pl.String), host=pl.lit("sched"),
                          pid=pl.lit(1), start=pl.lit(a), finish=pl.lit(b))
             for col, d, a, b in (("start_ns", -MS, "released", "waiting"),
                                  ("start_ns", -MS // 2, "waiting", "processing"),
                                  ("stop_ns", MS, "processing", "memory"))]
    return conform(pl.concat(parts), TABLES["events"])


def build(out: Path, n: int, per_task: int) -> None:
    rng = np.random.default_rng(42)
    tasks = tasks_table(n, rng)
    seg = segments_table(tasks, per_task)
    tables = {"tasks": tasks, "segments": seg, "task_files": task_files_table(seg, tasks),
              "task_functions": functions_table(tasks), "events": events_table(tasks),
              "unattributed": TABLES["unattributed"].empty(), "clocks": TABLES["clocks"].empty()}
    out.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.write_parquet(out / f"{name}.parquet")
    summary = {"source_format": "synthetic", "executions": n, "tasks": n,
               "facts": {"command": "synthetic benchmark", "workers": WORKERS,
                         "nthreads": [THREADS]},
               "io": {"total": {"bytes": float(seg["length"].sum()), "ops": seg.height}},
               "warnings": [], "rejects": []}
    (out / "summary.json").write_text(json.dumps(summary, sort_keys=True))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--executions", type=int, default=100_000)
    p.add_argument("--segments-per-task", type=int, default=10)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        t = time.perf_counter()
        build(out, args.executions, args.segments_per_task)
        print(f"built {args.executions:,} executions, "
              f"{args.executions * args.segments_per_task:,} segments in "
              f"{time.perf_counter() - t:.2f} s")
        for kind in KINDS:
            t = time.perf_counter()
            written = write_reports(out, kinds=[kind])
            secs = time.perf_counter() - t
            sizes = ", ".join(f"{w.name} {w.stat().st_size / 2**20:.2f} MiB" for w in written)
            print(f"{kind:9s} {secs:6.2f} s   {sizes}")


if __name__ == "__main__":
    main()
