"""The ways HPC jobs start Dask, each with real processes: a job script under `collect`,
dask-jobqueue's LocalCluster (workers from its generated job script), and dask-mpi under
`mpiexec -n 4`. Each checks every task of the client's graph in tasks.parquet with its thread
and CPU, and the I/O attribution where a Darshan runtime is present."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from procs import (
    BIN,
    CLIENT,
    HERE,
    check_io,
    check_tasks,
    correlate,
    darshan_lib,
    env,
    exports,
    processes,
)

pytestmark = pytest.mark.cluster


def test_job_script_under_collect(tmp_path):
    lib = darshan_lib()
    run, work = tmp_path / "run", tmp_path / "work"
    (work / "data").mkdir(parents=True)
    with processes() as procs:
        p = procs.start([str(BIN / "collect"), "-o", str(run), "--profile", "off",
                         "--flush-interval", "0.5", "--darshan", lib or "off", "--", "bash",
                         str(HERE / "job.sh"), str(work), str(CLIENT)], tmp_path / "collect.log",
                        env=env())
        assert p.wait(timeout=150) == 0, (tmp_path / "collect.log").read_text()[-3000:]
    truth = json.loads((work / "truth.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["recorded_by"] == "collect" and manifest["exit_code"] == 0
    assert manifest["processes_not_closed"] == []
    tasks, summary = correlate(run)
    check_tasks(tasks, truth)
    assert summary["facts"]["unknown"].keys() <= {"darshan", "profile"}
    check_io(run, tasks, truth, lib)


def test_dask_jobqueue_local_cluster(tmp_path):
    pytest.importorskip("dask_jobqueue")
    lib = darshan_lib()
    run = tmp_path / "run"
    (tmp_path / "data").mkdir()
    variables = exports(run, lib)
    with processes() as procs:
        p = procs.start([sys.executable, str(HERE / "jobqueue_client.py"), str(run),
                         str(tmp_path / "truth.json"), str(tmp_path / "data")],
                        tmp_path / "client.log", cwd=HERE,
                        env=env(run, **variables))
        assert p.wait(timeout=150) == 0, (tmp_path / "client.log").read_text()[-3000:]
    # docs/deploy.md's recipe for dask-jobqueue: the prologue comes before the worker command
    script = (run / "pbs_job.sh").read_text()
    prologue = script.index(f'eval "$(collect env -o {run})"')
    assert prologue < script.index("distributed.cli.dask_worker")
    truth = json.loads((tmp_path / "truth.json").read_text())
    tasks, summary = correlate(run)
    check_tasks(tasks, truth)
    assert summary["facts"]["recorded_by"] == "scheduler preload"
    check_io(run, tasks, truth, lib)


def _mpiexec() -> str:
    exe = BIN / "mpiexec"
    if not exe.exists():
        found = shutil.which("mpiexec")
        if not found:
            pytest.skip("no mpiexec: `pip install -e '.[test]'` installs MPICH's wheel "
                        "(mpich) on Linux x86_64/aarch64")
        return found
    return str(exe)


def test_dask_mpi_under_mpiexec(tmp_path):
    pytest.importorskip("dask_mpi", reason="dask-mpi not installed (test extra)")
    pytest.importorskip("mpi4py", reason="mpi4py not installed (test extra)")
    mpiexec = _mpiexec()
    lib = darshan_lib()
    run = tmp_path / "run"
    (tmp_path / "data").mkdir()
    with processes() as procs:
        # MPICH's mpiexec (Hydra) forwards the whole environment to every rank by default;
        # Open MPI's needs each variable named: mpirun -x DASK_CORRELATE_RUN_DIR -x ...
        p = procs.start([mpiexec, "-n", "4", sys.executable, str(HERE / "mpi_job.py"),
                         str(tmp_path / "truth.json"), str(tmp_path / "data")],
                        tmp_path / "mpi.log", cwd=HERE, env=env(run, **exports(run, lib)))
        code = p.wait(timeout=150)
    log = (tmp_path / "mpi.log").read_text()
    assert code == 0, log[-3000:]
    truth = json.loads((tmp_path / "truth.json").read_text())
    tasks, summary = correlate(run)
    check_tasks(tasks, truth)
    assert tasks["pid"].n_unique() == 2  # ranks 2 and 3
    assert summary["facts"]["recorded_by"] == "scheduler preload"
    check_io(run, tasks, truth, lib)
