"""Coroutine executions: a task whose function is ``async def`` runs on the event loop,
interleaved with other coroutine tasks and Dask's own comms, so its window says little; its
active slices (``execution_slices``: the steps in which its coroutine ran) say when the loop
thread worked for it."""

from __future__ import annotations

import polars as pl

from correlate.frames.beside import beside

_KEYS = ["host", "pid", "execution_seq"]


def by_slices(rows: pl.DataFrame, slices: pl.DataFrame, on: list[str], **columns: str
              ) -> pl.DataFrame:
    """``rows`` with each row that has slices (joined ``on``) replaced by one row per slice,
    whose ``columns`` (row column = slice column) take the slice's values."""
    if slices.is_empty():
        return rows
    sliced = rows.drop(*columns).join(
        slices.select(*on, **{col: src for col, src in columns.items()}), on=on,
        how="inner", nulls_equal=True)
    whole = rows.join(slices.select(on).unique(), on=on, how="anti", nulls_equal=True)
    return pl.concat([whole, sliced.select(rows.columns)])


def io_windows(executions: pl.DataFrame, slices: pl.DataFrame) -> pl.DataFrame:
    """The executions as I/O attribution sees them: a coroutine execution as one row per
    active slice (same ``execution_id``, the slice as its window), so that a segment of the
    loop thread goes exactly to the coroutine whose slice holds it, as a thread's segment goes
    to the task running on that thread (slices never overlap on the loop)."""
    return by_slices(executions, slices, _KEYS, local_start_ns="local_start_ns",
                     local_stop_ns="local_stop_ns")


def drawn(tasks: pl.DataFrame, slices: pl.DataFrame) -> pl.DataFrame:
    """``tasks`` (output rows) as timelines draw them: a coroutine execution as its active
    slices (``slices`` output rows) on the loop's lane, each with its own CPU, so that
    interleaved coroutines do not cover each other."""
    return by_slices(tasks, slices, ["execution_id"], start_ns="start_ns", stop_ns="stop_ns",
                     cpu_s="cpu_s")


def timeline_slices(executions: pl.DataFrame, slices: pl.DataFrame) -> pl.DataFrame:
    """The ``slices`` output: execution_id, start/stop on the run timeline (the execution's
    own shift onto it, from its aligned window) and CPU."""
    shift = pl.col("start_ns") - pl.col("local_start_ns")
    return slices.join(executions.select(*_KEYS, "execution_id", shift=shift), on=_KEYS,
                       how="inner", nulls_equal=True).select(
        "execution_id", start_ns=pl.col("local_start_ns") + pl.col("shift"),
        stop_ns=pl.col("local_stop_ns") + pl.col("shift"), cpu_s="cpu_s")


def with_awaiting(executions: pl.DataFrame, slices: pl.DataFrame) -> pl.DataFrame:
    """``executions`` with ``awaiting_s``: a coroutine execution's window minus its active
    slices (the time its coroutine spent suspended); null for tasks run on a thread."""
    running = slices.group_by(_KEYS).agg(
        running_ns=(pl.col("local_stop_ns") - pl.col("local_start_ns")).sum())
    # (its column put beside the executions, which a join would copy: one row per execution)
    return executions.hstack(beside(executions, running, _KEYS, nulls_equal=True)
                             ).with_columns(
        awaiting_s=(pl.col("local_stop_ns") - pl.col("local_start_ns") - pl.col("running_ns"))
        .clip(0) / 1e9).drop("running_ns")
