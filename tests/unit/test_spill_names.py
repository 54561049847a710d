"""Spill file names → keys, over literal frames (the naming of zict.File, with and without
its counter suffix)."""

from __future__ import annotations

from urllib.parse import quote

import polars as pl

from correlate.attribution.spill import per_execution, spill_io, spill_keys

LOCAL = "/scratch/w1"
PROCS = pl.DataFrame({"host": ["h", "h"], "pid": [1, 2], "local_directory": [LOCAL, None]})


def test_each_spill_file_name_gives_back_its_key():
    keys = ["x-1", str(("x", 3)), "a/b#c ü%", str(("y", "z", 0))]
    paths = [f"{LOCAL}/storage/{quote(k, safe='')}#{n}" for n, k in enumerate(keys)]
    paths += [f"{LOCAL}/storage/{quote('old-zict', safe='')}",  # zict < 3: no counter
              f"{LOCAL}/storage/sub/file#1",  # not a spill file
              f"{LOCAL}/other/x#1", "/data/x#1"]
    seg = pl.DataFrame({"host": "h", "pid": 1, "path": paths}, schema_overrides={"pid": pl.Int64})
    seg = pl.concat([seg, pl.DataFrame({"host": ["h"], "pid": [2], "path": [paths[0]]})])
    got = spill_keys(seg, PROCS).to_list()
    assert got == [*keys, "old-zict", None, None, None, None]


def test_spill_io_sums_per_key_and_counts_the_files_written():
    seg = pl.DataFrame({
        "host": "h", "pid": 1, "op": ["write", "write", "write", "read"],
        "path": [f"{LOCAL}/storage/k#0", f"{LOCAL}/storage/k#0", f"{LOCAL}/storage/k#5",
                 f"{LOCAL}/storage/k#5"],
        "length": [10, 20, 30, 30], "host_start_ns": [0, 10, 20, 30],
        "host_stop_ns": [5, 15, 25, 40]})
    out = spill_io(seg, spill_keys(seg, PROCS)).sort("op")
    assert out.select("key", "op", "bytes", "files").rows() == [
        ("k", "read", 30.0, 1), ("k", "write", 60.0, 2)]


def _per_execution(spill: pl.DataFrame, counted: bool) -> dict[int, float | None]:
    """execution → spilled_bytes as the tasks table gets it: the row's, else the figure of
    an execution without a row."""
    ex = pl.DataFrame({"key": ["a", "b", "a", "c", "c"], "execution_id": [0, 1, 2, 3, 4]},
                      schema={"key": pl.Categorical, "execution_id": pl.Int64})
    rows, absent = per_execution(ex, spill, counted)
    got = dict(rows.select("execution_id", "spilled_bytes").iter_rows())
    return {i: got[i] if i in got else absent for i in range(5)}


SPILL = pl.DataFrame({"key": ["a", "b", "b"], "op": ["write", "write", "read"],
                      "bytes": [10.0, 20.0, 20.0], "io_time_s": [0.1, 0.2, 0.3],
                      "files": [1, 1, 1]})


def test_a_keys_spill_is_on_its_last_execution_and_every_other_key_is_zero_when_counted():
    # a (run twice) and b spilled: a's first run's share is not known; c (run twice) was in
    # no spill file the logs counted: zero, measured, on both runs
    assert _per_execution(SPILL, counted=True) == {0: None, 1: 20.0, 2: 10.0, 3: 0, 4: 0}
    assert _per_execution(SPILL.clear(), counted=True) == {i: 0 for i in range(5)}


def test_without_logs_that_count_every_file_only_the_spilled_keys_are_known():
    assert _per_execution(SPILL, counted=False) == {0: None, 1: 20.0, 2: 10.0, 3: None,
                                                    4: None}
    assert _per_execution(SPILL.clear(), counted=False) == {i: None for i in range(5)}
