"""How many times a file's bytes were read (``aggregate.with_read_times``), on literal tables:
the DXT ranges' union against the bytes read, and null where DXT did not see every read."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.reports import aggregate as agg
from correlate.schema import TABLES, conform


def _files(rows: list[tuple[str, str, float, float]]) -> pl.DataFrame:
    task_files = conform(pl.DataFrame(
        [(i, f"k{i}", path, op, nbytes, ops, 0.1, "exact-thread")
         for i, (path, op, nbytes, ops) in enumerate(rows)],
        schema=["execution_id", "key", "path", "op", "bytes", "ops", "io_time_s",
                "attribution"], orient="row"), TABLES["task_files"], path="task_files")
    return agg.files(task_files, TABLES["unattributed"].empty())


def _segments(rows: list[tuple[str, str, int, int]]) -> pl.LazyFrame:
    return conform(pl.DataFrame(
        [(i, path, op, offset, length) for i, (path, op, offset, length) in enumerate(rows)],
        schema=["seg_id", "path", "op", "offset", "length"], orient="row"),
        TABLES["segments"], path="segments").lazy()


def test_overlapping_reads_count_each_byte_once():
    # GIVEN /a read whole twice (0-100, then 0-60 and 40-100) and /b read once
    files = _files([("/a", "read", 100.0, 1.0), ("/a", "read", 120.0, 2.0),
                    ("/b", "read", 50.0, 1.0), ("/b", "write", 10.0, 1.0)])
    segments = _segments([("/a", "read", 0, 100), ("/a", "read", 0, 60),
                          ("/a", "read", 40, 60), ("/b", "read", 0, 50),
                          ("/b", "write", 50, 10)])
    # WHEN the times read are added THEN /a: 220 bytes for 100 distinct, /b: once
    out = agg.with_read_times(files, segments).sort("path")
    assert out["distinct_read_bytes"].to_list() == [100, 50]
    assert out["read_times"].to_list() == pytest.approx([2.2, 1.0])
    assert out["read_ops"].to_list() == [3.0, 1.0]
    assert out["read_mean_bytes"].to_list() == pytest.approx([220 / 3, 50.0])
    assert out["write_mean_bytes"].to_list() == [None, 10.0]  # /a wrote nothing: no mean


def test_reads_dxt_did_not_trace_leave_the_times_unknown():
    # GIVEN /a's reads partly seen by DXT only (the rest: counters or C stdio), /b not at all,
    # and /c written only
    files = _files([("/a", "read", 200.0, 2.0), ("/b", "read", 10.0, 1.0),
                    ("/c", "write", 5.0, 1.0)])
    segments = _segments([("/a", "read", 0, 100), ("/c", "write", 0, 5)])
    # WHEN / THEN unknown: not 1.0 (nor 2.0) stated as fact
    out = agg.with_read_times(files, segments).sort("path")
    assert out["read_times"].to_list() == [None, None, None]
    assert out["distinct_read_bytes"].to_list() == [None, None, None]
