"""Clock offsets and their uncertainty on literal data: Darshan markers, the causal bound of
the task messages, containment of executor-thread segments in their task windows; and the
aligned columns they give executions and segments."""

from __future__ import annotations

import polars as pl

from correlate.schema import TABLES, conform
from correlate.sources import darshan_logs
from correlate.timeline.align import (
    BOUNDED,
    ESTIMATED,
    FINE_NS,
    align_executions,
    align_segments,
    containment_offsets,
    counter_offsets,
    darshan_offsets,
    worker_offsets,
)
from testing.darshan_writer import write_log

US, MS = 1_000, 1_000_000


def frame(table: str, rows: list[tuple], columns: list[str]) -> pl.DataFrame:
    return conform(pl.DataFrame(rows, schema=columns, orient="row"), TABLES[table])


def segments(rows: list[tuple]) -> pl.DataFrame:
    """(host, pid, thread_id, path, op, offset, length, local_start_ns, local_stop_ns)"""
    return frame("io_segments", [(*r, "DXT_POSIX") for r in rows],
                 ["host", "pid", "thread_id", "path", "op", "offset", "length", "local_start_ns",
                  "local_stop_ns", "module"])


def markers(rows: list[tuple]) -> pl.DataFrame:
    return frame("clock_markers", rows, ["host", "pid", "path", "offset", "length",
                                         "local_time_ns"])


def executions(rows: list[tuple]) -> pl.DataFrame:
    """(host, pid, thread_id, local_start_ns, local_stop_ns)"""
    return frame("executions", [(f"k{i}", *r) for i, r in enumerate(rows)],
                 ["key", "host", "pid", "thread_id", "local_start_ns", "local_stop_ns"])


def clocks(rows: list[tuple]) -> pl.DataFrame:
    """(host, pid, domain, offset_ns)"""
    return frame("clocks", [(*r, 0, "literal", 1) for r in rows],
                 ["host", "pid", "domain", "offset_ns", "uncertainty_ns", "method", "samples"])


def by_process(df: pl.DataFrame) -> dict[tuple[str, int], dict]:
    return {(r["host"], r["pid"]): r for r in df.iter_rows(named=True)}


def test_darshan_offset_is_the_median_marker_difference_uncertainty_its_largest_deviation():
    m = "/run/darshan/markers/a-1"
    found = darshan_offsets(
        segments([("a", 1, 5, m, "write", 0, 28, 1000 * MS - 5 * MS, 1000 * MS),
                  ("a", 1, 5, m, "write", 28, 28, 2000 * MS - 5 * MS, 2000 * MS),
                  ("a", 1, 5, m, "write", 56, 28, 3000 * MS - 5 * MS - 300 * US, 3000 * MS),
                  ("a", 1, 5, m, "read", 0, 28, 10 * MS, 11 * MS),     # a read: not a marker
                  ("a", 1, 5, m, "write", 999, 28, 10 * MS, 11 * MS),  # no such marker
                  ("b", 2, 5, "/data/x", "write", 0, 28, 10 * MS, 11 * MS)]),
        markers([("a", 1, m, 0, 28, 1000 * MS), ("a", 1, m, 28, 28, 2000 * MS),
                 ("a", 1, m, 56, 28, 3000 * MS),
                 ("b", 2, "/run/darshan/markers/b-2", 0, 28, 5 * MS)]))  # never written
    assert list(by_process(found)) == [("a", 1)]
    a = by_process(found)[("a", 1)]
    assert (a["offset_ns"], a["uncertainty_ns"], a["samples"]) == (5 * MS, 300 * US, 3)
    assert a["domain"] == "darshan"


def test_counters_only_offset_is_the_first_marker_write_uncertainty_the_last_s_drift(tmp_path):
    # GIVEN a genuine counters-only log (DXT off) of a process whose marker file got two
    # writes: Darshan's clock stamps them 0.5 s and 2.0-2.25 s after its job start, while the
    # process's own clock read 7 ms more before the first and 10 ms more before the last (its
    # Darshan clock lags by 7 ms, and drifts by 3 ms more by the last write)
    start_ns, m = 1_700_000_000_000_000_000, "/run/darshan/markers/a-1"
    seg = pl.DataFrame({"path": [m, m, "/data/x"], "op": ["write", "write", "read"],
                        "offset": [0, 28, 0], "length": [28, 28, 4096],
                        "start_s": [0.5, 2.0, 1.0], "end_s": [0.75, 2.25, 1.5],
                        "thread_id": pl.Series([5, 5, 5], dtype=pl.UInt64)})
    log = write_log(tmp_path / "a_python_id1-1_1.darshan", seg, host="a", pid=1,
                    start_ns=start_ns, dxt=False)
    counters = darshan_logs.load([log]).io_file_counters
    assert counters.filter(pl.col("path") == m)["first_write_ns"].to_list() == [
        start_ns + 500 * MS]  # what the test wrote, read back (not DXT: the log has none)
    first, last = start_ns + 500 * MS + 7 * MS, start_ns + 2250 * MS + 10 * MS
    marks = markers([("a", 1, m, 0, 28, first), ("a", 1, m, 28, 28, last)])
    # WHEN the offset is taken from the counters
    got = by_process(counter_offsets(counters, marks))
    # THEN adding it to Darshan's times gives the process's clock: +7 ms, within the 3 ms drift
    a = got[("a", 1)]
    assert (a["offset_ns"], a["uncertainty_ns"], a["domain"]) == (7 * MS, 3 * MS, "darshan")
    assert list(got) == [("a", 1)]


