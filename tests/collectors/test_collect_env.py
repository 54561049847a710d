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
