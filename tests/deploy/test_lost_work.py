"""A worker SIGKILLed mid-run (`dask scheduler` + two `dask worker --no-nanny`): the
executions whose results died with it are rows of status ``lost`` (those it never wrote, from
the scheduler's startstops), counted as the scheduler's own transitions count them, and the
terminal, report.md, summary.json and `correlate story` say the same."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import polars as pl
import pytest
from procs import BIN, HERE, env, processes
from test_dask_cli import wait_for

from testing.raw_parts import read_raw

pytestmark = pytest.mark.cluster


def test_a_killed_workers_lost_work_is_counted_as_the_scheduler_counts_it(tmp_path):
    run, sched_file, victim_file = tmp_path / "run", tmp_path / "s.json", tmp_path / "victim"
    with processes() as procs:
        procs.start([str(BIN / "dask"), "scheduler", "--scheduler-file", str(sched_file),
                     "--preload", "collectors.preload", "--host", "127.0.0.1", "--port", "0",
                     "--no-dashboard"], tmp_path / "scheduler.log", env=env(run))
        wait_for(sched_file)
        for i in range(2):
            procs.start([str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file),
                         "--preload", "collectors.preload", "--no-nanny", "--nthreads", "2",
                         "--host", "127.0.0.1", "--no-dashboard"], tmp_path / f"w{i}.log",
                        env=env(run))
        client = subprocess.run([sys.executable, str(HERE / "lost_client.py"), str(sched_file),
                                 str(victim_file)], env=env(), capture_output=True, text=True,
                                timeout=120)
        assert client.returncode == 0, client.stderr[-3000:]
        procs.wait_all(timeout=60)
    victim = victim_file.read_text()
    # the scheduler's own record: processing -> memory, with the worker that ran it
    done = read_raw(run, "scheduler_transitions", "scheduler-*").filter(
        (pl.col("start") == "processing") & (pl.col("finish") == "memory")).sort("local_time_ns")
    on_victim = done.filter(pl.col("worker") == victim)
    again = done.filter(pl.col("worker") != victim).join(
        on_victim.select("key", died_t="local_time_ns"), on="key").filter(
        pl.col("local_time_ns") > pl.col("died_t"))
    recomputed = again.get_column("key").unique().sort().to_list()
    assert recomputed  # the kill came while the victim held results

    proc = subprocess.run([str(BIN / "correlate"), str(run)], env=env(), capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = run / "correlated"
    summary = json.loads((out / "summary.json").read_text())
    tasks = pl.read_parquet(out / "tasks.parquet")
    lost = tasks.filter(pl.col("status") == "lost")
    assert sorted(lost["key"].to_list()) == recomputed  # one lost execution per recomputation
    assert set(lost["worker"]) == {victim}
    unwritten = lost.filter(pl.col("window_source") == "scheduler-startstops")
    assert unwritten.height > 0  # the kill came between two flushes
    # not measured where never written; measured where the worker flushed it before it died
    assert unwritten["cpu_s"].null_count() == unwritten.height
    assert lost.filter(pl.col("window_source") != "scheduler-startstops")["cpu_s"].null_count() == 0
    compute_s = round(float(lost["duration_s"].sum()), 6)
    # its death: when the scheduler removed it (its own remove_worker event)
    removed = read_raw(run, "cluster_events", "scheduler-*").filter(
        (pl.col("event").cast(pl.String) == "remove_worker") & (pl.col("address") == victim))
    died_ns = int(removed["local_time_ns"].max())
    # the span lost: the critical path's links that are the recomputations
    path = pl.read_parquet(out / "critical_path.parquet")
    redone = tasks.filter(pl.col("key").is_in(recomputed) & (pl.col("status") != "lost"))
    span_s = round(float(path.filter(pl.col("execution_id").is_in(
        redone["execution_id"].implode()))["duration_s"].sum()), 6)
    assert summary["lost"] == {
        "workers_died": [victim], "died_ns": {victim: died_ns}, "executions": len(recomputed),
        "from_scheduler_records": unwritten.height, "tasks_recomputed": len(recomputed),
        "compute_s": compute_s, "by_prefix": {"tile": len(recomputed)}, "span_s": span_s}
    # every completed execution is a run: the scheduler's processing -> memory, each once
    assert summary["runs"] == done.height == tasks.filter(pl.col("status") != "cancelled").height
    assert tasks.filter(pl.col("window_source") == "scheduler-startstops")["worker"].unique()\
        .to_list() == [victim]
    line = (f"{len(recomputed):,} execution(s) lost with 1 worker(s) that died (their results "
            f"died with the worker; {len(recomputed):,} task(s) recomputed, {compute_s:.3f} s of "
            f"compute lost, {span_s:.3f} s of the critical path recomputing them")
    report = (out / "report.md").read_text()
    assert line in proc.stdout and line in report and line in (out / "report.html").read_text()
    # the dead worker is a worker of the run: in the Run table's count and the time table
    assert "| workers × threads | 2 × 2 threads |" in report
    # its row in the time table: 2 threads × its life, from the task window's start to its
    # death (not to its last execution's stop; never before it: the worker's clock and the
    # scheduler's differ by milliseconds)
    last = tasks.filter(pl.col("worker") == victim)["stop_ns"].max()
    lived = 2 * (max(died_ns, last) - tasks["start_ns"].min()) / 1e9
    row = next(r for r in report.splitlines()
               if r.startswith(f"| `{victim}` (died⁴) | 2 | {lost.height} |"))
    value, unit = row.split(" | ")[3].split()
    assert float(value) * {"s": 1.0, "ms": 1e-3}[unit] == pytest.approx(lived, abs=1e-3), row
    assert "its thread time ends when the scheduler removed it;" in report
    # its death is drawn where its lanes end: report.html's timeline and the trace
    html = (out / "report.html").read_text()
    tl = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S)
                    .group(1))["timeline"]
    st = tl["states"]
    crosses = {(lane, start) for lane, start, died in zip(st["lane"], st["start"], st["died"],
                                                           strict=True) if died}
    mine = {i for i, label in enumerate(tl["lanes"]) if label.startswith(victim)}
    assert {lane for lane, _s in crosses} == mine
    # one time, within the 4 decimals' rounding (polars rounds a half up, Python to even)
    (at_ms,) = {s for _l, s in crosses}
    assert at_ms == pytest.approx((died_ns - tasks["start_ns"].min()) / 1e6, abs=0.51e-4)
    trace = json.loads((out / "trace.json").read_text())
    deaths = [e for e in trace["traceEvents"]
              if e.get("name") == "worker died (removed by the scheduler)"]
    assert [(e["args"]["worker"], e["ts"]) for e in deaths] == [
        (victim, pytest.approx((died_ns - trace["otherData"]["t0_ns"]) / 1e3, abs=2e-3))]
    assert f"{done.height:,} executions of" in proc.stdout
    assert "could not be used" not in proc.stdout
    assert any("lost with the worker" in w for w in summary["warnings"])
    # the story of a recomputed key: both runs, and its header counts them
    key = unwritten["key"][0]
    story = subprocess.run([str(BIN / "correlate"), "story", str(run), key], env=env(),
                           capture_output=True, text=True, timeout=120)
    assert story.returncode == 0, story.stderr[-2000:]
    assert "2 execution(s) (1 known from the scheduler's startstops only" in story.stdout.splitlines()[1]
    assert story.stdout.count("action=compute") == 2
