"""Worker clock offsets: 0 on the scheduler's host (one system clock), Dask's scheduler_delay
estimates elsewhere, from distinct heartbeat samples only."""

from __future__ import annotations

import polars as pl

import correlate.schema.canonical  # noqa: F401 - registers the tables used below
import correlate.schema.outputs  # noqa: F401
from correlate.align import ESTIMATED, SAME_HOST, worker_offsets
from correlate.schema import TABLES, conform


def samples(rows):
    return conform(pl.DataFrame(rows, schema=["host", "pid", "local_time_ns",
                                              "scheduler_delay_s", "latency_s"], orient="row"),
                   TABLES["clock_samples"])


def processes(rows):
    return conform(pl.DataFrame(rows, schema=["host", "pid", "role"], orient="row"),
                   TABLES["processes"])


SAMPLES = samples([
    ("a", 1, 1, 0.0, 0.001),      # read before the first heartbeat: Dask's initial 0
    ("a", 1, 2, -0.0026, 0.004),  # same host: Dask's estimate is off, the truth is 0
    ("a", 1, 3, 0.0020, 0.004),
    ("b", 2, 1, 0.0, 0.001),
    ("b", 2, 2, 0.050, 0.004),
    ("b", 2, 3, 0.050, 0.004),    # the same heartbeat read twice
    ("b", 2, 4, 0.056, 0.004),
    ("b", 2, 5, 0.052, 0.004),
])


def test_same_host_is_zero_and_says_so_other_host_is_estimated():
    clocks = worker_offsets(SAMPLES, processes([("a", 9, "scheduler"), ("a", 1, "worker"),
                                                ("b", 2, "worker")])).sort("host")
    a, b = clocks.row(0, named=True), clocks.row(1, named=True)
    assert (a["offset_ns"], a["uncertainty_ns"], a["method"]) == (0, 0, SAME_HOST)
    assert b["method"] == ESTIMATED
    assert b["samples"] == 3  # 0.0 and the repeated 0.050 dropped
    assert b["offset_ns"] == 52_000_000
    # half the spread (3 ms) + half the median latency (2 ms)
    assert b["uncertainty_ns"] == 5_000_000


def test_without_a_recorded_scheduler_every_worker_is_estimated():
    clocks = worker_offsets(SAMPLES).sort("host")
    assert set(clocks["method"]) == {ESTIMATED}
    assert clocks.filter(pl.col("host") == "a")["offset_ns"][0] == -300_000
