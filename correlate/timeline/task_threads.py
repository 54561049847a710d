"""Which recorded executions are Dask's own: one per task body a worker ran.

The collectors time every call a worker's thread pools run while a task's context is current
(``collectors.worker_plugin`` wraps their ``submit``, and the task's context travels with the
code it starts). Dask runs the task body on an executor thread; code the task started can
carry its context onto another of the worker's pools and be timed again under the same
execution number: a P2P transfer task's comm buffer, for one, goes on sending after the task
returned and serialises each large message on Dask's offload thread. Such a record is task
code on another thread, not an execution: counting it as one adds a lane that never ran a task
body, its thread time and a lower busy share, and more runs of the task.

So one record per (process, ``execution_seq``) is the execution: the first to start (the task
body is submitted before anything it starts can run). The others are kept apart, named by
their thread, and add nothing to executions, lanes or thread time.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.frames.prefixes import key_splits

_SEQ = ["host", "pid", "execution_seq"]


def split(executions: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the executions, the records of task code timed on another thread under an
    execution's number). Records without ``execution_seq`` (imported runs) are executions."""
    if executions.is_empty() or executions.get_column("execution_seq").is_null().all():
        return executions, executions.clear()
    # (the usual run has one record per number: then the table is returned as it is, not
    # ranked and filtered, which copies every column of a big run's executions twice)
    seq = pl.col("execution_seq")
    if executions.select(pl.struct(_SEQ).filter(seq.is_not_null()).n_unique()
                         == seq.count()).item():
        return executions, executions.clear()
    first = (pl.col("local_start_ns").rank("ordinal").over(_SEQ, order_by="local_start_ns")
             == 1)
    own = pl.col("execution_seq").is_null() | first.fill_null(True)
    marked = executions.with_columns(_own=own)
    return (marked.filter("_own").drop("_own"), marked.filter(~pl.col("_own")).drop("_own"))


def summary(other: pl.DataFrame, executions: pl.DataFrame) -> list[dict[str, Any]]:
    """summary.json's ``task_code_on_other_threads``: per thread that ran such records, its
    timed calls, their seconds and prefixes, and whether it ran task bodies too
    (``executor_thread``: a task's code handed to the worker's own executor); empty: none."""
    if other.is_empty():
        return []
    body = executions.select("host", "pid", "thread_id").unique().with_columns(
        executor_thread=pl.lit(True))
    other = other.with_columns(prefix=pl.coalesce("prefix", key_splits(other.get_column("key"))))
    rows = (other.group_by("host", "pid", "worker", "thread_id")
            .agg(calls=pl.len(),
                 seconds=((pl.col("local_stop_ns") - pl.col("local_start_ns")).sum() * 1e-9)
                 .round(6),
                 prefixes=pl.col("prefix").unique().sort())
            .join(body, on=["host", "pid", "thread_id"], how="left", nulls_equal=True)
            .with_columns(pl.col("executor_thread").fill_null(False))
            .sort("host", "pid", "thread_id", nulls_last=True))
    return [{**r, "prefixes": list(r["prefixes"])} for r in rows.iter_rows(named=True)]


def sentences(listed: list[dict[str, Any]] | None) -> list[str]:
    """One line per such thread, for the terminal and the reports."""
    out = []
    for r in listed or []:
        worker = r["worker"] or f"{r['host']}:{r['pid']}"
        what = (f"{r['calls']:,} timed call(s), {r['seconds']:.3f} s, are not executions and "
                "not in thread time")
        prefixes = ", ".join(r["prefixes"][:4])
        out.append(
            f"executor thread {r['thread_id']} of worker {worker} also ran code tasks had "
            f"started ({prefixes}) under their execution: {what}" if r["executor_thread"]
            else f"thread {r['thread_id']} of worker {worker} ran code tasks had started "
            f"({prefixes}) but no task body: not an executor thread (another of the worker's "
            f"thread pools, e.g. Dask's offload thread serialising a P2P shuffle's messages); "
            f"its {what}")
    return out
