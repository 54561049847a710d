"""Run one of the jobs of ``tests/collectors/jobs.py`` under ``collect`` (with the Darshan
runtime when one is found), for the engine tests on real libraries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from collectors.darshan_env import find_runtime

JOBS = Path(__file__).resolve().parents[1] / "collectors"


def record(tmp: Path, job: str, *, profile: str = "off", data: Path | None = None,
           darshan: str = "auto") -> tuple[Path, Path, bool]:
    """Run ``jobs.py JOB TRUTH,DATA`` under ``collect -o tmp/run``; returns the run folder, the
    truth file the job wrote and whether a real darshan-runtime traced it (``darshan``:
    ``auto`` finds one if it can, ``off`` runs without)."""
    data = data or tmp / "data"
    data.mkdir(exist_ok=True)
    lib, _how = find_runtime(darshan)
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(tmp / "run"), "--darshan",
           lib or "off", "--profile", profile, "--flush-interval", "1", "--", sys.executable,
           "jobs.py", job, f"{tmp / 'truth.json'},{data}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=JOBS,
                          env=job_environment(lib))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp / "run", tmp / "truth.json", bool(lib)


def job_environment(lib: str | None) -> dict[str, str]:
    """The job's environment: without a runtime the tests write Darshan's logs afterwards, so
    its processes preload a (missing) libdarshan and the workers record the files tasks open,
    as under Darshan (the loader says it cannot preload it, and goes on)."""
    env = dict(os.environ)
    if not lib:
        env["LD_PRELOAD"] = "/nonexistent/lib/libdarshan.so"
    return env
