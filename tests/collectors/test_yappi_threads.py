"""Threads that start while Yappi runs (``YappiProfile._hook_new_threads``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("yappi")


def test_a_thread_starting_during_another_threads_hook_install_runs_and_is_profiled():
    """CPython (3.11.7) refuses a profile-function install while another thread is part-way
    through one. Installed by threading's bootstrap (``threading.setprofile``, how Yappi hooks
    new threads), the refusal raised before the thread's target ran and the thread died
    silently (an executor's thread: never replaced). Both threads run; the helper thread is
    profiled (the install is retried) and the task thread starts without the hook."""
    here = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(here.parents[1]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(here / "thread_start_race.py")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert "Cannot install a profile function" not in proc.stderr
    assert got == {"ran": ["helper", "task"], "errors": [], "helper_profiled": True,
                   "threads_unhooked": 0, "bootstrap_restored": True}
