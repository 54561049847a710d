"""Parts of summary.json built from literal frames: where the bytes went and their shares, the
spill per worker, and the warning that names doubtful file names (how many are listed)."""

from __future__ import annotations

import polars as pl

from correlate.attribution import doubtful, local_dir
from correlate.summary import _destinations, _doubtful_paths, _spill_per_worker


def test_destinations_add_up_with_shares_to_four_places():
    by_method = pl.DataFrame({"attribution": ["exact-thread"], "bytes": [1000.0]})
    reasons = pl.DataFrame({"reason": [local_dir.SPILL, "outside any task"],
                            "bytes": [500.0, 1500.0]})
    got = _destinations(3000.0, 1000.0, by_method, reasons)
    assert {k: v["bytes"] for k, v in got.items()} == {
        "tasks": 1000, "shuffles": 0, "spill": 500, "not_tasks": 0, "unexplained": 1500}
    assert got["tasks"]["share"] == 0.3333 and got["spill"]["share"] == 0.1667
    assert sum(v["bytes"] for v in got.values()) == 3000
    # no I/O at all: the shares are unknown, not 0
    empty = _destinations(0.0, 0.0, by_method.clear(), reasons.clear())
    assert {v["share"] for v in empty.values()} == {None}


def test_spill_per_worker_is_each_process_s_keys_bytes_and_times():
    spilled = pl.DataFrame({"host": ["b", "a", "a", "a"], "pid": [2, 1, 1, 1],
                            "key": ["x", "y", "y", "z"],
                            "op": ["write", "write", "read", "write"],
                            "bytes": [10.0, 100.0, 100.0, 50.0],
                            "io_time_s": [0.5, 0.25, 0.125, 0.0625]})
    assert _spill_per_worker(spilled) == [
        {"host": "a", "pid": 1, "keys": 2, "spilled_bytes": 150, "spill_write_s": 0.3125,
         "unspilled_bytes": 100, "unspill_read_s": 0.125},
        {"host": "b", "pid": 2, "keys": 1, "spilled_bytes": 10, "spill_write_s": 0.5,
         "unspilled_bytes": 0, "unspill_read_s": 0.0}]
    assert _spill_per_worker(None) == [] and _spill_per_worker(spilled.clear()) == []


def _doubtful(n: int) -> pl.DataFrame:
    return pl.DataFrame({"path": [f"f{i}" for i in range(n)],
                         "bytes": [float(100 * (i + 1)) for i in range(n)],
                         "reason": [doubtful.RELATIVE] * n},
                        schema={"path": pl.String, "bytes": pl.Float64, "reason": pl.String})


def test_the_doubtful_names_warning_lists_five_largest_and_counts_the_rest():
    (line,) = _doubtful_paths(_doubtful(8))
    assert line.startswith("8 file name(s)")
    assert line.endswith(": f7 (800 B); f6 (700 B); f5 (600 B); f4 (500 B); f3 (400 B); "
                         "and 3 more")
    (line,) = _doubtful_paths(_doubtful(5))
    assert line.endswith("; f0 (100 B)")  # all five named, none more
    assert _doubtful_paths(_doubtful(0)) == []
