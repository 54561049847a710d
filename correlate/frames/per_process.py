"""Per-process values repeated over rows that come grouped by process.

Rows read from a run folder or from Darshan logs come one process after another; looking a
per-process value (a clock offset, an attribution method) up once per run of rows and repeating
it is much cheaper than joining every row, which copies all of its columns.
"""

from __future__ import annotations

from typing import Any

import polars as pl


def runs(df: pl.DataFrame) -> pl.DataFrame:
    """``host`` (a string, also where ``df`` holds it as Categorical), ``pid`` and ``len`` of
    each run of consecutive rows of one process, in order."""
    return (df.select(run=pl.struct("host", "pid").rle()).unnest("run").unnest("value")
            .with_columns(pl.col("host").cast(pl.String)))


def spread(per_run: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """``columns`` of ``per_run`` (one row per run, with its ``len``) repeated for every row of
    its run."""
    index = per_run.select(pl.int_range(pl.len(), dtype=pl.UInt32).repeat_by("len")
                           .explode()).to_series()
    return per_run.select(columns)[index]


def process_order(process: tuple[Any, Any]) -> tuple[Any, ...]:
    """Sort key of a (host, pid): the order ``execution_id`` is numbered in (nulls last)."""
    host, pid = process
    return (host is None, host or "", pid is None, pid or 0)


def in_process_order(runs_of: pl.DataFrame) -> bool:
    """Whether ``runs_of`` (what ``runs`` found in a frame) names each process once, in
    ``process_order``: the frame's rows grouped by process, the processes sorted."""
    keys = [process_order(p) for p in runs_of.select("host", "pid").iter_rows()]
    return all(a < b for a, b in zip(keys, keys[1:], strict=False))
