"""group_agg's ``where``: rows it does not keep (False or null) are left out of every group;
a ``where`` that keeps every row gives what no ``where`` gives."""

from __future__ import annotations

import polars as pl

from correlate.frames.grouping import group_agg, measured_sum
from correlate.reports import aggregate as agg
from correlate.timeline.endings import HANDED_BACK


def test_rows_not_kept_are_left_out_of_their_group() -> None:
    df = pl.DataFrame({"g": ["a", "a", "b", "b", "b"], "x": [1.0, 2.0, 4.0, 8.0, 16.0],
                       "keep": [True, False, True, None, True], "other": ["u"] * 5})
    got = group_agg(df, ["g"], where=pl.col("keep"), n=pl.len(), x=pl.col("x").sum())
    assert got.rows() == [("a", 1, 1.0), ("b", 2, 20.0)]
    assert got.columns == ["g", "n", "x"]


def test_a_where_that_keeps_every_row_is_no_where() -> None:
    df = pl.DataFrame({"g": ["b", "a", "b"], "x": [0.1, 0.2, 0.3]})
    every = group_agg(df, ["g"], where=pl.col("x") > 0, x=measured_sum("x"), n=pl.len())
    assert every.equals(group_agg(df, ["g"], x=measured_sum("x"), n=pl.len()))


def test_prefixes_count_runs_only() -> None:
    handed_back = sorted(HANDED_BACK)[0]
    tasks = pl.DataFrame({
        "prefix": ["p", "p", "p"], "status": ["ok", handed_back, None],
        "duration_s": [1.0, 10.0, 2.0], "cpu_s": [0.5, 5.0, 1.0], "io_time_s": [None] * 3,
        "read_bytes": [None] * 3, "write_bytes": [None] * 3, "read_ops": [None] * 3,
        "write_ops": [None] * 3}, schema_overrides={c: pl.Float64 for c in (
            "io_time_s", "read_bytes", "write_bytes", "read_ops", "write_ops")})
    row = agg.prefixes(tasks).row(0, named=True)
    assert (row["executions"], row["wall_s"], row["cpu_s"]) == (2, 3.0, 1.5)
    assert row["io_s"] is None  # not measured, not 0
