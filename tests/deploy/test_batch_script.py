"""docs/deploy.md's PBS/Slurm job script, copied out of that page and run with `bash` (no
queue): its run folder correlates and holds every task of the client's graph. With MPICH's
`mpiexec` (the test extra) it runs again with the workers started through it, the way a PBS
job starts one worker per node."""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest
from procs import BIN, REPO, check_io, check_tasks, correlate, darshan_lib, env, processes

pytestmark = pytest.mark.cluster

#: the user's client: tests/deploy/client.py's graph (importable: PYTHONPATH, see procs.env)
MY_CLIENT = """
import sys
import client
client.main([sys.argv[1], "truth.json", "data"])
"""


def documented_job_script() -> str:
    text = (REPO / "docs" / "deploy.md").read_text()
    section = text[text.index("## PBS and Slurm job scripts"):]
    start = section.index("```bash\n") + len("```bash\n")
    return section[start:section.index("```", start)]


def launchers() -> list[str]:
    mpiexec = BIN / "mpiexec" if (BIN / "mpiexec").exists() else shutil.which("mpiexec")
    return ["", *([f"{mpiexec} -n 1 --ppn 1"] if mpiexec else [])]


@pytest.mark.parametrize("launch", launchers(), ids=lambda s: "mpiexec" if s else "direct")
def test_documented_batch_script_runs_with_bash(tmp_path, launch):
    script = documented_job_script()
    assert script.startswith("#!/bin/bash\n#PBS ") and "#SBATCH" in script
    (tmp_path / "job.sh").write_text(script)
    (tmp_path / "my_client.py").write_text(textwrap.dedent(MY_CLIENT))
    (tmp_path / "data").mkdir()
    run = tmp_path / "run"
    lib = darshan_lib()
    extra = {"RUN": str(run), "DASK_INTERFACE": "lo", "CLIENT_WORKERS": "2"}
    if launch:
        extra["LAUNCH"] = launch
    if lib:
        extra["DARSHAN_RUNTIME"] = lib  # what `collect env` looks for
    with processes() as procs:
        p = procs.start(["bash", "job.sh"], tmp_path / "job.log", cwd=tmp_path,
                        env=env(None, **extra))
        assert p.wait(timeout=150) == 0, (tmp_path / "job.log").read_text()[-3000:]
    truth = json.loads((tmp_path / "truth.json").read_text())
    tasks, summary = correlate(run)
    check_tasks(tasks, truth)
    assert summary["facts"]["recorded_by"] == "scheduler preload"
    # the job's command is the script `collect env` ran in; its exit code is unknown, said so
    assert summary["facts"]["command"] == "bash job.sh"
    assert "exit_code" in summary["facts"]["unknown"]
    assert "command" not in summary["facts"]["unknown"]
    assert any("the job's exit code is unknown (its command, from `collect env`: bash job.sh)"
               in w for w in summary["warnings"])
    check_io(run, tasks, truth, lib)
