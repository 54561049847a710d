"""Tasks that move their data through C stdio (numpy ``tofile``/``fromfile``), recorded under
`collect` with a real darshan-runtime on a LocalCluster (2 processes × 2 threads). DXT traces no
stdio call; Darshan's STDIO counters hold the bytes per file, and the collector's record of the
files each task opened gives them to the task: every byte the tasks moved is in ``tasks`` and
``task_files``, each prefix's exactly, none unattributed. Skipped without a darshan-runtime
(the rules themselves are tested on literal frames in tests/unit/test_stdio_io.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from collectors.darshan_env import find_runtime
from correlate.cli import main

HERE = Path(__file__).parent
pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def correlated(tmp_path_factory):
    lib, _how = find_runtime("auto")
    if lib is None:
        pytest.skip("no darshan-runtime on this machine (DARSHAN_RUNTIME, darshan-config or a "
                    "common install path): C stdio I/O exists only in a real runtime's logs")
    tmp = tmp_path_factory.mktemp("stdio")
    (tmp / "data").mkdir()
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(tmp / "run"), "--darshan",
           lib, "--profile", "off", "--", sys.executable, "stdio_job.py", str(tmp / "truth.json"),
           str(tmp / "data")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=HERE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert main([str(tmp / "run"), "-o", str(tmp / "out"), "--no-reports"]) == 0
    truth = pl.DataFrame(json.loads((tmp / "truth.json").read_text()))
    return tmp / "out", truth


def test_every_stdio_byte_is_a_tasks_own(correlated):
    out, truth = correlated
    tasks = pl.read_parquet(out / "tasks.parquet")
    files = pl.read_parquet(out / "task_files.parquet").filter(
        pl.col("attribution").cast(pl.String).str.starts_with("stdio"))
    # each prefix moved exactly its bytes through stdio: saves wrote them, loads read them
    for prefix, op in (("save", "write"), ("load", "read")):
        want = truth.filter(pl.col("key").str.starts_with(prefix))["bytes"].sum()
        got = files.filter(pl.col("key").str.starts_with(prefix) & (pl.col("op") == op))
        assert got["bytes"].sum() == want, prefix
        other = "read" if op == "write" else "write"
        assert files.filter(pl.col("key").str.starts_with(prefix)
                            & (pl.col("op") == other)).is_empty(), prefix
    # one opener per file and mode: whole, never shared
    assert set(files["attribution"].cast(pl.String)) == {"stdio-file"}
    # the tasks table carries them (with the POSIX bytes of any Python-level I/O)
    saves = tasks.filter(pl.col("key").str.starts_with("save"))
    assert saves["write_bytes"].sum() >= truth.filter(
        pl.col("key").str.starts_with("save"))["bytes"].sum()
    summary = json.loads((out / "summary.json").read_text())
    # the run's stdio total holds them (and any stdio I/O of other files and processes)
    assert summary["io"]["stdio"]["bytes"] >= truth["bytes"].sum()
    un = pl.read_parquet(out / "unattributed.parquet")
    assert un.filter(pl.col("reason").str.starts_with("C stdio")
                     & pl.col("path").str.contains("array-")).is_empty()
