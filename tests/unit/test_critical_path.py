"""The critical path's gates and walk over literal task tables (the real-cluster checks are in
tests/engine/test_findings.py)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from correlate.findings.critical_path import GATES, critical_path, gates, walk
from correlate.schema import TABLES, conform

MS = 1_000_000


def _tasks(rows: list[tuple]) -> pl.DataFrame:
    """(key, thread, start ms, stop ms, wait_thread ms or None, wait_queued ms or None)."""
    df = pl.DataFrame(rows, orient="row", schema=["key", "thread_id", "start", "stop",
                                                  "wait_thread", "wait_queued"])
    return conform(df.with_row_index("execution_id").with_columns(
        prefix=pl.col("key").str.split("-").list.first(), host=pl.lit("h"), pid=pl.lit(1),
        worker=pl.lit("w"), start_ns=pl.col("start") * MS, stop_ns=pl.col("stop") * MS,
        duration_s=(pl.col("stop") - pl.col("start")) / 1e3, cpu_s=pl.lit(0.0),
        io_time_s=pl.lit(0.0), status=pl.lit("ok"),
        wait_thread_s=pl.col("wait_thread") / 1e3, wait_queued_s=pl.col("wait_queued") / 1e3),
        TABLES["tasks"])


def _deps(edges: list[tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame(edges, orient="row", schema={"key": pl.String, "depends_on": pl.String})


def _times(rows: list[tuple[str, int, int]]) -> pl.DataFrame:
    """(key, submitted ms, assigned ms)."""
    return pl.DataFrame(rows, orient="row", schema=["key", "submitted", "assigned"]).select(
        "key", submitted_ns=pl.col("submitted") * MS, assigned_ns=pl.col("assigned") * MS)


def _path(tasks, deps, times) -> list[tuple[str, str]]:
    return critical_path(tasks, deps, times).select("key", pl.col("gate").cast(pl.String)).rows()


def test_a_task_ready_before_its_thread_freed_is_released_by_the_thread():
    tasks = _tasks([("a-0", 1, 0, 100, 0, None), ("b-0", 1, 101, 150, 90, None)])
    times = _times([("a-0", 0, 0), ("b-0", 0, 0)])
    assert _path(tasks, _deps([]), times) == [("a-0", "first"), ("b-0", "thread")]
    # (a code per execution, as the critical path table declares it, never a text per row)
    assert gates(tasks, _deps([]), times).schema["gate"] == pl.Enum(GATES)


def test_a_task_ready_only_after_its_thread_freed_did_not_wait_for_it():
    tasks = _tasks([("a-0", 1, 0, 100, 0, None), ("b-0", 1, 130, 150, 0.01, None)])
    times = _times([("a-0", 0, 0), ("b-0", 0, 0)])
    assert _path(tasks, _deps([]), times) == [("b-0", "first")]


def test_the_dependency_that_ended_last_beats_an_earlier_thread():
    tasks = _tasks([("a-0", 1, 0, 50, 0, None), ("a-1", 2, 0, 120, 0, None),
                    ("b-0", 1, 125, 200, 80, None)])
    times = _times([("a-0", 0, 0), ("a-1", 0, 0), ("b-0", 0, 121)])
    path = critical_path(tasks, _deps([("b-0", "a-1")]), times)
    assert path.select("key", pl.col("gate").cast(pl.String)).rows() == [
        ("a-1", "first"), ("b-0", "dependency")]
    # the 5 ms before b-0: 1 ms until its assignment, the rest the worker's
    wait = path.row(1, named=True)
    assert round(wait["wait_s"], 6) == 0.005 and round(wait["wait_scheduler_s"], 6) == 0.001
    assert round(wait["wait_other_s"], 6) == 0.004 and wait["wait_submission_s"] == 0
    assert path["duration_s"].sum() + path["wait_s"].sum() == 0.2


def test_a_graph_submitted_after_an_earlier_result_is_released_by_it():
    tasks = _tasks([("a-0", 1, 0, 100, 0, None), ("c-0", 2, 10, 60, 0, None),
                    ("b-0", 2, 130, 180, 0, None)])
    times = _times([("a-0", 0, 0), ("c-0", 0, 0), ("b-0", 120, 121)])
    assert _path(tasks, _deps([]), times) == [("a-0", "first"), ("b-0", "submission")]


def test_a_queued_task_is_released_by_the_end_that_freed_a_thread():
    tasks = _tasks([("a-0", 1, 0, 100, 0, None), ("b-0", 2, 0, 40, 0, None),
                    ("q-0", 2, 102, 150, 0, 100)])
    times = _times([("a-0", 0, 0), ("b-0", 0, 0), ("q-0", 0, 101)])
    assert _path(tasks, _deps([]), times) == [("a-0", "first"), ("q-0", "queue")]


def test_the_walk_ends_at_a_predecessor_that_ended_after_its_successor():
    ids = np.array([0, 1, 2])
    # 2 ← 1 ← 0, but 0 "ended" after 1 (misaligned clocks): the walk stops at 1
    assert walk(ids, np.array([-1, 0, 1]), np.array([50, 40, 60])) == [1, 2]
    assert walk(ids, np.array([2, 0, 1]), np.array([10, 20, 30])) == [0, 1, 2]


def test_a_links_other_time_is_what_neither_cpu_nor_io_took_at_least():
    """CPU inside I/O calls counts in both: a link whose CPU and I/O add up to more than its
    wall time has no time left for neither (0, not below), one with less has the rest."""
    tasks = _tasks([("a-0", 1, 0, 100, 0, None), ("b-0", 1, 101, 201, 90, None)]).with_columns(
        cpu_s=pl.Series([0.08, 0.03]), io_time_s=pl.Series([0.05, 0.02]))
    path = critical_path(tasks, _deps([]), _times([("a-0", 0, 0), ("b-0", 0, 0)]))
    assert path.get_column("other_s").to_list() == [0.0, pytest.approx(0.05)]


def test_distinct_read_bytes_count_each_byte_once():
    from correlate.findings.io_rules import distinct_read_bytes

    seg = pl.DataFrame({"path": ["a", "a", "a", "a", "b", "b"],
                        "op": ["read"] * 5 + ["write"],
                        "offset": [0, 50, 100, 300, 0, 0],
                        "length": [100, 100, 50, 10, 10, 99]})
    got = dict(distinct_read_bytes(seg.lazy(), ["a", "b"]).rows())
    # a: [0, 150) ∪ [300, 310); b: the write is not a read
    assert got == {"a": 160, "b": 10}


def _waited(**waits: float) -> pl.DataFrame:
    """a-0 on worker 1, then b-0, which depends on it, on worker 2, 60 ms later: ``waits``
    are b-0's transfer_s / input_read_back_s."""
    tasks = _tasks([("a-0", 1, 0, 100, 0, None), ("b-0", 2, 160, 260, 0, None)])
    return tasks.with_columns(**{k: pl.when(pl.col("key") == "b-0").then(v)
                                 for k, v in waits.items()},
                              transfer_bytes=pl.when(pl.col("key") == "b-0").then(1000),
                              transfer_sources=pl.when(pl.col("key") == "b-0").then(pl.lit("w1")))


