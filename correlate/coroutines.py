"""Coroutine executions: a task whose function is ``async def`` runs on the event loop,
interleaved with other coroutine tasks and Dask's own comms, so its window says little; its
active slices (``execution_slices``: the steps in which its coroutine ran) say when the loop
thread worked for it."""

from __future__ import annotations

import polars as pl

_KEYS = ["host", "pid", "execution_seq"]


def io_windows(executions: pl.DataFrame, slices: pl.DataFrame) -> pl.DataFrame:
    """The executions as I/O attribution sees them: a coroutine execution as one row per
    active slice (same ``execution_id``, the slice as its window), so that a segment of the
    loop thread goes exactly to the coroutine whose slice holds it, as a thread's segment goes
    to the task running on that thread (slices never overlap on the loop)."""
    if slices.is_empty():
        return executions
    spans = slices.select(*_KEYS, s_start="local_start_ns", s_stop="local_stop_ns")
    sliced = executions.join(spans, on=_KEYS, how="inner", nulls_equal=True).with_columns(
        local_start_ns="s_start", local_stop_ns="s_stop").drop("s_start", "s_stop")
    whole = executions.join(spans.select(_KEYS).unique(), on=_KEYS, how="anti",
                            nulls_equal=True)
    return pl.concat([whole, sliced])


def awaiting(executions: pl.DataFrame, slices: pl.DataFrame) -> pl.DataFrame:
    """execution_id, awaiting_s: per coroutine execution, its window minus its active slices
    (the time its coroutine spent suspended)."""
    running = slices.group_by(_KEYS).agg(
        running_ns=(pl.col("local_stop_ns") - pl.col("local_start_ns")).sum())
    return executions.join(running, on=_KEYS, how="inner", nulls_equal=True).select(
        "execution_id", awaiting_s=(pl.col("local_stop_ns") - pl.col("local_start_ns")
                                    - pl.col("running_ns")).clip(0) / 1e9)
