"""`collect`'s own errors, as a user meets them in the first minutes: a mistyped command is one
line and exit 127 with no run folder left behind; a job that started no Dask process is told
so (its exit code kept)."""

from __future__ import annotations

import subprocess
import sys


def collect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collectors.launcher", *args],
                          capture_output=True, text=True, timeout=120)


def test_a_command_that_does_not_exist_is_one_line_and_exit_127(tmp_path):
    proc = collect("-o", str(tmp_path / "run"), "--darshan", "off", "--",
                   "no-such-command-here", "arg")
    assert proc.returncode == 127
    assert proc.stderr == "collect: no-such-command-here: command not found\n"
    assert not (tmp_path / "run").exists()


def test_a_job_without_dask_is_told_that_nothing_was_recorded(tmp_path):
    proc = collect("-o", str(tmp_path / "run"), "--darshan", "off", "--", sys.executable,
                   "-c", "import sys; sys.exit(3)")
    assert proc.returncode == 3
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"collect: the job started no Dask scheduler or worker that recorded into "
        f"{tmp_path / 'run'}"), proc.stderr
    assert "Traceback" not in proc.stderr
