"""Per-process values repeated over rows that come grouped by process.

Rows read from a run folder or from Darshan logs come one process after another; looking a
per-process value (a clock offset, an attribution method) up once per run of rows and repeating
it is much cheaper than joining every row, which copies all of its columns.
"""

from __future__ import annotations

from typing import Any

import polars as pl

#: a process: (host, pid)
Process = tuple[Any, Any]


def runs(df: pl.DataFrame) -> pl.DataFrame:
    """``host`` (a string, also where ``df`` holds it as Categorical), ``pid`` and ``len`` of
    each run of consecutive rows of one process, in order."""
    return (df.select(run=pl.struct("host", "pid").rle()).unnest("run").unnest("value")
            .with_columns(pl.col("host").cast(pl.String)))


def _contiguous_runs(df: pl.DataFrame) -> list[tuple[Process, int, int]] | None:
    """((host, pid), offset, length) of each run of equal (host, pid) when every process's rows
    are contiguous (the Darshan reader appends one log at a time), else None."""
    if df.is_empty():
        return []
    got = runs(df)
    if got.select("host", "pid").n_unique() != got.height:
        return None
    offsets = got.select(pl.col("len").cum_sum() - pl.col("len")).to_series()
    return [((h, p), o, n) for h, p, o, n in zip(got["host"], got["pid"], offsets, got["len"],
                                                 strict=True)]


def by_process(df: pl.DataFrame) -> dict[Process, pl.DataFrame]:
    """``df``'s rows per (host, pid): zero-copy slices when each process's rows are
    contiguous (as read from a run folder or Darshan logs)."""
    found = _contiguous_runs(df)
    if found is None:
        return df.partition_by("host", "pid", as_dict=True)
    return {k: df.slice(o, n) for k, o, n in found}  # zero-copy slices


def spread(per_run: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """``columns`` of ``per_run`` (one row per run, with its ``len``) repeated for every row of
    its run."""
    index = per_run.select(pl.int_range(pl.len(), dtype=pl.UInt32).repeat_by("len")
                           .explode()).to_series()
    return per_run.select(columns)[index]


def process_order(process: Process) -> tuple[Any, ...]:
    """Sort key of a (host, pid): the order ``execution_id`` is numbered in (nulls last)."""
    host, pid = process
    return (host is None, host or "", pid is None, pid or 0)


def in_process_order(runs_of: pl.DataFrame) -> bool:
    """Whether ``runs_of`` (what ``runs`` found in a frame) names each process once, in
    ``process_order``: the frame's rows grouped by process, the processes sorted."""
    keys = [process_order(p) for p in runs_of.select("host", "pid").iter_rows()]
    return all(a < b for a, b in zip(keys, keys[1:], strict=False))
