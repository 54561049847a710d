"""The host's load per host from the workers' samples (``correlate.host_load``), and how
compare reads two sides of it (``compare.load_change``)."""

from __future__ import annotations

import polars as pl

from correlate.compare import changes as compare
from correlate.host_load import summary

S = 1_000_000_000


def _samples(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, orient="row", schema={
        "host": pl.String, "pid": pl.Int64, "local_time_ns": pl.Int64, "load1": pl.Float64,
        "runnable_count": pl.Int64, "cpus": pl.Int64, "host_busy_s": pl.Float64,
        "process_cpu_s": pl.Float64})


def test_other_processes_cpu_is_the_busy_cpu_less_the_workers_over_one_window():
    # worker 1 samples for 5 s, the host's CPUs busy 10 s in that time (2 cores); worker 2
    # starts 1 s later: its CPU at the window's start is held at its first sample
    got = summary(_samples([
        ("h", 1, 0 * S, 3.0, 4, 4, 100.0, 1.0), ("h", 1, 5 * S, 5.0, 6, 4, 110.0, 3.0),
        ("h", 2, 1 * S, 4.0, 5, 4, 102.0, 0.0), ("h", 2, 4 * S, 4.0, 5, 4, 108.0, 1.5)]))
    assert got == [{"host": "h", "samples": 4, "cpus": 4, "load1_mean": 4.0, "load1_max": 5.0,
                    "runnable_mean": 5.0, "window_s": 5.0, "busy_cores": 2.0,
                    "recorded_cores": 0.7, "other_cores": 1.3}]


def test_without_procfs_only_the_load_average_is_known_and_the_rest_is_null():
    got = summary(_samples([("h", 1, 0, 2.0, None, 8, None, 1.0),
                            ("h", 1, S, 2.5, None, 8, None, 1.2)]))[0]
    assert got["load1_mean"] == 2.25 and got["runnable_mean"] is None
    assert got["busy_cores"] is None and got["other_cores"] is None and got["window_s"] is None


def _side(runnable: float, other: float, cpus: int = 2) -> dict:
    return {"host_load": [{"host": "h", "cpus": cpus, "runnable_mean": runnable,
                           "other_cores": other, "load1_mean": runnable}]}


def test_load_change_says_more_or_less_loaded_or_about_the_same_or_not_recorded():
    way, text = compare.load_change([_side(4.0, 0.4)], [_side(8.0, 1.0)])
    assert way == 1 and text.startswith("processes runnable per CPU 2.0 → 4.0; CPU of other "
                                        "processes 0.40 → 1.00 cores of 2"), text
    assert compare.load_change([_side(8.0, 1.0)], [_side(4.0, 0.4)])[0] == -1
    # below both thresholds: the same load
    assert compare.load_change([_side(4.0, 0.4)], [_side(4.6, 0.5)])[0] == 0
    # a side without it (recorded before the collectors sampled it): unknown
    assert compare.load_change([{"host_load": []}], [_side(8.0, 1.0)]) is None
