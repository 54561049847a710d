"""Values held once per process — a clock offset, an attribution method — put on every row of
a large frame of that process's records.

Joining the frame itself to the small per-process table would copy every column of it (1.25M
segments × 20 columns, for one value). Rows come grouped by process (a partition, a run
folder's parts, a Darshan log), so the value is looked up once per run of rows of one process
and repeated.
"""

from __future__ import annotations

import polars as pl


def runs(df: pl.DataFrame) -> pl.DataFrame:
    """``host``, ``pid`` and ``len`` of each run of consecutive rows of one process, in order."""
    return df.select(run=pl.struct("host", "pid").rle()).unnest("run").unnest("value")


def spread(per_run: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """``columns`` of ``per_run`` (one row per run, with its ``len``) repeated for every row of
    its run."""
    index = per_run.select(pl.int_range(pl.len(), dtype=pl.UInt32).repeat_by("len")
                           .explode()).to_series()
    return per_run.select(columns)[index]


def lookup(df: pl.DataFrame, per_process: pl.DataFrame) -> pl.DataFrame:
    """The columns of ``per_process`` (one row per host, pid) for every row of ``df``, in its
    order; null for a process it does not have."""
    got = runs(df).join(per_process, on=["host", "pid"], how="left", nulls_equal=True,
                        maintain_order="left")
    return spread(got, [c for c in per_process.columns if c not in ("host", "pid")])
