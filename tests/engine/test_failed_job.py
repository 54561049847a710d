"""A job that fails: its exit code and its erred tasks (which raised, which erred because a
dependency did, per prefix and key) are in summary.json, the terminal summary and report.md;
a task retried to success is not among them. A real LocalCluster job under `collect`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from correlate.outcome import erred_tasks, job_outcome, outcome_line
from tests.engine.key_parts import assert_same, correlated

JOBS = Path(__file__).resolve().parents[1] / "collectors"
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"


@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("failed-job")
    run, truth = tmp / "run", tmp / "truth.json"
    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "-o", str(run),
                           "--darshan", "off", "--profile", "off", "--", sys.executable,
                           "jobs.py", "fail", str(truth)], capture_output=True, text=True,
                          timeout=300, cwd=JOBS)
    assert proc.returncode == 3, proc.stderr[-3000:]
    out = subprocess.run([sys.executable, "-m", "correlate.cli", str(run)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return run / "correlated", json.loads(truth.read_text()), out.stdout


@pytest.mark.cluster
def test_summary_json_names_the_exit_code_and_the_erred_tasks(failed):
    out, truth, _stdout = failed
    job = json.loads((out / "summary.json").read_text())["job"]
    assert job["exit_code"] == 3 and job["source"] == "scheduler transitions"
    assert job["erred_tasks"] == len(truth["erred"]) and job["raised"] == len(truth["raised"])
    assert sorted(job["erred_keys"]) == sorted(truth["erred"])
    assert job["erred_keys"][:len(truth["raised"])] == sorted(truth["raised"])  # causes first
    assert job["erred_by_prefix"] == [{"prefix": "raise_on", "tasks": 4, "raised": 4},
                                      {"prefix": "consume", "tasks": 4, "raised": 0}]
    assert "flaky_once-0" not in job["erred_keys"]  # retried to success


@pytest.mark.cluster
def test_its_transitions_read_in_parts_say_the_same(failed, monkeypatch):
    run = failed[0].parent
    whole, _ = correlated(run, monkeypatch)
    assert whole["summary"]["job"]["erred_tasks"] == len(failed[1]["erred"]) > 0
    parts, spilled = correlated(run, monkeypatch, whole["events"].height // 3)
    assert spilled >= 2
    assert_same(whole, parts)


@pytest.mark.cluster
def test_the_terminal_and_report_md_say_it_first(failed):
    out, _truth, stdout = failed
    line = ("job failed: exit code 3; 8 task(s) erred: raise_on 4 (4 raised); consume 4 (4 "
            "because a dependency erred); keys: raise_on-1, raise_on-3, raise_on-5, raise_on-7, "
            "consume-1, …")
    assert stdout.splitlines()[1] == line
    report = (out / "report.md").read_text().splitlines()
    # Markdown-escaped (raise\\_on), above every other section
    assert report[4] == ("**Job failed: exit code 3; 8 task(s) erred: raise\\_on 4 (4 raised); "
                         "consume 4 (4 because a dependency erred); keys: raise\\_on-1, "
                         "raise\\_on-3, raise\\_on-5, raise\\_on-7, consume-1, consume-3, "
                         "consume-5, consume-7**"), report[:6]


def test_a_successful_run_says_nothing_and_counts_zero(tmp_path):
    from correlate.cli import main

    assert main([str(SAMPLE), "-o", str(tmp_path / "out"), "--no-reports"]) == 0
    job = json.loads((tmp_path / "out" / "summary.json").read_text())["job"]
    assert job["exit_code"] == 0 and job["erred_tasks"] == 0 and job["erred_keys"] == []
    assert outcome_line(job) is None


def _transitions(rows):
    return pl.DataFrame(rows, schema=["key", "side", "finish", "local_time_ns"], orient="row")


def test_erred_then_memory_is_no_failure_and_memory_then_erred_is():
    t = _transitions([("a", "scheduler", "erred", 1), ("a", "scheduler", "memory", 2),
                      ("b", "scheduler", "memory", 1), ("b", "scheduler", "erred", 2),
                      ("c", "worker", "erred", 1)])  # the scheduler's word decides
    assert erred_tasks(t)["key"].to_list() == ["b"]


def test_without_transitions_or_statuses_erred_is_unknown_not_zero():
    none = _transitions([])
    tasks = pl.DataFrame({"key": ["x"], "status": [None]}, schema={"key": pl.String,
                                                                   "status": pl.String})
    out = job_outcome({"exit_code": None}, none, tasks)
    assert out["erred_tasks"] is None and out["raised"] is None
    assert outcome_line(out) is None
    raised = pl.DataFrame({"key": ["x-1", "y-2"], "status": ["error", "ok"]})
    out = job_outcome({}, none, raised)
    assert out["erred_tasks"] == 1 and out["source"].startswith("executions that raised")
    assert outcome_line(out) == ("job failed: exit code not recorded; 1 task(s) erred: x 1 "
                                 "(1 raised); keys: x-1")


@pytest.mark.cluster
def test_a_killed_job_names_the_executions_in_flight_and_their_tasks(tmp_path, monkeypatch):
    """A job killed (SIGTERM to `collect`, forwarded) while 2 of its 3 tasks execute: the
    summary, the terminal and report.md name those 2 executions, their tasks and worker; the
    third task, still waiting for a thread, is not one."""
    import signal
    import time

    run, started = tmp_path / "run", tmp_path / "started"
    started.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "collectors.launcher", "-o", str(run),
                             "--darshan", "off", "--profile", "off", "--flush-interval", "0.3",
                             "--", sys.executable, "jobs.py", "stuck", str(started)],
                            cwd=JOBS, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while len(list(started.iterdir())) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
        time.sleep(0.1)
    time.sleep(1.0)  # a few flushes: the workers' records hold the executions' start
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    keys = sorted(p.name for p in started.iterdir())
    out = subprocess.run([sys.executable, "-m", "correlate.cli", str(run)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    job = json.loads((run / "correlated" / "summary.json").read_text())["job"]
    assert job["exit_code"] == 143 and job["in_flight"] == 2, job
    assert job["in_flight_by_prefix"] == [{"prefix": "stuck", "executions": 2}]
    flying = job["in_flight_executions"]
    assert sorted(e["key"] for e in flying) == keys and len({e["worker"] for e in flying}) == 1
    # started, then 1 s of flushes every 0.3 s before the kill: the last record is later
    assert all(e["running_s"] >= 0.5 for e in flying), flying
    line = out.stdout.splitlines()[1]
    assert line.startswith("job failed: exit code 143; ") and (
        "2 execution(s) in flight when the records end: stuck 2; " in line), line
    assert all(f"{k} (on {flying[0]['worker']}, running " in line for k in keys), line
    report = (run / "correlated" / "report.md").read_text()
    assert all(k in report.split("## ")[0] for k in keys)  # above every section
    # read in parts by key, the transitions say the same (the executions in flight too)
    whole, _ = correlated(run, monkeypatch)
    parts, spilled = correlated(run, monkeypatch, whole["events"].height // 3)
    assert spilled >= 2 and whole["summary"]["job"]["in_flight"] == 2
    assert_same(whole, parts)
