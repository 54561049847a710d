"""After the job: `collect` waits (bounded) for the job's processes still writing their Darshan
logs, names what stays incomplete, keeps the memory-mapped logs of processes that did not close
their log (in the run folder, not /tmp) and removes the empty ones.

The rules run on real processes and genuine logs (CI); the end-to-end tests need the real
darshan-runtime and skip without it."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from collectors import darshan_after, darshan_env


def _sleeper(run_dir: Path, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "DASK_CORRELATE_RUN_DIR": str(run_dir.resolve())}
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"],
                            env=env)


def test_the_job_processes_are_found_by_their_run_folder(tmp_path):
    mine, other = _sleeper(tmp_path / "a", 5), _sleeper(tmp_path / "b", 5)
    try:
        time.sleep(0.3)  # the interpreter has replaced the fork's environment by then
        found = darshan_after.job_processes(tmp_path / "a")
        assert mine.pid in found and other.pid not in found
    finally:
        mine.kill(), other.kill()
        mine.wait(), other.wait()


def test_waiting_ends_when_the_job_processes_exit(tmp_path):
    proc = _sleeper(tmp_path, 0.8)
    time.sleep(0.2)
    waited, alive = darshan_after.wait_for_job(tmp_path, limit_s=20)
    assert alive == [] and 0.3 < waited < 10
    proc.wait()


def test_waiting_is_bounded_and_names_who_still_runs(tmp_path):
    proc = _sleeper(tmp_path, 30)
    try:
        time.sleep(0.2)
        start = time.monotonic()
        out = darshan_after.settle(tmp_path, limit_s=0.5)
        assert time.monotonic() - start < 5 and out.still_running == [proc.pid]
        assert f"(pid {proc.pid})" in out.message(tmp_path)
    finally:
        proc.kill()
        proc.wait()


def _mmap_header(name_len: int, module_lens: dict[int, int]) -> bytes:
    """A memory-mapped log's header as darshan-core lays it out (darshan-log-format.h)."""
    maps = [0, name_len] + [x for i in range(64) for x in (0, module_lens.get(i, 0))]
    return struct.pack("<8sqB7xQ" + "QQ" * 65, b"3.41", 6567223, 2, 0, *maps)


def test_mmap_logs_with_records_are_kept_and_empty_ones_removed(tmp_path):
    folder = tmp_path / darshan_after.MMAP_FOLDER
    folder.mkdir()
    (folder / "u_sh_id1_mmap-log-1-0.darshan").write_bytes(_mmap_header(0, {}) + bytes(4096))
    (folder / "u_python_id2_mmap-log-2-0.darshan").write_bytes(
        _mmap_header(120, {1: 1408, 10: 96}) + bytes(4096))
    (folder / "notes.darshan").write_bytes(b"not a log")
    out = darshan_after.settle(tmp_path, limit_s=0)
    assert out.mmap_removed == 1 and out.mmap_kept == ["u_python_id2_mmap-log-2-0.darshan"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "notes.darshan", "u_python_id2_mmap-log-2-0.darshan"]
    assert "1 process(es) did not close their Darshan log" in out.message(tmp_path)


def test_a_complete_log_reads_as_holding_records(tmp_path):
    """The header layout is the one libdarshan-util writes (a genuine log's maps are set)."""
    from testing.darshan_writer import write_log

    seg = pl.DataFrame({"path": ["/data/x"], "op": ["write"], "offset": [0], "length": [10],
                        "start_s": [0.1], "end_s": [0.2],
                        "thread_id": pl.Series([7], dtype=pl.UInt64)})
    log = write_log(tmp_path / "a.darshan", seg)
    assert darshan_after.mmap_log_holds_records(Path(log)) is True


def test_the_empty_folder_goes_and_nothing_to_say(tmp_path):
    (tmp_path / darshan_after.MMAP_FOLDER).mkdir()
    out = darshan_after.settle(tmp_path, limit_s=0)
    assert out.message(tmp_path) is None
    assert not (tmp_path / darshan_after.MMAP_FOLDER).exists()


# --- with the real darshan-runtime -------------------------------------------------------

def _runtime() -> str:
    lib, _how = darshan_env.find_runtime("auto")
    if lib is None:
        pytest.skip("no darshan-runtime on this machine (DARSHAN_RUNTIME, darshan-config or a "
                    "common install path): collect's log housekeeping needs one")
    return lib


#: the main process exits at once; a helper it started (as multiprocessing's resource tracker
#: is) writes a file after it and closes its Darshan log later; a shell runs a command through
#: exec (its own log never closed, nothing recorded); a process killed after writing keeps only
#: its memory-mapped log
JOB = """
import os, signal, subprocess, sys
data = sys.argv[1]
subprocess.Popen([sys.executable, "-c",
                  "import time, sys; time.sleep(1.5); open(sys.argv[1], 'w').write('x' * 100)",
                  os.path.join(data, "late-helper")])
subprocess.run(["sh", "-c", "exec true"])
subprocess.run([sys.executable, "-c",
                "import os, sys; open(sys.argv[1], 'w').write('y' * 50); "
                "os.kill(os.getpid(), 9)", os.path.join(data, "killed")])
"""


@pytest.fixture(scope="module")
def housekept(tmp_path_factory):
    lib = _runtime()
    tmp = tmp_path_factory.mktemp("darshan-after")
    (tmp / "data").mkdir()
    run = tmp / "run"
    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "-o", str(run),
                           "--darshan", lib, "--profile", "off", "--", sys.executable, "-c",
                           JOB, str(tmp / "data")], capture_output=True, text=True,
                          timeout=300)
    return run, proc


def test_collect_waits_for_the_helper_that_outlives_the_job(housekept):
    from correlate.sources import darshan_logs

    run, proc = housekept
    assert proc.returncode == 0, proc.stderr
    assert not list((run / "darshan").glob("*.darshan_partial")), proc.stderr
    frames = darshan_logs.load(darshan_logs.expand_paths([run / "darshan"]))
    helper = frames.io_file_counters.filter(pl.col("path").str.ends_with("late-helper"))
    assert helper["write_bytes"].sum() == 100


def test_the_killed_process_mmap_log_is_kept_in_the_run_folder_and_named(housekept):
    run, proc = housekept
    kept = sorted((run / darshan_after.MMAP_FOLDER).glob("*.darshan"))
    # the killed python's records; the exec'ing shell's empty one is gone
    assert [p.name.split("_id")[0].split("_", 1)[1] for p in kept] == ["python"], kept
    parser = Path(_runtime()).parent.parent / "bin" / "darshan-parser"
    if parser.exists():  # (installed with darshan-util, not with the runtime alone)
        parsed = subprocess.run([str(parser), str(kept[0])], capture_output=True, text=True)
        if parsed.returncode == 0:  # darshan-parser reads the kept log
            assert "killed" in parsed.stdout
    lines = proc.stderr.splitlines()
    assert [x for x in lines if "did not close their Darshan log" in x] == [
        f"collect: 1 process(es) did not close their Darshan log (killed, or exec'd another "
        f"program): their records are kept in {run / darshan_after.MMAP_FOLDER} "
        "(darshan-parser reads them)"], proc.stderr