def test_a_held_causal_bound_gives_its_midpoint_a_crossed_one_falls_back_to_dask():
    samples = frame("clock_samples", [("b", 2, 1, 0.010, 0.002), ("c", 3, 1, 0.020, 0.002)],
                    ["host", "pid", "local_time_ns", "scheduler_delay_s", "latency_s"])
    procs = frame("processes", [("a", 1, "scheduler"), ("b", 2, "worker"), ("c", 3, "worker")],
                  ["host", "pid", "role"])
    bounds = pl.DataFrame({"host": ["b", "c"], "pid": [2, 3],
                           "lower_ns": [40 * MS, 30 * MS], "upper_ns": [43 * MS, 29 * MS],
                           "pairs": [12, 4]})
    got = by_process(worker_offsets(samples, procs, bounds))
    b, c = got[("b", 2)], got[("c", 3)]
    assert (b["offset_ns"], b["uncertainty_ns"], b["samples"], b["method"]) == (
        41_500_000, 1_500_000, 12, BOUNDED)
    # crossed (lower > upper): hooks out of order or a drifting clock; Dask's sample instead
    assert (c["offset_ns"], c["uncertainty_ns"], c["method"]) == (20 * MS, 1 * MS, ESTIMATED)


def test_a_held_bound_counts_whatever_the_host_is_named():
    # the scheduler on host "m"; workers on hosts named before and after it
    samples = frame("clock_samples", [("b", 2, 1, 0.010, 0.002), ("x", 3, 1, 0.020, 0.002)],
                    ["host", "pid", "local_time_ns", "scheduler_delay_s", "latency_s"])
    procs = frame("processes", [("m", 1, "scheduler"), ("b", 2, "worker"), ("x", 3, "worker")],
                  ["host", "pid", "role"])
    bounds = pl.DataFrame({"host": ["b", "x"], "pid": [2, 3], "lower_ns": [40 * MS, 30 * MS],
                           "upper_ns": [42 * MS, 34 * MS], "pairs": [5, 6]})
    got = by_process(worker_offsets(samples, procs, bounds))
    assert {k: (r["offset_ns"], r["method"]) for k, r in got.items()} == {
        ("b", 2): (41 * MS, BOUNDED), ("x", 3): (32 * MS, BOUNDED)}


#: task windows of thread 7 of process (a, 1), irregular so that no other shift fits as well
WINDOWS = [(s * MS, (s + 10) * MS) for s in (0, 25, 43, 71, 100)]


def test_containment_finds_the_shift_that_puts_segments_inside_their_windows():
    truth = 3 * MS  # Darshan's times are this far behind the process clock
    seg = []
    for start, stop in WINDOWS:  # one segment just after the start, one just before the stop
        for t in (start + 100 * US, stop - 100 * US):
            seg.append(("a", 1, 7, "/data/f", "read", 0, 10, t - truth, t - truth))
    seg.append(("b", 2, 7, "/data/f", "read", 0, 10, 5 * MS, 5 * MS))  # skipped: has markers
    seg.append(("c", 3, 7, "/data/f", "read", 0, 10, 500 * MS, 500 * MS))  # in no window
    ex = executions([("a", 1, 7, s, e) for s, e in WINDOWS]
                    + [("b", 2, 7, 0, 10 * MS), ("c", 3, 7, 0, 10 * MS)])
    skip = clocks([("b", 2, "darshan", 0)])
    got = by_process(containment_offsets(segments(seg), ex, skip))
    assert list(got) == [("a", 1)]
    a = got[("a", 1)]
    # every shift in [2.9, 3.1] ms fits: the smallest is taken, uncertainty half the plateau
    # plus one search step, and the truth lies within it
    assert (a["offset_ns"], a["uncertainty_ns"], a["samples"]) == (
        2_900_000, 100 * US + FINE_NS, 10)
    assert abs(a["offset_ns"] - truth) <= a["uncertainty_ns"]


