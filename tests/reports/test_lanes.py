"""Lanes and thread counts of runs whose threads were not (all) recorded."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.reports import aggregate as agg
from correlate.reports.timeline import io_bars, task_bars

S = 1_000_000_000


def _tasks(rows):
    """rows: (execution_id, worker, thread_id, inferred, start s, stop s)."""
    return pl.DataFrame(
        [(e, w, "h", 1, t, i, a * S, b * S, (b - a) * 1.0) for e, w, t, i, a, b in rows],
        schema={"execution_id": pl.Int64, "worker": pl.String, "host": pl.String,
                "pid": pl.Int64, "thread_id": pl.UInt64, "thread_inferred": pl.Boolean,
                "start_ns": pl.Int64, "stop_ns": pl.Int64, "duration_s": pl.Float64},
        orient="row").with_columns(
        prefix=pl.lit("p"), key=pl.format("k-{}", "execution_id"), cpu_s=pl.lit(None, pl.Float64),
        read_bytes=0.0, write_bytes=0.0, io_time_s=0.0, status=pl.lit("ok"),
        transfer_s=0.0, wait_thread_s=0.0, input_read_back_s=pl.lit(None, pl.Float64))


def test_unknown_threads_share_as_few_lanes_as_can_hold_them():
    t = _tasks([(0, "w", None, False, 0, 10), (1, "w", None, False, 2, 4),
                (2, "w", None, False, 5, 12), (3, "w", None, False, 11, 20),
                (4, "w", 7, True, 0, 5)])
    lanes = agg.lanes(t)
    assert lanes["label"].to_list() == ["w · thread 1 (inferred)", "w · thread ? #1",
                                        "w · thread ? #2"]
    assert lanes["thread_id"].to_list() == [7, None, None]  # the id, for tooltips
    bars = task_bars(t, lanes, 0)
    # no two executions overlap on one lane
    clash = bars.sort("lane", "start").filter(
        (pl.col("start") < pl.col("stop").shift(1)).over("lane"))
    assert clash.is_empty() and bars["lane"].null_count() == 0


def test_thread_count_is_a_lower_bound_and_busy_never_exceeds_100_percent():
    t = _tasks([(0, "w", None, False, 0, 10), (1, "w", None, False, 0, 10),
                (2, "w", None, False, 0, 10), (3, "x", 5, False, 0, 4),
                (4, "x", 6, False, 2, 10)])
    b = {r["worker"]: r for r in agg.worker_budget(t).iter_rows(named=True)}
    assert (b["w"]["threads"], b["w"]["threads_bound"]) == (3, True)
    assert b["w"]["busy_share"] == pytest.approx(1.0)
    assert (b["x"]["threads"], b["x"]["threads_bound"]) == (2, False)
    assert agg.threads_text(3, True) == "≥ 3" and agg.threads_text(2, False) == "2"


def test_io_of_an_unknown_thread_execution_is_drawn_on_its_lane():
    t = _tasks([(0, "w", None, False, 0, 10), (1, "w", 7, True, 0, 10)])
    lanes = agg.lanes(t)
    bars = task_bars(t, lanes, 0)
    seg = pl.DataFrame({"host": ["h", "h", "h"], "pid": [1, 1, 1],
                        "thread_id": pl.Series([9, 7, 9], dtype=pl.UInt64),
                        "execution_id": [0, 1, None], "start_ns": [S, S, S],
                        "stop_ns": [2 * S] * 3, "op": ["read"] * 3, "length": [1, 2, 4],
                        "path": ["f"] * 3})
    io = io_bars(seg, lanes, bars, 0, 10 * S, 100).frame
    lane_of = dict(zip(lanes["label"], lanes["lane"], strict=True))
    assert dict(zip(io["bytes"], io["lane"], strict=True)) == {
        1.0: lane_of["w · thread ? #1"], 2.0: lane_of["w · thread 1 (inferred)"]}


def test_lanes_are_numbered_per_worker_and_the_event_loop_is_its_own_line():
    """Threads are labelled by their index in their worker (ids are long and alike); the
    thread that ran only coroutine tasks is the event loop, and it is neither counted as an
    executor thread nor part of the busy share: its tasks' time is a line of its own."""
    t = _tasks([(0, "w", 900, False, 0, 10), (1, "w", 500, False, 0, 10),
                (2, "w", 700, False, 0, 4), (3, "x", 950, False, 0, 10)]).with_columns(
        awaiting_s=pl.Series([None, None, 0.000_000_003, None], dtype=pl.Float64))
    lanes = agg.lanes(t)
    assert lanes.select("worker", "thread_id", "label").rows() == [
        ("w", 500, "w · thread 1"), ("w", 700, "w · event loop"), ("w", 900, "w · thread 2"),
        ("x", 950, "x · thread 1")]
    b = {r["worker"]: r for r in agg.worker_budget(t).iter_rows(named=True)}
    assert (b["w"]["threads"], b["w"]["coroutines"]) == (2, 1)
    assert (b["w"]["busy_s"], b["w"]["coroutine_s"]) == (20, 4)  # (durations as given)
    assert b["w"]["busy_share"] == pytest.approx(1.0)  # 2 threads busy the whole window


