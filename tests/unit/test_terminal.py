"""The terminal summary's tables."""

from __future__ import annotations

import polars as pl

from correlate.reports.terminal import _file_rows, _files, _request_rows
from correlate.schema import TABLES, conform

NONE_OUTSIDE = TABLES["unattributed"].empty()


def test_busiest_files_count_distinct_tasks_of_the_files_shown():
    files = conform(pl.DataFrame({
        "execution_id": [1, 2, 3, 1, 1, 4, 5],
        "path": ["/a", "/a", "/a", "/b", None, None, "/c"],
        "key": ["x", "x", "y", "x", "x", "z", "w"],  # x ran twice on /a: one task
        "op": ["read", "read", "write", "read", "read", "read", "read"],
        "bytes": [10.0, 20.0, 5.0, 100.0, 50.0, 1.0, 1.0],
        "ops": [1.0, 2.0, 1.0, 4.0, 1.0, 1.0, 1.0],
        "io_time_s": [0.5, 0.5, 0.25, 1.0, 0.125, 0.125, 0.0]}), TABLES["task_files"],
        path="task_files")
    shown = _files(files, NONE_OUTSIDE, top=3)
    rows = _file_rows(shown)
    assert [(r[0], r[2], r[3], r[4]) for r in rows] == [
        ("/b", "4", "1.000", 1), (None, "2", "0.250", 2), ("/a", "4", "1.250", 2)]
    assert [r[0] for r in _file_rows(_files(files, NONE_OUTSIDE, top=10))] == [
        "/b", None, "/a", "/c"]
    # without the DXT segments, how many times a file was read is not known
    assert [r[5] for r in rows] == ["-"] * 3
    # reads and writes with their mean size; a file not written has no mean to state
    assert _request_rows(shown, "path") == [["/b", "4 × 25 B", "0"], [None, "2 × 26 B", "0"],
                                            ["/a", "3 × 10 B", "1 × 5 B"]]
