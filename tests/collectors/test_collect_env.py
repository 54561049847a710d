"""`collect env -o RUN`: the variables a job script exports, as `collect` would set them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def collect_env(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collectors.launcher", "env", *args],
                          capture_output=True, text=True, env=env, timeout=60)


def evaluated(out: str, tmp_path: Path) -> dict[str, str]:
    """What bash has after `eval "$(collect env ...)"`."""
    (tmp_path / "env.sh").write_text(out)
    proc = subprocess.run(["bash", "-c", f'eval "$(cat {tmp_path / "env.sh"})" && env -0'],
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
                          check=True)
    return dict(kv.split("=", 1) for kv in proc.stdout.split("\0") if "=" in kv)


def test_without_darshan_prints_the_recording_variables_and_says_why(tmp_path):
    run = tmp_path / "my run"
    proc = collect_env("-o", str(run), "--darshan", "off", "--profile", "off")
    assert proc.returncode == 0, proc.stderr
    got = evaluated(proc.stdout, tmp_path)
    assert got["DASK_CORRELATE_RUN_DIR"] == str(run.resolve())
    assert got["DASK_CORRELATE_PROFILE"] == "off"
    assert got["DASK_DISTRIBUTED__WORKER__PRELOAD"] == "['collectors.preload']"
    assert "LD_PRELOAD" not in got and "DXT_ENABLE_IO_TRACE" not in got
    assert "# Darshan: disabled (--darshan off)" in proc.stdout
    assert run.is_dir()


def test_with_a_runtime_prints_darshan_variables_and_writes_its_config(tmp_path):
    lib = tmp_path / "lib" / "libdarshan.so"
    lib.parent.mkdir()
    lib.write_bytes(b"")  # found by path; collect env never loads it
    run = tmp_path / "run"
    proc = collect_env("-o", str(run), "--darshan", str(lib))
    assert proc.returncode == 0, proc.stderr
    got = evaluated(proc.stdout, tmp_path)
    assert got["LD_PRELOAD"].split()[0] == str(lib)
    assert got["DARSHAN_ENABLE_NONMPI"] == "1" and got["DXT_ENABLE_IO_TRACE"] == "1"
    assert got["DARSHAN_LOGPATH"] == str(run / "darshan") and (run / "darshan").is_dir()
    # memory-mapped logs in the run folder, not /tmp (collectors.darshan_after)
    assert got["DARSHAN_MMAP_LOGPATH"] == str(run / "darshan-mmap")
    assert (run / "darshan-mmap").is_dir()
    assert Path(got["DARSHAN_CONFIG_PATH"]).read_text().startswith("# generated")
    assert got["DASK_CORRELATE_MARKERS"] == "1"


def test_no_runtime_found_is_one_line_on_stderr_and_a_comment(tmp_path):
    """Auto-detection that finds nothing is no error (a named runtime that is missing is:
    test_collect_cli)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DARSHAN_RUNTIME", "DARSHAN_ROOT")}
    env["PATH"] = os.path.dirname(sys.executable)  # no darshan-config on it
    proc = collect_env("-o", str(tmp_path / "run"), env=env)
    if "no darshan-runtime found" not in proc.stderr:
        pytest.skip("a darshan-runtime is installed in a common path on this machine")
    assert proc.returncode == 0
    assert proc.stderr.strip().count("\n") == 0
    assert "# Darshan: " in proc.stdout and "LD_PRELOAD" not in proc.stdout


def test_help_names_the_subcommand():
    proc = collect_env("--help")
    assert proc.returncode == 0 and "usage: collect env" in proc.stdout


def test_the_job_scripts_helpers_are_excluded_from_darshan(tmp_path):
    """The generated config keeps Darshan off a batch script's helper commands (APP_EXCLUDE:
    POSIX extended regexes against the first word of the command line), never off Python."""
    import re

    lib = tmp_path / "libdarshan.so"
    lib.write_bytes(b"")
    run = tmp_path / "run"
    assert collect_env("-o", str(run), "--darshan", str(lib)).returncode == 0
    lines = [ln for ln in (run / "darshan.conf").read_text().splitlines()
             if ln.startswith("APP_EXCLUDE ")]
    assert len(lines) == 1 and len(lines[0].split()) == 2 and "," not in lines[0]
    regex = re.compile(lines[0].split()[1])  # (ERE: the same meaning in Python's re here)
    for helper in ("sleep", "/usr/bin/sleep", "uname", "/bin/bash", "mpiexec", "srun",
                   "/opt/cray/pe/pals/bin/mpiexec", "hostname"):
        assert regex.search(helper), helper
    for dask in (sys.executable, "python3", "python", "/usr/bin/python3.11", "dask",
                 "sleepy", "my_uname_tool", "mpiexecXhydra"):
        assert not regex.search(dask), dask


def test_the_script_that_ran_it_is_the_jobs_command(tmp_path):
    """`eval "$(collect env …)"` in a script: the script's command line is recorded, and the
    manifest the scheduler's preload writes names it as the job's command (its exit code stays
    unknown)."""
    import json

    from collectors import manifest

    run = tmp_path / "run"
    script = tmp_path / "job.sh"
    script.write_text(f'eval "$({sys.executable} -m collectors.launcher env -o {run} '
                      '--darshan off)"\n')
    subprocess.run(["bash", str(script), "an argument"], check=True, timeout=60,
                   capture_output=True)
    recorded = json.loads((run / manifest.JOB_COMMAND).read_text())
    assert recorded["command"] == ["bash", str(script), "an argument"]
    written = manifest.start_from_preload(run, {"profile": "off"})
    assert written is not None
    assert written["command"] == ["bash", str(script), "an argument"]
    assert "the process that ran `collect env`" in written["command_source"]
    assert "command" not in written["unknown"] and "exit_code" in written["unknown"]
    # a later `collect env` (a dask-jobqueue worker job's prologue) is not the job
    other = tmp_path / "worker_job.sh"
    other.write_text(script.read_text())
    subprocess.run(["bash", str(other)], check=True, timeout=60, capture_output=True)
    assert json.loads((run / manifest.JOB_COMMAND).read_text()) == recorded