def _found(tasks: pl.DataFrame) -> list[dict]:
    """The findings of the path's waits (b-0 also runs alone: a serial section, left out)."""
    from correlate.findings import Evidence
    from correlate.findings.rules import as_json, findings

    deps, times = _deps([("b-0", "a-0")]), _times([("a-0", 0, 0), ("b-0", 0, 101)])
    path = critical_path(tasks, deps, times)
    return [f for f in as_json(findings(tasks, TABLES["task_files"].empty(), path,
                                        Evidence(io_captured=False, dxt=False)))
            if f["kind"] in ("waiting-for-inputs", "spill")]


def test_a_link_that_waited_for_its_inputs_to_travel_is_waiting_for_inputs():
    (f,) = _found(_waited(transfer_s=0.05))
    assert (f["kind"], f["prefixes"], f["keys"]) == ("waiting-for-inputs", ["b"], ["b-0"])
    # the 50 ms of transfer on the path: the window (260 ms) would end 50 ms earlier, above
    # the 100 ms the two threads' work needs
    assert round(f["cost_s"], 6) == 0.05 and "1,000 bytes" in f["evidence"]


def test_a_link_that_waited_for_spilled_inputs_is_spill():
    (f,) = _found(_waited(input_read_back_s=0.03))
    assert (f["kind"], f["keys"], round(f["cost_s"], 6)) == ("spill", ["b-0"], 0.03)


