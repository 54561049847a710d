"""Coroutine tasks (``async def``) on a real LocalCluster (2 processes × 2 threads, Yappi):
16 of them interleave on the workers' event loops, awaiting between their writes, beside 8
thread tasks doing file I/O. Each task records its own writes and CPU. With a darshan-runtime
the job runs under real LD_PRELOAD; otherwise genuine logs are written through libdarshan-util
from exactly the calls the tasks made (a coroutine's writes on its loop thread)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import polars as pl
import pytest
from collect_job import record
from test_cluster_groundtruth import _expected

from correlate.engine import correlate_to
from correlate.reports import write_reports
from correlate.sources.run_folder import load
from correlate.timeline.lifecycles import write_lifecycles
from testing.darshan_writer import write_logs_from_truth

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("coro")
    run, truth_file, lib = record(tmp, "coro", profile="yappi")
    truth = json.loads(truth_file.read_text())
    if not lib:
        write_logs_from_truth(run, truth)
    out = tmp / "out"
    correlate_to(load(run), out)
    write_reports(out)
    # (in chunks of five keys: each chunk's coroutines' awaits found as in the whole run)
    write_lifecycles(load(run), out / "task_lifecycles.jsonl", keys_per_chunk=5)
    return Tables(out), truth


class Tables:
    """The output folder, read like ``Correlated.tables``."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.tables = self

    def __getitem__(self, name: str) -> pl.DataFrame:
        return pl.read_parquet(self.out / f"{name}.parquet")


def test_every_coroutine_execution_is_recorded_on_its_loop_with_exactly_its_own_bytes(
        recorded):
    result, truth = recorded
    tasks = result.tables["tasks"]
    got = _expected(truth).join(tasks, on="key", how="left", suffix="_got")
    assert got.height == 24 and got["execution_id"].null_count() == 0
    threads = {t["key"]: t["thread"] for t in truth}
    for r in got.iter_rows(named=True):
        assert r["thread_id"] == threads[r["key"]], r["key"]
        for col in ("write_bytes", "read_bytes", "write_ops", "read_ops"):
            assert r[f"{col}_got"] == r[col], (r["key"], col)
        assert r["attribution"] == "exact-thread", r["key"]
    # the coroutines did interleave: two of them overlap on one loop
    coro = got.filter(pl.col("key").str.starts_with("coro-")).sort("thread_id", "start_ns")
    assert any(a["thread_id"] == b["thread_id"] and b["start_ns"] < a["stop_ns"]
               for a, b in itertools.pairwise(coro.iter_rows(named=True)))


def test_a_coroutines_cpu_is_the_loops_cpu_in_its_slices_and_its_awaits_are_not_running(
        recorded):
    result, truth = recorded
    got = _expected(truth).join(result.tables["tasks"], on="key", suffix="_got")
    for r in got.iter_rows(named=True):
        assert abs(r["cpu_s"] - r["cpu"]) <= max(0.10 * r["cpu"], 0.015), r["key"]
        if r["key"].startswith("coro-"):
            # three awaits of at least 4 ms each
            assert 0.012 <= r["awaiting_s"] <= r["duration_s"], r["key"]
        else:
            assert r["awaiting_s"] is None
    # each task's life says the same of its execution
    told = {s["key"]: [e.get("awaiting_s") for e in s["events"] if e["kind"] == "execution"]
            for s in map(json.loads, (result.out / "task_lifecycles.jsonl").read_text()
                         .splitlines())}
    assert {k: v for k, v in told.items() if v != [None]} == {
        r["key"]: [r["awaiting_s"]] for r in got.iter_rows(named=True)
        if r["awaiting_s"] is not None}


def test_each_coroutine_execution_has_its_own_yappi_rows(recorded):
    result, _truth = recorded
    funcs = result.tables["task_functions"]
    own = funcs.filter(pl.col("name") == "coro_task")
    assert sorted(own["key"].to_list()) == sorted(f"coro-{i}" for i in range(16))
    assert (own["ncall"] >= 1).all()
    burners = funcs.filter((pl.col("name") == "distinctive_cpu_burner")
                           & pl.col("key").str.starts_with("coro-"))
    assert burners.select("key").n_unique() == 16


def test_the_trace_draws_each_coroutine_as_its_slices_on_the_loops_track(recorded):
    result, _truth = recorded
    trace = json.loads((result.out / "trace.json").read_text())
    slices = result.tables["slices"]
    tasks = result.tables["tasks"].filter(pl.col("key").str.starts_with("coro-"))
    drawn = [e for e in trace["traceEvents"] if e["ph"] == "X" and "key" in e["args"]]
    per_execution = pl.DataFrame({"execution_id": [e["args"]["execution_id"] for e in drawn]})
    for eid in tasks["execution_id"]:
        n = slices.filter(pl.col("execution_id") == eid).height
        assert n >= 4 and per_execution.filter(pl.col("execution_id") == eid).height == n
    # one track per loop; its slices never partly overlap (interleaved coroutines side by side)
    coro = [e for e in drawn if e["args"]["key"].startswith("coro-")]
    for track in {(e["pid"], e["tid"]) for e in coro}:
        on = sorted((e["ts"], e["ts"] + e["dur"]) for e in drawn if (e["pid"], e["tid"]) == track)
        assert all(b[0] >= a[1] - 1e-3 for a, b in itertools.pairwise(on))
    assert all(e["args"]["awaiting_s"] > 0 for e in coro)
    # every write of a coroutine is nested in one of its own slices
    by_id = {}
    for e in coro:
        by_id.setdefault(e["args"]["execution_id"], []).append(e)
    writes = [e for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") == "io"
              and e["args"]["execution_id"] in by_id]
    assert len(writes) >= 48
    for w in writes:
        assert any((s["pid"], s["tid"]) == (w["pid"], w["tid"])
                   and s["ts"] - 1e-3 <= w["ts"] <= w["ts"] + w["dur"] <= s["ts"] + s["dur"] + 1e-3
                   for s in by_id[w["args"]["execution_id"]])
    assert "coro-" in (result.out / "report.md").read_text()
