"""Thread inference for executions without thread ids (correlate.attribution.threads)."""

from __future__ import annotations

import polars as pl

from correlate.attribution import threads as ti

MS = 1_000_000


def _ex(windows: list[tuple[int, int]], threads: list[int | None] | None = None):
    return pl.DataFrame({
        "execution_id": list(range(len(windows))),
        "local_start_ns": [a * MS for a, _ in windows],
        "local_stop_ns": [b * MS for _, b in windows],
        "thread_id": threads or [None] * len(windows)},
        schema={"execution_id": pl.Int64, "local_start_ns": pl.Int64,
                "local_stop_ns": pl.Int64, "thread_id": pl.UInt64})


def _seg(calls: list[tuple[int, float]]):
    return pl.DataFrame({"thread_id": [t for t, _ in calls],
                         "host_start_ns": [int(m * MS) for _, m in calls],
                         "host_stop_ns": [int(m * MS) + 10 for _, m in calls]},
                        schema={"thread_id": pl.UInt64, "host_start_ns": pl.Int64,
                                "host_stop_ns": pl.Int64})


def _threads(out: pl.DataFrame) -> list[int | None]:
    return out.sort("execution_id")["thread_id"].to_list()


def test_a_lone_window_ties_and_rules_out_the_rest():
    # 0 runs alone at t=1 on thread 7; at t=6, 0 and 1 both run: thread 7 still has 0, so
    # thread 8's call there can only be 1's
    ex = _ex([(0, 10), (5, 20)])
    out, counts = ti.infer(_seg([(7, 1), (8, 6), (8, 15)]), ex, None)
    assert _threads(out) == [7, 8] and out["thread_inferred"].all()
    assert counts["executions_inferred"] == 2 and counts["segments_inferred"] == 3
    assert counts["segments_ambiguous"] == 0


def test_two_windows_holding_the_same_calls_stay_unknown():
    ex = _ex([(0, 10), (0, 10)])
    out, counts = ti.infer(_seg([(7, 5), (8, 6)]), ex, None)
    assert _threads(out) == [None, None] and not out["thread_inferred"].any()
    assert counts["executions_ambiguous"] == 2 and counts["segments_ambiguous"] == 2


def test_the_thread_count_settles_what_calls_alone_cannot():
    # two threads. 0 runs alone when thread 7 calls: 0 is on 7. 1 does no I/O; thread 8's
    # call at t=20 lies in 1 and 2. Calls alone cannot say which; counting can: 1 starts
    # while 0 holds 7, so 1 is on 8 (and the call is 1's), and 2 runs on 7
    ex = _ex([(0, 10), (5, 40), (12, 30)])
    calls = _seg([(7, 1), (8, 20)])
    alone, counts = ti.infer(calls, ex, None)
    assert _threads(alone) == [7, None, None] and counts["segments_ambiguous"] == 1
    counted, counts = ti.infer(calls, ex, None, nthreads=2)
    assert _threads(counted) == [7, 8, 7]
    assert counts["segments_ambiguous"] == 0 and counts["executions_inferred"] == 3
    # a count the data contradicts (3 running at once on 2 threads) teaches nothing
    wrong, _ = ti.infer(_seg([(7, 1), (8, 20)]), _ex([(0, 10), (5, 40), (12, 30), (6, 35)]),
                        None, nthreads=2)
    assert _threads(wrong)[0] == 7


def test_a_thread_serving_overlapping_tasks_is_left_out():
    # 0 is on 7 (alone at t=1); thread 9's calls at t=7-8 can then only be 1's, and thread
    # 8's call at t=16 too: 1 cannot be on both. Which of 8 and 9 is not an executor thread
    # is unknowable, so neither is used, and 1 stays unknown
    ex = _ex([(0, 10), (5, 20)])
    out, counts = ti.infer(_seg([(7, 1), (8, 16), (9, 7), (9, 8)]), ex, None)
    assert _threads(out) == [7, None]
    assert counts["threads_left_out"] == 2


def test_main_thread_and_recorded_threads():
    ex = _ex([(0, 10), (5, 20)], [None, 8])
    out, counts = ti.infer(_seg([(1, 3), (7, 6)]), ex, main_thread_id=1)
    # the loop's call is no evidence; 1 is recorded on 8, so 7's call at t=6 is 0's
    assert _threads(out) == [7, 8]
    assert out["thread_inferred"].to_list() == [True, False]
    assert counts["executions"] == 1


def test_nothing_to_infer():
    ex = _ex([(0, 10)], [5])
    out, counts = ti.infer(_seg([(5, 1)]), ex, None)
    assert counts == {} and _threads(out) == [5]
    out, counts = ti.infer(_seg([(None, 1)]), _ex([(0, 10)]), None)
    assert counts == {} and _threads(out) == [None]