def test_containment_counts_every_thread_after_one_without_segments():
    # thread 5 ran the first task but made no I/O; thread 7's segments are 3 ms behind its
    # windows, which all start later
    truth, later = 3 * MS, 200 * MS
    seg = [("a", 1, 7, "/data/f", "read", 0, 10, t - truth, t - truth)
           for start, stop in WINDOWS for t in (later + start + 100 * US, later + stop - 100 * US)]
    ex = executions([("a", 1, 5, 0, 1 * MS)]
                    + [("a", 1, 7, later + s, later + e) for s, e in WINDOWS])
    got = by_process(containment_offsets(segments(seg), ex, clocks([])))
    assert got[("a", 1)]["offset_ns"] == 2_900_000


def test_segments_already_inside_their_windows_need_no_correction():
    """A plateau that holds zero: the offset is exactly 0 (the smallest correction), not the
    plateau's edge or a step of the search."""
    seg = [("a", 1, 7, "/data/f", "read", 0, 10, t, t)
           for start, stop in WINDOWS for t in (start + 100 * US, stop - 100 * US)]
    ex = executions([("a", 1, 7, s, e) for s, e in WINDOWS])
    got = by_process(containment_offsets(segments(seg), ex, clocks([])))
    assert got[("a", 1)]["offset_ns"] == 0


def test_aligned_columns_add_each_process_its_offsets_and_keep_the_raw_ones():
    offsets = clocks([("a", 1, "worker", 50 * MS), ("a", 4, "worker", 60 * MS),
                      ("a", 1, "darshan", 2 * MS)])
    ex = executions([("a", 1, 7, 100, 200), ("a", 2, 7, 100, 200), ("b", 3, 7, 100, 200)])
    got = align_executions(ex, offsets)
    # (a, 2) has no offset of its own: its host's median; (b, 3) has none at all: 0
    assert got["start_ns"].to_list() == [100 + 50 * MS, 100 + 55 * MS, 100]
    assert got["stop_ns"].to_list() == [200 + 50 * MS, 200 + 55 * MS, 200]
    assert got.drop("start_ns", "stop_ns").equals(ex)
    seg = segments([("a", 1, 7, "/f", "read", 0, 1, 100, 200),
                    ("a", 1, 7, "/f", "read", 1, 1, 300, 400),
                    ("a", 2, 7, "/f", "read", 0, 1, 100, 200)])
    got = align_segments(seg, offsets)
    assert got["host_start_ns"].to_list() == [100 + 2 * MS, 300 + 2 * MS, 100]
    assert got["host_stop_ns"].to_list() == [200 + 2 * MS, 400 + 2 * MS, 200]
    assert got["start_ns"].to_list() == [100 + 52 * MS, 300 + 52 * MS, 100 + 55 * MS]
    assert got["stop_ns"].to_list() == [200 + 52 * MS, 400 + 52 * MS, 200 + 55 * MS]
    assert got["local_start_ns"].to_list() == [100, 300, 100]


def test_no_rows_align_to_no_rows():
    offsets = clocks([("a", 1, "worker", 50 * MS), ("a", 1, "darshan", 2 * MS)])
    ex = align_executions(executions([]), offsets)
    seg = align_segments(segments([]), offsets)
    assert ex.height == seg.height == 0
    assert {"start_ns", "stop_ns"} <= set(ex.columns)
    assert {"host_start_ns", "host_stop_ns", "start_ns", "stop_ns"} <= set(seg.columns)


def test_one_process_at_a_time_gives_what_all_together_give():
    """An attribution partition aligns one process's rows (looked up without joins): each
    process alone, own offsets, its host's median, none at all, or a null host, gets what
    it gets among the others."""
    offsets = clocks([("a", 1, "worker", 50 * MS), ("a", 4, "worker", 61 * MS),
                      ("a", 1, "darshan", 2 * MS), (None, 9, "worker", 7 * MS),
                      (None, 9, "darshan", -3 * MS)])
    seg = segments([("a", 1, 7, "/f", "read", 0, 1, 100, 200),
                    ("a", 1, 7, "/f", "read", 1, 1, 300, 400),
                    ("a", 2, 7, "/f", "read", 0, 1, 100, 200),
                    ("b", 3, 7, "/f", "read", 0, 1, 100, 200),
                    (None, 9, 7, "/f", "read", 0, 1, 500, 600)])
    together = align_segments(seg, offsets)
    alone = pl.concat([align_segments(seg.slice(i, n), offsets)
                       for i, n in ((0, 2), (2, 1), (3, 1), (4, 1))])
    assert alone.equals(together)
    assert together["start_ns"].to_list() == [100 + 52 * MS, 300 + 52 * MS, 100 + 55_500 * US,
                                              100, 500 + 4 * MS]
    ex = executions([("a", 2, 7, 100, 200), ("a", 2, 7, 300, 400)])
    assert align_executions(ex, offsets)["start_ns"].to_list() == [100 + 55_500 * US,
                                                                   300 + 55_500 * US]
