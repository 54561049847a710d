"""correlate.timeline.arrivals on literal frames: steps and ranks as the senders said them (else the
key's task group), the wait on external inputs from the first arrival (or the submission, if
earlier) to the last, and per step the spread and the lag to the analytics' end."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.schema import TABLES, conform
from correlate.timeline import arrivals

S = 1_000_000_000


def frame(name: str, rows: list[dict]) -> pl.DataFrame:
    return conform(pl.DataFrame(rows), TABLES[name])


def scattered() -> pl.DataFrame:
    rows = []
    for step, times in enumerate([(1, 2, 3), (11, 12, 18)]):
        for rank, t in enumerate(times):
            rows.append({"local_time_ns": t * S, "key": f"('field-{step}', {rank})",
                         "worker": f"tcp://w:{rank % 2}", "nbytes": 100, "client": f"C{rank}"})
    return frame("data_arrivals", rows)


def senders() -> pl.DataFrame:
    return frame("senders", [
        {"local_time_ns": 0, "client": "C0", "rank": 0},
        {"local_time_ns": 0, "client": "C1", "rank": 1},
        # C2 names its rank per scatter, and one step explicitly
        {"local_time_ns": 18 * S, "client": "C2", "rank": 2, "key": "('field-1', 2)",
         "step": "t1", "send_s": 0.5},
        {"local_time_ns": 3 * S, "client": "C2", "rank": 2, "key": "('field-0', 2)",
         "send_s": 0.25}])


def test_arrivals_carry_the_rank_and_step_the_sender_said():
    got = arrivals.arrivals_table(scattered(), senders(), TABLES["arrivals"].empty())
    assert got.select("key", "step", "rank", "send_s").rows() == [
        ("('field-0', 0)", "field-0", 0, None), ("('field-0', 1)", "field-0", 1, None),
        ("('field-0', 2)", "field-0", 2, 0.25), ("('field-1', 0)", "field-1", 0, None),
        ("('field-1', 1)", "field-1", 1, None), ("('field-1', 2)", "t1", 2, 0.5)]
    assert set(got["source"]) == {"update-data"}


def test_no_arrivals_no_rows():
    empty = arrivals.arrivals_table(TABLES["data_arrivals"].empty(), TABLES["senders"].empty(),
                                    TABLES["arrivals"].empty())
    assert empty.is_empty() and empty.schema == TABLES["arrivals"].empty().schema
    assert arrivals.summary(empty, TABLES["arrival_steps"].empty(),
                            TABLES["senders"].empty()) is None


def test_wait_runs_from_first_input_or_submission_to_last_input():
    arrived = pl.DataFrame({"key": ["a", "b", "c"], "t_arrival": [1 * S, 4 * S, 9 * S]})
    deps = pl.DataFrame({"key": ["x", "x", "y", "y", "z", "w"],
                         "depends_on": ["a", "b", "b", "c", "a", "q"]})
    submitted = pl.DataFrame({"key": ["x", "y", "z", "w"], "t_wait": [6 * S, 2 * S, 5 * S, 0]})
    got = dict(arrivals.external_waits(arrived, deps, submitted).rows())
    # x: inputs at 1 and 4, submitted at 6 (after both): 4 − 1; y: submitted at 2, before
    # its first input (4): 9 − 2; z: its one input was there before it was submitted: 0
    assert got == pytest.approx({"x": 3.0, "y": 7.0, "z": 0.0})


def test_steps_spread_last_sender_and_lag_to_the_analytics_end():
    arr = arrivals.arrivals_table(scattered(), senders(), TABLES["arrivals"].empty())
    deps = pl.DataFrame({"key": ["s0", "s0", "s0", "s1", "s1", "s1", "late"],
                         "depends_on": ["('field-0', 0)", "('field-0', 1)", "('field-0', 2)",
                                        "('field-1', 0)", "('field-1', 1)", "('field-1', 2)",
                                        "s1"]})
    tasks = pl.DataFrame({"key": ["s0", "s1", "late"], "stop_ns": [5 * S, 20 * S, 99 * S],
                          "wait_external_s": [2.0, 7.0, None]})
    steps = arrivals.steps_table(arr, deps, tasks)
    assert steps.select("step", "keys", "senders", "nbytes", "spread_s", "last_rank",
                        "analytics_tasks", "lag_s", "wait_external_s").rows() == [
        ("field-0", 3, 3, 300, 2.0, 2, 1, 2.0, 2.0),
        ("field-1", 2, 2, 200, 1.0, 1, 1, 8.0, 7.0),  # C2's block of step 1 is named t1
        ("t1", 1, 1, 100, 0.0, 2, 1, 2.0, 7.0)]
    summary = arrivals.summary(arr, steps, senders())
    assert summary["keys"] == 6 and summary["nbytes"] == 600 and summary["steps"] == 3
    assert summary["lag_s"]["max"] == 8.0 and summary["lag_s"]["max_step"] == "field-1"
    by = {s["sender"]: s for s in summary["senders"]}
    assert by["rank 2"]["send_s"] == 0.75 and by["rank 0"]["send_s"] is None
    assert by["rank 2"]["last_in_steps"] == 2 and by["rank 1"]["last_in_steps"] == 1


def test_external_state_tasks_arrive_with_their_memory_transition():
    tr = frame("transitions", [
        {"key": "x", "side": "scheduler", "start": "released", "finish": "waiting",
         "local_time_ns": 1},
        {"key": "ext", "side": "scheduler", "start": "released", "finish": "deisa",
         "local_time_ns": 2},
        {"key": "ext", "side": "scheduler", "start": "deisa", "finish": "memory",
         "local_time_ns": 9, "worker": "tcp://w:1", "nbytes": 64},
        {"key": "ext", "side": "worker", "start": "released", "finish": "memory",
         "local_time_ns": 8, "worker": "tcp://w:1"}])
    from correlate.timeline import waits

    ext = arrivals.external_state_arrivals(tr, waits.external_arrivals(tr))
    got = arrivals.arrivals_table(TABLES["data_arrivals"].empty(), TABLES["senders"].empty(),
                                  ext)
    assert got.select("time_ns", "key", "step", "worker", "nbytes", "client", "source").rows() \
        == [(9, "ext", "ext", "tcp://w:1", 64, None, "external-state")]


def test_a_scatter_call_of_several_keys_is_timed_once():
    data = frame("data_arrivals", [
        {"local_time_ns": 5 * S, "key": k, "worker": "tcp://w:1", "nbytes": 10, "client": "C"}
        for k in ("('a-0', 0)", "('a-0', 1)")])
    notes = frame("senders", [{"local_time_ns": 4 * S, "client": "C", "rank": 3, "key": k,
                               "send_s": 0.5} for k in ("('a-0', 0)", "('a-0', 1)")])
    arr = arrivals.arrivals_table(data, notes, TABLES["arrivals"].empty())
    steps = arrivals.steps_table(arr, pl.DataFrame(schema={"key": pl.String,
                                                           "depends_on": pl.String}),
                                 pl.DataFrame(schema={"key": pl.String, "stop_ns": pl.Int64,
                                                      "wait_external_s": pl.Float64}))
    assert steps.select("step", "keys", "nbytes", "analytics_tasks", "lag_s").rows() == [
        ("a-0", 2, 20, 0, None)]
    summary = arrivals.summary(arr, steps, notes)
    assert summary["senders"] == [{"sender": "rank 3", "keys": 2, "nbytes": 20, "send_s": 0.5,
                                   "last_in_steps": 1}]
    assert summary["lag_s"]["mean"] is None and summary["lag_s"]["trend_s_per_step"] is None
