"""A pid used again within one run (pids are reused on long jobs; a restarted worker or
scheduler can get an earlier one's pid): the later process writes a folder of its own, and
``correlate`` reads the two as separate processes, each row kept to its own process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl

from correlate.sources.detect import load
from correlate.sources.run_folder import SEQ_STRIDE

#: one worker process's recording through the real sink, under the pid it is given (the pid
#: its folder name and proc.json carry: both processes are made to record the same one)
WRITER = """
import sys, threading, time
from pathlib import Path
from collectors.sink import ProcessSink, hostname, proc_json, process_dir
from correlate.schema import run as schema
run, pid, name, port = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
proc = process_dir(run, "worker", hostname(), pid)
tables = {t.name: t for t in (schema.EXECUTIONS_RAW, schema.FILE_OPENS_RAW,
                              schema.WORKER_TRANSITIONS)}
sink = ProcessSink(proc, tables)
proc_json(proc, pid=pid, role="worker", address=f"tcp://127.0.0.1:{port}", name=name,
          nthreads=1, main_thread_id=threading.get_ident())
me = threading.get_ident()
for seq in range(1, 4):
    key = f"{name}-{seq}"
    start = time.time_ns()
    sink.append("worker_transitions", (start, key, "ready", "executing"))
    sink.append("task_file_opens", (start + 1, seq, me, f"/data/{key}", "read"))
    stop = time.time_ns()
    sink.append("task_executions", (seq, key, me, threading.get_native_id(), start, stop,
                                    stop - start, "ok"))
    sink.append("worker_transitions", (stop, key, "executing", "memory"))
    sink.flush()
sink.close()
print(proc.name)
"""


def _record(run: Path, pid: int, name: str, port: int) -> str:
    out = subprocess.run([sys.executable, "-c", WRITER, str(run), str(pid), name, str(port)],
                         capture_output=True, text=True, timeout=60, check=True,
                         env={**os.environ, "DASK_CORRELATE_HOST": "h"})
    return out.stdout.strip()


def test_a_reused_pid_gets_its_own_folder_and_both_processes_are_read(tmp_path):
    run = tmp_path / "run"
    pid = os.getpid()  # (any pid: both recordings are given the same one)
    first = _record(run, pid, "a", 40001)
    second = _record(run, pid, "b", 40002)
    assert first == f"worker-h-{pid}"
    assert second == f"worker-h-{pid}.2"
    # each folder holds its own process's streams (the earlier one's as it left them)
    for folder in (first, second):
        assert sorted(p.name for p in (run / "procs" / folder).glob("*.arrows")) == [
            "strings.arrows", "task_executions.arrows", "task_file_opens.arrows",
            "worker_transitions.arrows"]

    frames = load(run)
    procs = frames.table("processes").sort("worker")
    assert procs.select("host", "pid", "worker", "name").rows() == [
        ("h", pid, "tcp://127.0.0.1:40001", "a"), ("h", pid, "tcp://127.0.0.1:40002", "b")]
    assert procs["closed_cleanly"].to_list() == [True, True]
    ex = frames.table("executions").sort("key")
    assert ex.select("key", "worker", "execution_seq").rows() == [
        *((f"a-{s}", "tcp://127.0.0.1:40001", s) for s in (1, 2, 3)),
        *((f"b-{s}", "tcp://127.0.0.1:40002", SEQ_STRIDE + s) for s in (1, 2, 3))]
    assert frames.table("transitions").filter(pl.col("worker").is_not_null()).height == 12
    # each open joins its own process's execution (the engine joins on host, pid and seq)
    opens = frames.table("file_opens").join(ex, on=["host", "pid", "execution_seq"])
    assert opens.height == 6
    assert (opens["path"] == "/data/" + opens["key"]).all()
    assert any(f"2 processes recorded as pid {pid} on h" in w for w in frames.warnings)
    assert frames.rejects.is_empty()

    # and the whole engine: both processes' tasks in its tasks table
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "correlate.cli", str(run), "-o", str(out),
                    "--no-reports"], capture_output=True, text=True, timeout=300, check=True)
    tasks = pl.read_parquet(out / "tasks.parquet").sort("key")
    assert tasks.select("key", "worker", "pid").rows() == [
        *((f"a-{s}", "tcp://127.0.0.1:40001", pid) for s in (1, 2, 3)),
        *((f"b-{s}", "tcp://127.0.0.1:40002", pid) for s in (1, 2, 3))]


def test_a_run_folder_where_no_process_folder_can_be_made_gives_the_name_unclaimed(tmp_path):
    """``procs`` taken by a file: nothing can be created under it. The writer gets its name
    at once (its sink's own mkdir then fails and says so), a second writer of this process
    the next name; before, the claim tried name after name for ever."""
    from collectors.sink import process_dir

    (tmp_path / "procs").write_text("not a folder")
    first = process_dir(tmp_path, "worker", "h", 7)
    second = process_dir(tmp_path, "worker", "h", 7)
    assert (first.name, second.name) == ("worker-h-7", "worker-h-7.2")
    assert not first.exists() and not second.exists()
