"""Worker clock offsets: 0 on the scheduler's host (one system clock), Dask's scheduler_delay
estimates elsewhere, from distinct heartbeat samples only."""

from __future__ import annotations

import polars as pl

from correlate.schema import TABLES, conform
from correlate.timeline.align import BOUNDED, ESTIMATED, SAME_HOST, worker_offsets


def samples(rows):
    return conform(pl.DataFrame(rows, schema=["host", "pid", "local_time_ns",
                                              "scheduler_delay_s", "latency_s"], orient="row"),
                   TABLES["clock_samples"])


def processes(rows):
    return conform(pl.DataFrame(rows, schema=["host", "pid", "role"], orient="row"),
                   TABLES["processes"])


MS = 1_000_000

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


def test_a_clock_seconds_off_is_estimated_to_the_nanosecond():
    # Dask's estimates of a host whose clock is seconds ahead: median 2.5 s, spread 3 s
    clocks = worker_offsets(samples([("c", 3, 1, 1.0, 0.004), ("c", 3, 2, 4.0, 0.006),
                                     ("c", 3, 3, 2.5, 0.008)]))
    c = clocks.row(0, named=True)
    assert (c["offset_ns"], c["samples"], c["method"]) == (2_500_000_000, 3, ESTIMATED)
    # half the spread (1.5 s) + half the median latency (3 ms)
    assert c["uncertainty_ns"] == 1_503_000_000


def test_without_a_recorded_scheduler_every_worker_is_estimated():
    for procs in (None, processes([("a", 1, "worker"), ("b", 2, "worker")])):
        clocks = worker_offsets(SAMPLES, procs).sort("host")
        assert set(clocks["method"]) == {ESTIMATED}
        assert clocks.filter(pl.col("host") == "a")["offset_ns"][0] == -300_000


def transitions(rows):
    """(side, key, worker, start, finish, local_time_ns); worker rows are process (w, 7)."""
    df = pl.DataFrame(rows, schema=["side", "key", "worker", "start", "finish", "local_time_ns"],
                      orient="row")
    return df.with_columns(host=pl.when(pl.col("side") == "worker").then(pl.lit("b")),
                           pid=pl.when(pl.col("side") == "worker").then(pl.lit(7)))


def test_message_bounds_from_causality_skip_tasks_sent_twice():
    from correlate.timeline.message_bounds import message_bounds

    # worker clock = scheduler clock - 50 ms; one-way latency 1..3 ms
    off = 50 * MS
    rows = []
    for i, (lat_in, lat_out) in enumerate([(1, 3), (2, 1), (3, 2)]):
        s_send = 1000 * MS + i * 100 * MS
        w_recv = s_send + lat_in * MS - off
        w_done = w_recv + 10 * MS
        s_done = w_done + off + lat_out * MS
        rows += [("scheduler", f"k{i}", None, "waiting", "processing", s_send),
                 ("worker", f"k{i}", "tcp://w", "released", "waiting", w_recv),
                 ("worker", f"k{i}", "tcp://w", "executing", "memory", w_done),
                 ("scheduler", f"k{i}", "tcp://w", "processing", "memory", s_done)]
    # stolen: sent twice, the later send after the first receipt would break the lower bound
    rows += [("scheduler", "s", None, "waiting", "processing", 2000 * MS),
             ("worker", "s", "tcp://w", "released", "waiting", 2000 * MS + MS - off),
             ("scheduler", "s", None, "waiting", "processing", 2500 * MS),
             ("worker", "s", "tcp://w", "executing", "memory", 2600 * MS - off),
             ("scheduler", "s", "tcp://w", "processing", "memory", 2601 * MS)]
    b = message_bounds(transitions(rows)).row(0, named=True)
    assert (b["host"], b["pid"], b["pairs"]) == ("b", 7, 3)
    # keys held as Categorical (as the engine holds them) pair the same tasks
    held = transitions(rows).with_columns(pl.col("key", "host").cast(pl.Categorical))
    assert message_bounds(held).row(0, named=True) == b
    # the tightest one-way latencies: 1 ms in, 1 ms out
    assert (b["lower_ns"], b["upper_ns"]) == (off - 1 * MS, off + 1 * MS)
    clocks = worker_offsets(samples([("b", 7, 1, 0.2, 0.001)]),  # Dask's sample far off
                            processes([("a", 9, "scheduler"), ("b", 7, "worker")]),
                            message_bounds(transitions(rows)))
    row = clocks.row(0, named=True)
    assert (row["offset_ns"], row["uncertainty_ns"], row["method"]) == (off, MS, BOUNDED)


def test_message_bounds_of_parts_by_key_combine_to_the_whole():
    from correlate.frames.spill import in_part
    from correlate.timeline.message_bounds import combined, message_bounds

    # twelve tasks of one worker, latencies that differ task by task: the tightest lower and
    # upper bounds come from different tasks, which land in different parts
    off, rows = 50 * MS, []
    for i in range(12):
        lat_in, lat_out = (1 if i == 3 else 2 + i % 5), (1 if i == 8 else 2 + i % 4)
        s_send = 1000 * MS + i * 100 * MS
        w_recv = s_send + lat_in * MS - off
        w_done = w_recv + 10 * MS
        rows += [("scheduler", f"k{i}", None, "waiting", "processing", s_send),
                 ("worker", f"k{i}", "tcp://w", "released", "waiting", w_recv),
                 ("worker", f"k{i}", "tcp://w", "executing", "memory", w_done),
                 ("scheduler", f"k{i}", "tcp://w", "processing", "memory",
                  w_done + off + lat_out * MS)]
    whole = message_bounds(transitions(rows))
    for n in (2, 3, 4):
        parts = [message_bounds(transitions(rows).filter(in_part(p, n))) for p in range(n)]
        assert all(p.height == 1 for p in parts)  # (every part holds tasks of the worker)
        assert len({(p["lower_ns"][0], p["upper_ns"][0]) for p in parts}) > 1
        assert combined(parts).equals(whole)
