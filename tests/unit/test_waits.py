"""Waits from literal transitions: the first time of each transition, per key and side."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.timeline import waits

MS = 1_000_000


def transitions(rows):
    """rows: (key, side, start, finish, time_ms)."""
    df = pl.DataFrame(rows, schema={"key": pl.String, "side": pl.String, "start": pl.String,
                                    "finish": pl.String, "t": pl.Int64}, orient="row")
    return df.select("key", pl.col("side").cast(pl.Enum(["scheduler", "worker"])), "start",
                     "finish", local_time_ns=pl.col("t") * MS)


def test_waits_take_the_first_time_of_each_transition_on_its_own_side():
    tr = transitions([
        ("a", "scheduler", "released", "waiting", 10),
        ("a", "scheduler", "waiting", "queued", 25),
        ("a", "scheduler", "queued", "processing", 40),
        ("a", "worker", "waiting", "ready", 1000),      # the worker's own clock
        ("a", "worker", "ready", "executing", 1007),
        ("a", "worker", "executing", "ready", 1010),    # a retry: later times are not used
        ("a", "worker", "ready", "executing", 1030),
        ("a", "scheduler", "processing", "waiting", 50),
        ("a", "scheduler", "waiting", "processing", 70),
        ("b", "scheduler", "released", "waiting", 5),   # never queued: straight to processing
        ("b", "scheduler", "waiting", "processing", 8),
        ("b", "worker", "executing", "ready", 2000),    # a worker-side "ready" is not a wait
        ("c", "worker", "released", "memory", 3),       # nothing used: c is left out
    ])
    got = {r["key"]: r for r in waits.scheduler_waits(tr).iter_rows(named=True)}
    assert set(got) == {"a", "b"}
    assert got["a"]["wait_dependencies_s"] == pytest.approx(0.015)
    assert got["a"]["wait_queued_s"] == pytest.approx(0.015)
    assert got["a"]["wait_thread_s"] == pytest.approx(0.007)
    assert got["b"]["wait_dependencies_s"] == pytest.approx(0.003)
    assert got["b"]["wait_queued_s"] is None
    assert got["b"]["wait_thread_s"] is None


def test_external_arrivals_only_for_keys_through_states_dask_does_not_define():
    tr = transitions([
        ("x", "scheduler", "released", "waiting", 1),
        ("x", "scheduler", "waiting", "memory", 2),
        ("ext", "scheduler", "released", "deisa", 3),
        ("ext", "scheduler", "deisa", "memory", 9),
        ("ext", "scheduler", "memory", "released", 12),
        ("ext", "scheduler", "released", "memory", 15),
    ])
    got = waits.external_arrivals(tr)
    assert got.rows() == [("ext", 9 * MS)]
    assert waits.external_arrivals(tr.filter(pl.col("key") == "x")).is_empty()


def _worker_transitions(rows):
    """rows: (key, worker, finish, time_ms) of worker-side transitions."""
    return pl.DataFrame(rows, schema={"key": pl.String, "worker": pl.String,
                                      "finish": pl.String, "t": pl.Int64}, orient="row").select(
        "key", "worker", side=pl.lit("worker").cast(pl.Enum(["scheduler", "worker"])),
        finish="finish", local_time_ns=pl.col("t") * MS)


def _executions(rows):
    """rows: (worker, start_ms, stop_ms)."""
    return pl.DataFrame(rows, schema={"worker": pl.String, "s": pl.Int64, "e": pl.Int64},
                        orient="row").select("worker", local_start_ns=pl.col("s") * MS,
                                             local_stop_ns=pl.col("e") * MS)


def test_the_part_of_a_wait_with_a_thread_of_its_worker_free_is_told_apart():
    # GIVEN worker A (2 threads) running [0, 100], [0, 50] and [80, 90] ms, worker B (1 thread)
    # running [20, 40] and [40, 60], and worker C whose thread count was not recorded
    procs = pl.DataFrame({"worker": ["A", "B", "C"], "nthreads": [2, 1, None]},
                         schema={"worker": pl.String, "nthreads": pl.Int64})
    ex = _executions([("A", 0, 100), ("A", 0, 50), ("A", 80, 90),
                      ("B", 20, 40), ("B", 40, 60), ("C", 0, 10)])
    tr = _worker_transitions([
        ("x", "A", "ready", 10), ("x", "A", "executing", 80),   # free 50 → 80
        ("y", "A", "ready", 60), ("y", "A", "executing", 100),  # free 60 → 80 and 90 → 100
        ("z", "B", "ready", 5), ("z", "B", "executing", 50),    # free before B's first: 5 → 20
        ("w", "B", "ready", 25), ("w", "B", "executing", 40),   # never free (ends then starts)
        ("v", "C", "ready", 1), ("v", "C", "executing", 5),     # unknown thread count
    ])
    got = dict(waits.free_thread_waits(waits.thread_waits(tr), waits.thread_use(ex, procs))
               .iter_rows())
    assert set(got) == {"x", "y", "z", "w"}
    assert got["x"] == pytest.approx(0.030)
    assert got["y"] == pytest.approx(0.030)
    assert got["z"] == pytest.approx(0.015)
    assert got["w"] == 0.0
