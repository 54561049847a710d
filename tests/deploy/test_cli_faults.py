"""Faults of a batch script's own `dask scheduler` and `dask worker` processes (recorded through
`collect env`'s variables, no `collect`), with tasks that leave marker files (the truth): every
execution the job ran is in ``task_executions`` or counted with its reason, and `correlate`
runs without a traceback and says what happened."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from procs import BIN, correlate, env, exports, processes

from correlate.sources.detect import load
from testing.raw_parts import closing_records

pytestmark = pytest.mark.cluster

JOBS = Path(__file__).parents[1] / "collectors"  # fault_jobs.py: the marked tasks


def wait_for(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def start(procs, tmp: Path, run: Path, marks: Path, n: int = 400, seconds: float = 0.02):
    """`dask scheduler`, one `dask worker --nworkers 2 --nthreads 2` and a client submitting
    ``n`` marked tasks, all under `collect env`'s variables; returns their Popen objects."""
    environ = env(run, **exports(run, None))
    environ["PYTHONPATH"] = os.pathsep.join([str(JOBS), environ["PYTHONPATH"]])
    sched_file = tmp / "scheduler.json"
    scheduler = procs.start([str(BIN / "dask"), "scheduler", "--scheduler-file",
                             str(sched_file), "--host", "127.0.0.1", "--port", "0",
                             "--no-dashboard"], tmp / "scheduler.log", env=environ)
    wait_for(sched_file)
    workers = procs.start([str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file),
                           "--nworkers", "2", "--nthreads", "2", "--host", "127.0.0.1",
                           "--no-dashboard"], tmp / "workers.log", env=environ)
    client = procs.start([sys.executable, str(JOBS / "fault_jobs.py"), "client",
                          str(sched_file), str(marks), str(n), str(seconds)],
                         tmp / "client.log", env=environ)
    return scheduler, workers, client


def accounted(run: Path, marks: Path) -> tuple[set[str], int, object]:
    frames = load(run)
    absent = {p.name for p in marks.iterdir()} - set(frames.executions["key"])
    rejects = frames.rejects.filter(pl.col("reason").str.starts_with("task_executions"))
    return absent, int(rejects["count"].sum() or 0), frames


def test_sigkill_of_the_dask_scheduler_process(tmp_path):
    """The scheduler alone is killed while the tasks run: its client fails (Dask's own
    behaviour), the workers lose it and close, flushing their executions; correlate uses
    them, says the scheduler did not close, and counts the executions still running when the
    workers closed."""
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    with processes() as procs:
        scheduler, workers, client = start(procs, tmp_path, run, marks)
        wait_for(tmp_path / "ready")
        time.sleep(0.8)
        os.kill(scheduler.pid, signal.SIGKILL)
        assert client.wait(timeout=120) != 0  # the job lost its scheduler
        assert workers.wait(timeout=120) == 0, (tmp_path / "workers.log").read_text()[-3000:]
    assert not (tmp_path / "done").exists()
    ran = {p.name for p in marks.iterdir()}
    assert 0 < len(ran) < 400  # killed while the job ran
    closed = sorted(closing_records(run))
    assert [c.split("-")[0] for c in closed] == ["worker", "worker"]
    for log in ("workers.log", "scheduler.log"):
        assert "collectors/" not in (tmp_path / log).read_text(), log

    tasks, summary = correlate(run)  # the CLI, as a user runs it: exit 0, no traceback
    absent, counted, frames = accounted(run, marks)
    assert len(absent) <= counted, (sorted(absent)[:5], counted, frames.warnings)
    assert frames.executions.height + counted >= len(ran)
    assert tasks.filter(pl.col("key").is_in(list(ran))).height == len(ran) - len(absent)
    scheduler_dir = next((run / "procs").glob("scheduler-*")).name
    assert f"{scheduler_dir} did not close cleanly (killed or crashed)" in " ".join(
        summary["warnings"])
