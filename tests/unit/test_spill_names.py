"""Spill file names → keys, over literal frames (the naming of zict.File, with and without
its counter suffix)."""

from __future__ import annotations

from urllib.parse import quote

import polars as pl

from correlate.attribution.spill import spill_io, spill_keys

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
