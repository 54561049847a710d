"""The terminal summary's tables."""

from __future__ import annotations

import polars as pl

from correlate.reports.terminal import _file_rows


def test_busiest_files_count_distinct_tasks_of_the_files_shown():
    files = pl.DataFrame({
        "path": ["/a", "/a", "/a", "/b", None, None, "/c"],
        "key": ["x", "x", "y", "x", "x", "z", "w"],  # x ran twice on /a: one task
        "bytes": [10.0, 20.0, 5.0, 100.0, 50.0, 1.0, 1.0],
        "ops": [1.0, 2.0, 1.0, 4.0, 1.0, 1.0, 1.0],
        "io_time_s": [0.5, 0.5, 0.25, 1.0, 0.125, 0.125, 0.0]})
    rows = _file_rows(files, top=3)
    assert [(r[0], r[2], r[3], r[4]) for r in rows] == [
        ("/b", "4", "1.000", 1), (None, "2", "0.250", 2), ("/a", "4", "1.250", 2)]
    assert [r[0] for r in _file_rows(files, top=10)] == ["/b", None, "/a", "/c"]
