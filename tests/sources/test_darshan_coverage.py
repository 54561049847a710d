"""Dask processes without a complete Darshan log are named, with why, in the run's warnings
(their I/O is missing from every figure). On the project's real sample run, with one worker's
log left partial and another's gone, as a killed process leaves them; and, with the real
runtime, on a job whose worker is SIGKILLed."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.sink import closing_record
from correlate.sources import darshan_coverage as cov
from correlate.sources.detect import load

SAMPLE = Path(__file__).parents[2] / "samples" / "run-v1"


def _mmap_header(name_len: int, module_lens: dict[int, int]) -> bytes:
    """A memory-mapped log's header as darshan-core lays it out (darshan-log-format.h)."""
    maps = [0, name_len] + [x for i in range(64) for x in (0, module_lens.get(i, 0))]
    return struct.pack("<8sqB7xQ" + "QQ" * 65, b"3.41", 6567223, 2, 0, *maps) + bytes(4096)


def _gaps(warnings) -> list[str]:
    return [w for w in warnings if w.startswith("Darshan: ") and "no complete log" in w]


def test_the_sample_run_has_a_log_for_every_dask_process():
    assert _gaps(load(SAMPLE).warnings) == []


def test_a_partial_and_a_missing_log_are_named_with_why(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    logs = run / "darshan"
    (partial,) = logs.glob("*id21009-21009_*.darshan")
    partial.rename(logs / partial.name.replace("_1.darshan", ".darshan_partial"))
    (gone,) = logs.glob("*id21013-21013_*.darshan")
    gone.unlink()
    (run / "darshan-mmap").mkdir()
    (run / "darshan-mmap" / "0_python_id21013_mmap-log-1-0.darshan").write_bytes(
        _mmap_header(120, {1: 1408}))
    (run / "darshan-mmap" / "0_sh_id21020_mmap-log-2-0.darshan").write_bytes(
        _mmap_header(0, {}))  # empty: not a record of anything
    (line,) = _gaps(load(run).warnings)
    assert line == (
        "Darshan: 2 of 3 Dask process(es) have no complete log, so their I/O is missing from "
        "every I/O figure: worker-vm-21009 (log still .darshan_partial: killed while writing "
        "it); worker-vm-21013 (no log: it did not close its log (killed, or still running)); "
        "1 memory-mapped log(s) of processes that did not close their log are in darshan-mmap/ "
        "(darshan-parser reads them; not counted here)")


def test_without_darshan_nothing_is_said_about_logs(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    shutil.rmtree(run / "darshan")
    assert _gaps(load(run).warnings) == []


def test_hosts_and_pids_must_both_agree():
    procs = [cov.Process("worker-a-7", "a.example.org", 7), cov.Process("worker-b-7", "b", 7)]
    logs = [cov.LogFile("u_python_id7-7_1-2-3_1.darshan", "a"),
            cov.LogFile("u_python_id9-9_1-2-3_1.darshan", None)]
    assert list(cov.missing_logs(procs, logs)) == ["worker-b-7"]
    assert cov.pid_of_log("u_python_id123-456_11-22-1-2_1.darshan") == 456
    assert cov.pid_of_log("u_python_id7_mmap-log-1-0.darshan") is None


@pytest.mark.cluster
def test_a_sigkilled_worker_is_named_by_collect_and_correlate(tmp_path):
    from collectors.darshan_env import find_runtime

    lib, _how = find_runtime("auto")
    if lib is None:
        pytest.skip("no darshan-runtime on this machine (DARSHAN_RUNTIME, darshan-config or a "
                    "common install path): a real killed worker's log needs one")
    jobs = Path(__file__).parents[1] / "collectors"
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "-o", str(run),
                           "--darshan", lib, "--profile", "off", "--flush-interval", "0.5",
                           "--", sys.executable, "jobs.py", "kill", str(tmp_path / "m")],
                          capture_output=True, text=True, timeout=300, cwd=jobs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "did not close their Darshan log" in proc.stderr, proc.stderr
    assert list((run / "darshan-mmap").glob("*.darshan"))
    (line,) = _gaps(load(run).warnings)
    killed = [d.name for d in (run / "procs").iterdir() if closing_record(d) is None]
    assert len(killed) == 1 and f"{killed[0]} (no log: it did not close its log" in line
    assert line.startswith("Darshan: 1 of 3 Dask process(es) have no complete log")
