"""`collect env -o RUN`: the variables a job script exports, as `collect` would set them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


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
    assert Path(got["DARSHAN_CONFIG_PATH"]).read_text().startswith("# generated")
    assert got["DASK_CORRELATE_MARKERS"] == "1"


def test_missing_runtime_is_one_line_on_stderr_and_a_comment(tmp_path):
    proc = collect_env("-o", str(tmp_path / "run"), "--darshan", str(tmp_path / "nope.so"))
    assert proc.returncode == 0
    assert proc.stderr.strip().count("\n") == 0 and "nope.so: not found" in proc.stderr
    assert "# Darshan: " in proc.stdout and "LD_PRELOAD" not in proc.stdout


def test_help_names_the_subcommand():
    proc = collect_env("--help")
    assert proc.returncode == 0 and "usage: collect env" in proc.stdout