@pytest.mark.parametrize(("spilled", "found_as"), [(None, "partial"), (0.0, None),
                                                     (40.0 * 2**20, "whole")])
def test_a_predecessor_whose_result_was_written_to_spill_as_it_was_stored_is_spill(
        spilled, found_as):
    """Dask stores a result (writing it to disk when it is over the spill target) before it
    tells the scheduler the task ended: the write delayed the dependent's assignment."""
    from correlate.findings import Evidence, stored
    from correlate.findings.rules import as_json, findings

    # GIVEN a-0 (0-100 ms), then b-0, which depends on it, assigned at 250 ms and run at 300 ms;
    # Dask's disk-write of a-0's result took 120 ms; the run's spill written is unknown (no
    # Darshan), none (every file counted), or 40 MiB
    tasks = _tasks([("a-0", 1, 0, 100, 0, None), ("b-0", 2, 300, 400, 0, None)]).with_columns(
        spilled_bytes=pl.lit(spilled, pl.Float64))
    path = critical_path(tasks, _deps([("b-0", "a-0")]), _times([("a-0", 0, 0), ("b-0", 0, 250)]))
    writes = stored(pl.DataFrame({
        "key": ["a-0", "b-0"], "worker": ["w", "w"], "action": ["disk-write", "compute"],
        "reported_start_ns": [100 * MS, 300 * MS], "reported_stop_ns": [220 * MS, 400 * MS]}))
    # WHEN the rules run
    found = [f for f in as_json(findings(tasks, TABLES["task_files"].empty(), path,
                                         Evidence(io_captured=False, dxt=False, stored=writes)))
             if f["kind"] == "spill"]
    # THEN (but where no spill file was written: a slow store) b-0 waited those 120 ms, of
    # its 150 ms scheduler wait, on the path
    if found_as is None:
        assert found == []
        return
    (f,) = found
    assert (f["keys"], round(f["cost_s"], 6)) == (["b-0"], 0.12)
    assert "0.120 s for their inputs to be written to Dask's spill files" in f["evidence"]
    assert (f["partial"] is None) == (found_as == "whole")


def test_without_waits_there_is_no_finding():
    assert _found(_waited()) == []


def test_movable_work_is_the_waiting_that_idle_threads_could_have_taken():
    from correlate.findings.timing import movable_s

    # GIVEN two threads: A runs 0-10 s; B, ready at 0 on A's worker, waits for A's thread and
    # runs 10-20 s; C runs 0-2 s on the other thread, which is then idle
    s = 1_000_000_000
    tasks = pl.DataFrame({"start_ns": [0, 10 * s, 0], "stop_ns": [10 * s, 20 * s, 2 * s],
                          "wait_thread_s": [0.0, 10.0, None]})
    # WHEN / THEN B's wait overlapped an idle thread from 2 s to 10 s: 8 thread-seconds
    assert movable_s(tasks, 2) == 8.0
    # with one thread in all, nothing was idle while B waited
    assert movable_s(tasks.head(2), 1) == 0.0


def test_keys_as_codes_give_the_path_their_texts_give():
    """The engine's keys are Categorical, joined by their codes when every key table holds
    codes, else by a hash of their text: the same path either way, and with a table of text
    beside tables of codes."""
    tasks = _tasks([("a-0", 1, 0, 50, 0, None), ("a-1", 2, 0, 120, 0, None),
                    ("b-0", 1, 125, 200, 80, None), ("c-0", 2, 210, 300, 0, None)])
    deps = _deps([("b-0", "a-1"), ("c-0", "b-0")])
    times = _times([("a-0", 0, 0), ("a-1", 0, 0), ("b-0", 0, 121), ("c-0", 0, 205)])

    def coded(df: pl.DataFrame, *names: str) -> pl.DataFrame:
        return df.with_columns(pl.col(names).cast(pl.Categorical))

    texts = critical_path(tasks, deps, times)
    assert texts.select("key", pl.col("gate").cast(pl.String)).rows() == [
        ("a-1", "first"), ("b-0", "dependency"), ("c-0", "dependency")]
    for t, d, s in ((coded(tasks, "key"), coded(deps, "key", "depends_on"),
                     coded(times, "key")), (coded(tasks, "key"), deps, times)):
        path = critical_path(t, d, s)
        assert path.with_columns(pl.col("key").cast(pl.String)).equals(texts)
