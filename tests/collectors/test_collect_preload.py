"""`collect` adds its Dask preload to the job's own (Dask config file or DASK_* variable)
instead of replacing it: on a real LocalCluster both preloads run in the scheduler and in
every worker process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.sink import closing_record

pytestmark = pytest.mark.cluster

THEIR_PRELOAD = '''
import os
from pathlib import Path

import click


@click.command()
@click.option("--flag", default="none")
def dask_setup(server, flag):
    folder = Path(os.environ["THEIR_PRELOAD_RAN"])
    (folder / f"{type(server).__name__}-{os.getpid()}").write_text(flag)
'''

JOB = '''
from distributed import Client, LocalCluster

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        assert client.gather(client.map(abs, range(-4, 0))) == [4, 3, 2, 1]
'''


def _collect(tmp_path: Path, **env: str) -> tuple[Path, dict[str, list[str]]]:
    """The run folder, and per server class the flag their preload saw in each process."""
    (tmp_path / "theirs.py").write_text(THEIR_PRELOAD)
    (tmp_path / "job.py").write_text(JOB)
    ran = tmp_path / "ran"
    ran.mkdir()
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "collectors.launcher", "-o", str(run), "--darshan", "off",
         "--profile", "off", "--", sys.executable, str(tmp_path / "job.py")],
        env={**os.environ, "PYTHONPATH": str(tmp_path), "THEIR_PRELOAD_RAN": str(ran), **env},
        capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs: dict[str, list[str]] = {}
    for p in sorted(ran.iterdir()):
        theirs.setdefault(p.name.split("-")[0], []).append(p.read_text())
    return run, theirs


def _recorded(run: Path) -> dict[str, int]:
    roles: dict[str, int] = {}
    for proc in (run / "procs").iterdir():
        assert closing_record(proc) is not None, proc
        role = json.loads((proc / "proc.json").read_text())["role"]
        roles[role] = roles.get(role, 0) + 1
    return roles


def test_their_preload_from_a_variable_runs_next_to_ours(tmp_path):
    run, theirs = _collect(tmp_path, DASK_DISTRIBUTED__WORKER__PRELOAD="['theirs']",
                           DASK_DISTRIBUTED__SCHEDULER__PRELOAD="theirs")
    assert theirs == {"Scheduler": ["none"], "Worker": ["none", "none"]}
    assert _recorded(run) == {"scheduler": 1, "worker": 2}


def test_their_preload_and_argv_from_a_config_file_run_next_to_ours(tmp_path):
    config = tmp_path / "dask-config"
    config.mkdir()
    (config / "distributed.yaml").write_text(
        "distributed:\n  scheduler:\n    preload: [theirs]\n    preload-argv: [[--flag, 1]]\n"
        "  worker:\n    preload: theirs\n    preload-argv: [--flag, '2']\n")
    run, theirs = _collect(tmp_path, DASK_CONFIG=str(config))
    assert theirs == {"Scheduler": ["1"], "Worker": ["2", "2"]}
    assert _recorded(run) == {"scheduler": 1, "worker": 2}
