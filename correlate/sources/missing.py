"""What a run folder lacks, counted from the run's own records: executions the scheduler saw
finish on a worker that has no row for them, and why (the worker was killed some seconds after
its last flush, its writes failed, it still ran them at its close, or the job may still be
running because the manifest has no exit code).

The scheduler logs ``processing -> memory|erred`` with the worker that ran the task; each such
transition is one execution on that worker. Executions the collectors already counted (rows
dropped, executions running at close) are not counted twice."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl

from correlate.frames.scalars import integer
from correlate.frames.spill import parts_for, parts_of

#: scheduler transitions that end an execution on a worker
FINISHED = ("memory", "erred")


def finished_per_worker(sched: pl.LazyFrame) -> pl.DataFrame:
    """(worker, key, n): executions the scheduler saw finish, per worker and key."""
    return (sched.filter((pl.col("start") == "processing") & pl.col("finish").is_in(FINISHED)
                         & pl.col("worker").is_not_null())
            .group_by("worker", "key").agg(n=pl.len()).collect())


#: the stimulus of Dask's scheduler when it takes back the tasks of a worker that left
WORKER_CLEANUP = "handle-worker-cleanup-"


def interrupted(sched: pl.LazyFrame) -> int:
    """Tasks the scheduler took back from a worker that died or left while they were
    processing there (``processing -> released`` by its worker cleanup), to run them again:
    an execution that had started on that worker ended without a row. An upper bound: a task
    still queued on the worker counts too (Dask does not say which had started)."""
    return int(sched.filter((pl.col("start") == "processing")
                            & (pl.col("finish") == "released")
                            & pl.col("stimulus_id").str.starts_with(WORKER_CLEANUP))
               .select(pl.len()).collect().item())


def recorded_per_worker(executions: pl.DataFrame) -> pl.DataFrame:
    if executions.is_empty() or "worker" not in executions.columns:
        return pl.DataFrame(schema={"worker": pl.String, "key": executions.schema.get(
            "key", pl.Categorical), "got": pl.UInt32})
    return executions.group_by("worker", "key").agg(got=pl.len())


def missing_per_worker(finished: pl.DataFrame, executions: pl.DataFrame) -> dict[str, int]:
    """worker -> executions the scheduler saw finish there (``finished_per_worker``) without a
    row. Counted a part of the keys at a time (``spill.parts_of``): a run's executions grouped
    by worker and key whole would hold as many groups as tasks, twice."""
    if finished.is_empty():
        return {}
    if "worker" in executions.columns:  # (a part's filter copies every column it holds)
        executions = executions.select("worker", "key")
    parts = parts_for(max(finished.height, executions.height), ROWS_PER_PART)
    if parts > 1:  # each row's part, found once (a key without text: the first part's)
        ex_part, finished_part = (
            pl.select(pl.when(df.get_column("key").is_null()).then(0)
                      .otherwise(parts_of(df.get_column("key"), parts))).to_series()
            for df in (executions, finished))
    gaps: dict[str, int] = {}
    for p in range(parts):
        r = recorded_per_worker(executions.filter(ex_part == p) if parts > 1 else executions)
        gap = ((finished.filter(finished_part == p) if parts > 1 else finished)
               .join(r, on=["worker", "key"], how="left")
               .with_columns(gap=(pl.col("n").cast(pl.Int64)
                                  - pl.col("got").fill_null(0).cast(pl.Int64)).clip(0))
               .group_by("worker").agg(pl.col("gap").sum()))
        for w, g in gap.iter_rows():
            gaps[w] = gaps.get(w, 0) + int(g)
    # rows whose key text was lost with their process's strings are there (and counted as
    # rejects of their own): they fill the worker's gap, though no key can say which
    if "worker" in executions.columns:
        for w, n in (executions.filter(pl.col("key").is_null()).group_by("worker").len()
                     .iter_rows()):
            if w in gaps:
                gaps[w] -= int(n)
    return {w: g for w, g in gaps.items() if g > 0}


#: rows of the executions or finished tasks counted at once (``missing_per_worker``)
ROWS_PER_PART = 2_000_000


def last_flush_ns(proc_dir: Path) -> int | None:
    """When the process last completed a write (its newest part or snapshot file)."""
    times = [p.stat().st_mtime_ns for p in proc_dir.glob("*/*") if p.is_file()
             and not p.name.startswith(".")]
    return max(times, default=None)


def removed_ns(events: pl.DataFrame | None, worker: str) -> int | None:
    """When the scheduler saw ``worker`` leave (its last remove_worker event)."""
    if events is None or events.is_empty():
        return None
    t = events.filter((pl.col("event") == "remove_worker") & (pl.col("address") == worker))
    return integer(t["local_time_ns"].max())  # None: no such event


def reason(proc_dir: Path | None, closed: dict[str, Any] | None, worker: str,
           events: pl.DataFrame | None, job_ended: bool) -> str:
    """Why a worker's executions are missing, from what its folder and the scheduler say."""
    if proc_dir is None:
        return "the worker recorded nothing (no process folder: not started with the collectors)"
    if closed is not None:
        failed = closed.get("write_errors") or {}
        if isinstance(failed, dict) and failed:
            return ("its writes failed: " + ", ".join(f"{r}" for r in sorted(failed))
                    + "; not counted by the collector")
        return "closed cleanly, yet no row: not explained by the run's records"
    last = last_flush_ns(proc_dir)
    gone = removed_ns(events, worker)
    if not job_ended:
        return ("the job may still be running, or `collect` was killed: manifest.json has no "
                "exit code and the worker did not close")
    if last is not None and gone is not None and gone >= last:
        return f"killed {(gone - last) / 1e9:.1f} s after its last flush"
    return "killed or crashed before it closed (no closing record in its proc.json)"


def job_ended(manifest: dict[str, Any] | None) -> bool:
    """Whether the job is known to have ended: an exit code from `collect`, or a manifest not
    written by `collect` (which cannot know)."""
    if manifest is None or manifest.get("recorded_by") != "collect":
        return True
    return isinstance(manifest.get("exit_code"), int)


def name_of(proc_dir: Path) -> str:
    return os.path.basename(proc_dir)
