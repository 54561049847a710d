"""`collect`'s own errors, as a user meets them in the first minutes: a mistyped command is one
line and exit 127 with no run folder left behind; a job that started no Dask process is told
so (its exit code kept)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


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
        f"collect: no Dask scheduler or worker recorded into {tmp_path / 'run'}: the job "
        "started none, or they could not write there"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_darshan_runtime_that_is_named_but_missing_stops_before_the_job(tmp_path):
    marker = tmp_path / "job-ran"
    proc = collect("-o", str(tmp_path / "run"), "--darshan", str(tmp_path / "libdarshan.so"),
                   "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"collect: --darshan {tmp_path / 'libdarshan.so'}: no libdarshan.so there; give the "
        "path of libdarshan.so or of its install folder, or --darshan auto (find one) or off "
        "(run without I/O capture)"]
    assert not marker.exists() and not (tmp_path / "run").exists()


def test_collect_env_with_a_missing_named_runtime_exports_nothing(tmp_path):
    proc = collect("env", "-o", str(tmp_path / "run"), "--darshan", str(tmp_path / "nope"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"collect env: --darshan {tmp_path / 'nope'}: no libdarshan")
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "run").exists()


def test_without_a_runtime_the_job_runs_without_io_capture_and_says_so(tmp_path):
    """--darshan off and auto-detection that finds nothing are not errors: the job runs."""
    marker = tmp_path / "job-ran"
    job = ["--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    proc = collect("-o", str(tmp_path / "off"), "--darshan", "off", *job)
    assert proc.returncode == 0 and marker.exists()
    marker.unlink()
    env = {k: v for k, v in os.environ.items() if k not in ("DARSHAN_RUNTIME", "DARSHAN_ROOT")}
    env["PATH"] = os.path.dirname(sys.executable)  # no darshan-config on it
    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "-o",
                           str(tmp_path / "auto"), *job], capture_output=True, text=True,
                          timeout=120, env=env)
    if "no darshan-runtime found" not in proc.stderr:
        pytest.skip("a darshan-runtime is installed in a common path on this machine")
    assert proc.returncode == 0 and marker.exists()
    assert "continuing without I/O capture" in proc.stderr


@pytest.mark.parametrize("out", ["/proc/x", "/proc/self/nope/run", "/etc/hostname/run"])
def test_a_run_folder_that_cannot_be_created_is_one_line(tmp_path, out):
    marker = tmp_path / "job-ran"
    proc = collect("-o", out, "--darshan", "off", "--", sys.executable, "-c",
                   f"open({str(marker)!r}, 'w')")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"collect: {out}: cannot create a run folder there "
        f"({'Not a directory' if out.startswith('/etc') else 'No such file or directory'}); "
        "give -o a folder you can write, e.g. -o runs/my_job"]
    assert not marker.exists()


def test_a_read_only_parent_is_one_line(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    parent = tmp_path / "ro"
    parent.mkdir(mode=0o500)
    proc = collect("-o", str(parent / "run"), "--darshan", "off", "--", "true")
    assert proc.returncode == 2 and "Permission denied" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