@pytest.mark.fixtures
def test_r4_report_lanes_and_budget(correlated_fixture):
    from correlate.reports.load import load_outputs

    tasks = load_outputs(correlated_fixture("xpdamoda-imageprocessing-r4"))["tasks"]
    budget = agg.worker_budget(tasks)
    assert budget.height == 4 and budget["threads_bound"].all()
    assert (budget["busy_share"] <= 1.0).all()
    lanes = agg.lanes(tasks)
    inferred = lanes.filter(pl.col("label").str.ends_with("(inferred)"))
    assert inferred.height == tasks.filter(pl.col("thread_inferred")).select(
        "pid", "thread_id").n_unique() > 0


def test_data_quality_says_every_match_and_what_was_inferred():
    summary = {"facts": {
        "worker_matches": {"tcp://a:1": {"pid": 5, "host": "h", "how": "time-overlap (9 of 9)"},
                           "tcp://a:2": {"pid": None, "host": "h", "how": "host only; why"}},
        "unmatched_worker_processes": {"h:6": "ambiguous among 1 unmatched worker(s)"}},
        "thread_inference": {"executions": 10, "executions_inferred": 7,
                             "executions_ambiguous": 1, "executions_without_evidence": 2,
                             "threads_inferred": 3, "threads_left_out": 0,
                             "segments_inferred": 40, "segments_ambiguous": 2}}
    notes = agg.matching_notes(summary)
    assert notes[0] == ("worker tcp://a:1: pid 5 on h — time-overlap (9 of 9)", False)
    assert notes[1][1] and "host only; why" in notes[1][0]
    assert notes[2] == ("worker process h:6 not matched: ambiguous among 1 unmatched worker(s)",
                        True)
    assert "7 of 10 executions" in notes[3][0] and notes[3][1]
    assert agg.matching_notes({}) == []


def test_a_workers_recorded_executor_threads_are_its_thread_count():
    # worker w ran on one of its 4 threads: 3 idle threads, not absent; x recorded none
    t = _tasks([(0, "w", 5, False, 0, 10), (1, "x", None, False, 0, 10),
                (2, "x", None, False, 0, 10)]).with_columns(
        pid=pl.when(pl.col("worker") == "w").then(1).otherwise(2))
    counts = pl.DataFrame({"host": ["h"], "pid": [1], "nthreads": [4]})
    b = {r["worker"]: r for r in agg.worker_budget(t, counts).iter_rows(named=True)}
    assert (b["w"]["threads"], b["w"]["threads_bound"]) == (4, False)
    assert b["w"]["busy_share"] == pytest.approx(0.25)
    assert (b["x"]["threads"], b["x"]["threads_bound"]) == (2, True)


def test_a_dead_workers_thread_time_ends_when_the_scheduler_removed_it():
    # GIVEN worker d (2 threads) whose last execution stopped at 4 s, removed by the
    # scheduler at 7 s, in a task window of 0 → 10 s
    t = _tasks([(0, "d", 1, False, 0, 4), (1, "d", 2, False, 1, 3),
                (2, "x", 5, False, 0, 10)])
    b = {r["worker"]: r for r in agg.worker_budget(t, died={"d": 7 * S}).iter_rows(named=True)}
    # THEN its thread time ends at its death, not at its last execution's stop
    assert (b["d"]["died"], b["d"]["died_known"]) == (True, True)
    assert b["d"]["thread_s"] == pytest.approx(2 * 7.0)
    assert b["d"]["idle_s"] == pytest.approx(14.0 - 6.0)
    assert (b["x"]["died"], b["x"]["thread_s"]) == (False, pytest.approx(10.0))
    # a death the scheduler did not record: the last execution's stop, said so
    b = {r["worker"]: r for r in agg.worker_budget(t, died={"d": None}).iter_rows(named=True)}
    assert (b["d"]["died_known"], b["d"]["thread_s"]) == (False, pytest.approx(2 * 4.0))
