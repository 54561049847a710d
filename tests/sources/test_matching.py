"""Worker ↔ host ↔ process matching of imported runs (correlate.sources.matching)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from conftest import fixture_path

from correlate.sources import matching, mofka_csv

# ------------------------------------------------------------------ the assignment itself


def _brute(cost: np.ndarray) -> float:
    n, m = cost.shape
    if n <= m:
        return min(sum(cost[i, p[i]] for i in range(n))
                   for p in itertools.permutations(range(m), n))
    return _brute(cost.T)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (4, 6), (6, 4), (5, 5), (2, 7)])
def test_assignment_is_optimal_and_one_to_one(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(20):
        # small integers: many ties, the hard case for a greedy pairing
        cost = rng.integers(-5, 5, size=shape).astype(float)
        pairs = matching.assignment(cost)
        assert len(pairs) == min(shape)
        assert len({r for r, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)
        assert sum(cost[r, c] for r, c in pairs) == _brute(cost)


def test_assignment_agrees_with_scipy():
    scipy_opt = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(7)
    for n, m in [(8, 8), (10, 14), (14, 10)]:
        cost = rng.normal(size=(n, m))
        rows, cols = scipy_opt.linear_sum_assignment(cost)
        pairs = matching.assignment(cost)
        assert sum(cost[r, c] for r, c in pairs) == pytest.approx(cost[rows, cols].sum())


# ------------------------------------------------------------------ synthetic runs

HOST = "node-a"


def _run(windows: dict[str, list[tuple[int, int]]], io: dict[int, list[int]],
         ips_hosts: dict[int, str] | None = None):
    """Executions per worker (windows in s), executor segments per pid (midpoints in s), and
    the worker processes (main thread 1, executor thread 2)."""
    ex = pl.DataFrame([(w, a * 10**9, b * 10**9) for w, ws in windows.items() for a, b in ws],
                      schema={"worker": pl.String, "local_start_ns": pl.Int64,
                              "local_stop_ns": pl.Int64}, orient="row"
                      ).with_columns(thread_id=pl.lit(None, pl.UInt64))
    host = ips_hosts or {}
    segs = pl.DataFrame([(host.get(pid, HOST), pid, 2, int(t * 1e9), int(t * 1e9) + 1000)
                         for pid, ts in io.items() for t in ts],
                        schema={"host": pl.String, "pid": pl.Int64, "thread_id": pl.UInt64,
                                "local_start_ns": pl.Int64, "local_stop_ns": pl.Int64},
                        orient="row")
    procs = pl.DataFrame([(host.get(pid, HOST), pid, "worker", f"/tmp/worker-{pid}", 1)
                          for pid in io],
                         schema={"host": pl.String, "pid": pl.Int64, "role": pl.String,
                                 "local_directory": pl.String, "main_thread_id": pl.UInt64},
                         orient="row")
    return ex, segs, procs


def _inside(ws: list[tuple[int, int]], n: int = 40) -> list[float]:
    out = []
    for a, b in ws:
        out += list(np.linspace(a + 0.01, b - 0.01, n // len(ws)))
    return out


def test_overlap_assignment_pairs_all_at_once_where_pair_by_pair_cannot():
    # worker B's windows hold all of process 11's I/O *and* most of process 12's, so
    # process 12 alone is no clear pick for B; one-to-one, the only consistent pairing is
    # A-12, B-11, C-13
    wins = {"tcp://10.0.0.1:1": [(0, 10), (20, 30)],
            "tcp://10.0.0.1:2": [(0, 10), (40, 50), (60, 70)],
            "tcp://10.0.0.1:3": [(80, 90), (100, 110)]}
    io = {11: _inside([(40, 50), (60, 70)]) + _inside([(0, 10)], 4),
          12: _inside([(0, 10), (20, 30)]),
          13: _inside([(80, 90), (100, 110)])}
    ex, segs, procs = _run(wins, io)
    got, left = matching.match_workers(ex, segs, procs, list(wins), {})
    assert {w: m.pid for w, m in got.items()} == {
        "tcp://10.0.0.1:1": 12, "tcp://10.0.0.1:2": 11, "tcp://10.0.0.1:3": 13}
    ev = got["tcp://10.0.0.1:2"].evidence
    assert ev["share_inside"] == 1.0 and ev["margin_segments"] > 0
    assert ev["executor_segments"] == len(io[11])
    assert not left


def test_indistinguishable_workers_stay_unmatched_and_say_why():
    same = [(0, 10), (20, 30)]
    wins = {"tcp://10.0.0.1:1": same, "tcp://10.0.0.1:2": same}
    io = {11: _inside(same), 12: _inside(same)}
    ex, segs, procs = _run(wins, io)
    got, left = matching.match_workers(ex, segs, procs, list(wins), {})
    for m in got.values():
        assert m.pid is None and "ambiguous" in m.how and m.host == HOST
    assert set(left) == {(HOST, 11), (HOST, 12)}
    assert all("ambiguous" in why for why in left.values())


def test_process_whose_io_falls_outside_every_window_is_not_taken_by_overlap():
    wins = {"tcp://10.0.0.1:1": [(0, 10)], "tcp://10.0.0.1:2": [(20, 30)]}
    io = {11: _inside([(50, 60)]), 12: _inside([(70, 80)])}
    ex, segs, procs = _run(wins, io)
    got, left = matching.match_workers(ex, segs, procs, list(wins), {})
    for m in got.values():
        assert m.pid is None and "only 0%" in m.how
    assert len(left) == 2


def test_elimination_keeps_its_match_but_records_contradicting_io():
    wins = {"tcp://10.0.0.1:1": [(0, 10)]}
    io = {11: _inside([(50, 60)])}
    ex, segs, procs = _run(wins, io)
    got, _left = matching.match_workers(ex, segs, procs, list(wins), {})
    m = got["tcp://10.0.0.1:1"]
    assert m.pid == 11 and m.how.startswith("elimination")
    assert m.evidence["inside_windows"] == 0 and m.evidence["executor_segments"] == 40
    assert matching.contradicted(got) == ["tcp://10.0.0.1:1"]


def test_host_of_an_ip_by_elimination_then_process_by_overlap():
    # 10.0.0.1's worker is matched by its local directory on node-a; 10.0.0.2 must be node-b,
    # whose two processes are then told apart by their I/O
    wins = {"tcp://10.0.0.1:1": [(0, 100)],
            "tcp://10.0.0.2:1": [(0, 10), (20, 30)], "tcp://10.0.0.2:2": [(40, 50)]}
    io = {11: _inside([(0, 100)]), 21: _inside([(0, 10), (20, 30)]), 22: _inside([(40, 50)])}
    ex, segs, procs = _run(wins, io, {11: "node-a", 21: "node-b", 22: "node-b"})
    got, left = matching.match_workers(ex, segs, procs, list(wins),
                                       {"tcp://10.0.0.1:1": "/tmp/worker-11"})
    assert got["tcp://10.0.0.1:1"].how == "worker.e local directory"
    assert (got["tcp://10.0.0.2:1"].host, got["tcp://10.0.0.2:1"].pid) == ("node-b", 21)
    assert (got["tcp://10.0.0.2:2"].host, got["tcp://10.0.0.2:2"].pid) == ("node-b", 22)
    assert not left


def test_a_process_claimed_by_two_workers_goes_to_neither_by_that_evidence():
    wins = {"tcp://10.0.0.1:1": [(0, 10)], "tcp://10.0.0.1:2": [(20, 30)]}
    io = {11: _inside([(0, 10)]), 12: _inside([(20, 30)])}
    ex, segs, procs = _run(wins, io)
    pairs = {"tcp://10.0.0.1:1": "/tmp/worker-11", "tcp://10.0.0.1:2": "/tmp/worker-11"}
    got, _left = matching.match_workers(ex, segs, procs, list(wins), pairs)
    # the contradictory log pairing is dropped; the I/O decides
    assert {w: m.pid for w, m in got.items()} == {"tcp://10.0.0.1:1": 11,
                                                  "tcp://10.0.0.1:2": 12}
    assert all(m.how.startswith("time-overlap") for m in got.values())


# ------------------------------------------------------------------ real data

R4_EXECUTING = ("tcp://10.201.3.17:33095", "tcp://10.201.3.17:35547",
                "tcp://10.201.3.17:42345", "tcp://10.201.3.17:45521")


@pytest.mark.fixtures
def test_r4_every_executing_worker_matched_with_evidence():
    frames = mofka_csv.load(fixture_path("xpdamoda-imageprocessing-r4"))
    matches = frames.facts["worker_matches"]
    executing = set(frames.executions["worker"].unique())
    assert executing == set(R4_EXECUTING)
    for w in executing:
        m = matches[w]
        assert m["pid"] is not None, m
        # whatever the method, the overlap of its process's I/O with its windows is recorded
        assert m["inside_windows"] >= 0.99 * m["executor_segments"] > 0
    pids = [matches[w]["pid"] for w in executing]
    assert len(set(pids)) == 4
    # every worker process is matched or says why not
    procs = frames.processes.filter(pl.col("role") == "worker")
    for r in procs.iter_rows(named=True):
        assert r["pid"] is not None or r["match"], r


@pytest.mark.fixtures
def test_r4_without_worker_log_the_io_alone_finds_the_same_processes(tmp_path):
    src = fixture_path("xpdamoda-imageprocessing-r4")
    for f in src.iterdir():  # links, not copies: the fixture stays in ../shared
        if f.name != "worker.e":
            (tmp_path / f.name).symlink_to(f)
    with_log = mofka_csv.load(src).facts["worker_matches"]
    without = mofka_csv.load(tmp_path).facts["worker_matches"]
    for w in R4_EXECUTING:
        assert without[w]["how"].startswith("time-overlap")
        assert without[w]["pid"] == with_log[w]["pid"]
        assert without[w]["margin_segments"] > 0
    # the idle node's workers: host by elimination, process unknown, and said so
    idle = [w for w in without if w not in R4_EXECUTING]
    assert len(idle) == 4
    for w in idle:
        assert without[w]["pid"] is None and "elimination" in without[w]["how"]
        assert "no execution windows" in without[w]["how"]


@pytest.mark.fixtures
def test_r4_attributes_what_the_task_threads_did_inside_task_windows():
    """Every executor-thread byte of the four executing workers' processes inside their task
    windows is attributed (and nothing else), mostly to the one execution on its thread."""
    from correlate.engine import correlate_frames

    frames = mofka_csv.load(fixture_path("xpdamoda-imageprocessing-r4"))
    result = correlate_frames(frames)
    io, tasks = result.summary["io"], result.tables["tasks"]
    procs = frames.processes.filter(pl.col("role") == "worker")
    mids = matching.executor_midpoints(
        frames.io_segments.with_columns(row=pl.int_range(pl.len())), procs)
    expected = 0
    for (worker,), ex in frames.executions.group_by("worker"):
        host, pid = ex["host"][0], ex["pid"][0]
        assert pid is not None, worker
        seg = (frames.io_segments.filter((pl.col("host") == host) & (pl.col("pid") == pid))
               .join(procs.select("host", "pid", "main_thread_id"), on=["host", "pid"])
               .filter(pl.col("thread_id") != pl.col("main_thread_id"))
               .with_columns(mid=(pl.col("local_start_ns") + pl.col("local_stop_ns")) // 2)
               .sort("mid"))
        win = matching.merged_windows(ex)[worker]
        assert matching.inside(seg.select("mid"), win) == matching.inside(mids[(host, pid)], win)
        expected += seg.join_asof(win, left_on="mid", right_on="s").filter(
            pl.col("mid") <= pl.col("e"))["length"].sum()
    assert io["attributed"]["bytes"] == pytest.approx(expected, abs=1.0)
    by = io["attributed_by_method"]
    assert by["inferred-thread"]["bytes"] > 0.5 * io["attributed"]["bytes"]
    # inferred threads: DXT threads of the execution's own process, one task at a time each
    inferred = tasks.filter(pl.col("thread_inferred"))
    assert inferred.height == result.summary["thread_inference"]["executions_inferred"] > 0
    dxt = frames.io_segments.select("pid", "thread_id").unique()
    assert inferred.select("pid", "thread_id").join(dxt, on=["pid", "thread_id"],
                                                     how="anti").is_empty()
    overlap = (inferred.sort("pid", "thread_id", "local_start_ns")
               .filter((pl.col("local_start_ns") < pl.col("local_stop_ns").shift(1))
                       .over("pid", "thread_id")))
    assert overlap.is_empty()
