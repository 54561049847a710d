"""Faults met by real jobs under `collect`, with tasks that leave marker files (the truth):
the job's exit code is unchanged, there is no traceback, and every execution the job ran is
either in ``task_executions`` or counted in the summary's rejects with its reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from correlate.sources.detect import load

HERE = Path(__file__).parent
pytestmark = pytest.mark.cluster


def collect(out: Path, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(out), "--darshan", "off",
           "--profile", "off", "--flush-interval", "0.5", "--", sys.executable,
           "fault_jobs.py", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=HERE)


def ran(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_two_workers_in_one_process_each_keep_every_execution(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = collect(tmp_path / "run", "inprocess", str(marks), "60")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    workers = sorted(p.name for p in (tmp_path / "run" / "procs").glob("worker-*"))
    assert len(workers) == 2 and workers[1] == f"{workers[0]}.2"
    frames = load(tmp_path / "run")
    ex = frames.executions
    assert ex.height == 60 == len(ran(marks))
    assert set(ex["key"]) == ran(marks)
    assert ex["worker"].n_unique() == 2
    assert pl.Series(ex["key"]).is_unique().all()
