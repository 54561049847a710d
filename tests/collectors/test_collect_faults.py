"""Faults met by real jobs under `collect`, with tasks that leave marker files (the truth):
the job's exit code is unchanged, there is no traceback, and every execution the job ran is
either in ``task_executions`` or counted in the summary's rejects with its reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import psutil
import pytest

import collectors
from correlate.sources.detect import load
from testing.faults import mount_error, tmpfs
from testing.raw_parts import closing_records

HERE = Path(__file__).parent
COLLECTORS = Path(collectors.__file__).parent
pytestmark = pytest.mark.cluster


def collect(out: Path, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(out), "--darshan", "off",
           "--profile", "off", "--flush-interval", "0.5", "--", sys.executable,
           "fault_jobs.py", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=HERE)


def ran(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_two_workers_in_one_process_each_keep_every_execution(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = collect(tmp_path / "run", "inprocess", str(marks), "60")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    workers = sorted(p.name for p in (tmp_path / "run" / "procs").glob("worker-*"))
    assert len(workers) == 2 and workers[1] == f"{workers[0]}.2"
    frames = load(tmp_path / "run")
    ex = frames.executions
    assert ex.height == 60 == len(ran(marks))
    assert set(ex["key"]) == ran(marks)
    assert ex["worker"].n_unique() == 2
    assert pl.Series(ex["key"]).is_unique().all()


# ---- faults injected into a running job (2 worker processes x 2 threads) ---------------------

N_TASKS, TASK_S = 400, 0.02


def start_job(run: Path, marks: Path, deny: Path | None = None,
              deny_errno: str = "EACCES") -> subprocess.Popen:
    """The job under `collect`; with ``deny``, writes into the run folder fail with EACCES
    while that file exists (``deny_writes``: root ignores permissions)."""
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(run), "--darshan", "off",
           "--profile", "off", "--flush-interval", "0.5", "--", sys.executable,
           "fault_jobs.py", "cluster", str(marks), str(N_TASKS), str(TASK_S)]
    env = dict(os.environ)
    if deny is not None:
        env.update(DENY_WRITES_UNDER=str(run), DENY_WRITES_FLAG=str(deny),
                   DENY_WRITES_ERRNO=deny_errno,
                   DASK_DISTRIBUTED__SCHEDULER__PRELOAD="['deny_writes']",
                   DASK_DISTRIBUTED__WORKER__PRELOAD="['deny_writes']",
                   PYTHONPATH=os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]))
    return subprocess.Popen(cmd, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def wait_for(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def worker_pids(run: Path) -> list[int]:
    return [json.loads(p.read_text())["pid"]
            for p in sorted((run / "procs").glob("worker-*/proc.json"))]


def wait_workers_gone(run: Path, timeout: float = 120) -> None:
    """Until the job's worker processes have ended (they flush their rows as they end, after
    their parent), however long that takes on a loaded machine."""
    procs = []
    for pid in worker_pids(run):
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    deadline = time.monotonic() + timeout

    def alive(p: psutil.Process) -> bool:
        try:
            return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    while any(alive(p) for p in procs):
        assert time.monotonic() < deadline, "the workers did not end"
        time.sleep(0.05)


def accounted(run: Path, marks: Path) -> tuple[set[str], int, object]:
    """(keys that ran without an execution row, executions counted as missing, frames)."""
    frames = load(run)
    absent = ran(marks) - set(frames.executions["key"])
    rejects = frames.rejects.filter(pl.col("reason").str.starts_with("task_executions"))
    # (a killed worker's unwritten executions are lost with it, not rejected records)
    lost = sum(frames.facts["executions_lost_with_worker"].values())
    return absent, int(rejects["count"].sum() or 0) + lost, frames


def ours(err: str) -> list[str]:
    """The tracebacks in ``err`` that run through the collectors (Dask's own, e.g. a worker's
    heartbeat racing the scheduler's close on a loaded machine, are not ours)."""
    return [t for t in err.split("Traceback")[1:] if "collectors/" in t]


def check(proc: subprocess.Popen, run: Path, marks: Path, code: int) -> object:
    _out, err = proc.communicate(timeout=240)
    assert proc.returncode == code, err[-3000:]
    assert not ours(err), err[-3000:]
    absent, counted, frames = accounted(run, marks)
    assert len(absent) <= counted, (sorted(absent)[:5], counted, frames.warnings)
    return frames


@pytest.fixture
def fs(tmp_path):
    if (why := mount_error(tmp_path / "probe")) is not None:
        pytest.skip(why)
    with tmpfs(tmp_path / "fs", "16m") as mounted:
        yield mounted


@pytest.mark.parametrize("fault", ["full then freed", "full for good", "read-only then restored"])
def test_a_run_folder_that_fills_up_or_turns_read_only(tmp_path, fs, fault):
    marks, run = tmp_path / "marks", fs.path / "run"
    marks.mkdir()
    proc = start_job(run, marks)
    wait_for(tmp_path / "ready")
    time.sleep(0.5)
    fs.fill() if fault.startswith("full") else fs.read_only()
    if not fault.endswith("for good"):
        time.sleep(1.5)
        fs.free() if fault.startswith("full") else fs.read_only(False)
    frames = check(proc, run, marks, 0)
    assert json.loads((run / "manifest.json").read_text())["exit_code"] == 0
    assert any("write(s) into the run folder failed" in w for w in frames.warnings)
    assert list(run.rglob(".part-*.tmp")) == []


@pytest.mark.parametrize("for_good", [False, True])
def test_a_run_folder_whose_write_permission_is_removed_partway(tmp_path, for_good):
    marks, run, deny = tmp_path / "marks", tmp_path / "run", tmp_path / "deny"
    marks.mkdir()
    proc = start_job(run, marks, deny)
    wait_for(tmp_path / "ready")
    time.sleep(0.5)
    deny.touch()
    if not for_good:
        time.sleep(1.5)
        deny.unlink()
    frames = check(proc, run, marks, 0)
    assert any("write(s) into the run folder failed (permission" in w for w in frames.warnings)
    assert not any("did not close" in w for w in frames.warnings)


def test_a_run_folder_read_only_for_good_is_said_without_a_traceback(tmp_path, fs):
    """Nothing can be written after the remount, not even a closing record: the job's exit code is
    kept, `collect` says in one line what it could not write, and correlate reads what was
    written before and says the processes did not close."""
    marks, run = tmp_path / "marks", fs.path / "run"
    marks.mkdir()
    proc = start_job(run, marks)
    wait_for(tmp_path / "ready")
    time.sleep(0.5)
    fs.read_only()
    _out, err = proc.communicate(timeout=240)
    # no traceback through the collectors' code (under load Dask may log its own: a worker's
    # heartbeat to a scheduler already gone)
    ours = [line for line in err.splitlines() if line.lstrip().startswith('File "')
            and f"{os.sep}collectors{os.sep}" in line]
    assert proc.returncode == 0 and not ours, err[-3000:]
    assert [line for line in err.splitlines() if line.startswith("collect:")] == [
        f"collect: could not finish {run / 'manifest.json'}: Read-only file system (the job's "
        "exit code is passed through)"]
    frames = load(run)
    assert any("no exit code" in w for w in frames.warnings)
    assert any("has not closed" in w for w in frames.warnings)


def test_sigkill_of_a_worker_counts_what_it_had_not_flushed(tmp_path):
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    proc = start_job(run, marks)
    wait_for(tmp_path / "ready")
    time.sleep(0.8)
    os.kill(worker_pids(run)[0], signal.SIGKILL)
    frames = check(proc, run, marks, 0)
    assert any("did not close cleanly" in w for w in frames.warnings)


def test_sigkill_of_collect_leaves_a_run_that_says_it_has_no_exit_code(tmp_path):
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    proc = start_job(run, marks)
    wait_for(tmp_path / "ready")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    wait_for(tmp_path / "done")  # the job goes on and ends by itself
    wait_workers_gone(run)
    absent, counted, frames = accounted(run, marks)
    assert len(absent) <= counted
    assert any("no exit code" in w for w in frames.warnings)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("target", ["collect", "job"])
def test_sigterm_and_sigint_to_collect_or_the_job(tmp_path, sig, target):
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    proc = start_job(run, marks)
    wait_for(tmp_path / "ready")
    time.sleep(0.8)
    job = [c for c in psutil.Process(proc.pid).children() if "fault_jobs.py" in c.cmdline()]
    os.kill(proc.pid if target == "collect" else job[0].pid, sig)
    # the job's own outcome: Python dies of SIGTERM, and of SIGINT after its
    # KeyboardInterrupt (which prints the job's traceback, not collect's)
    _out, err = proc.communicate(timeout=240)
    assert proc.returncode == 128 + sig
    assert f"{COLLECTORS}/" not in err and "collect:" not in err, err[-3000:]
    wait_workers_gone(run)  # the workers close after their parent
    absent, counted, _frames = accounted(run, marks)
    assert len(absent) <= counted


def test_sigkill_of_the_scheduler_in_the_jobs_process(tmp_path):
    """The LocalCluster's scheduler lives in the job's process: killing it kills the job (exit
    137, passed through); its workers, whose parent went away, flush as Dask ends them."""
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    proc = start_job(run, marks)
    wait_for(tmp_path / "ready")
    time.sleep(0.8)
    scheduler = json.loads(next((run / "procs").glob("scheduler-*/proc.json")).read_text())
    os.kill(scheduler["pid"], signal.SIGKILL)
    _out, err = proc.communicate(timeout=240)
    # Dask's own workers log their lost scheduler (tracebacks of the job): none of ours
    assert proc.returncode == 137 and f"{COLLECTORS}/" not in err, err[-3000:]
    wait_workers_gone(run)  # the workers end after their parent
    absent, counted, frames = accounted(run, marks)
    assert len(absent) <= counted
    assert sum("its rows were flushed as it exited" in w for w in frames.warnings) == 2


def test_a_run_folder_moved_away_during_the_job(tmp_path):
    """Every write after the move fails (its folder is gone): the rows are counted as dropped
    with that reason in the closing record, written into proc.json through the folder each
    process holds open; collect
    finishes the manifest where the folder now is and says so in one line."""
    marks, run, moved = tmp_path / "marks", tmp_path / "run", tmp_path / "moved"
    marks.mkdir()
    proc = start_job(run, marks)
    wait_for(tmp_path / "ready")
    time.sleep(0.5)
    run.rename(moved)
    _out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0 and not ours(err), err[-3000:]
    assert f"collect: {run} was moved to {moved} during the job" in err
    assert json.loads((moved / "manifest.json").read_text())["exit_code"] == 0
    absent, counted, frames = accounted(moved, marks)
    assert absent and counted >= len(absent)  # the move did lose rows, each counted
    assert any("folder gone (moved or deleted)" in w for w in frames.warnings)
    assert not any("did not close" in w or "has not closed" in w for w in frames.warnings)


def test_a_run_folder_where_no_process_can_write_is_said(tmp_path):
    """Writes under the run folder denied from the start (collect itself could write the
    manifest): nothing can be recorded or counted, the job runs unharmed, each process says
    why in one line of its log, and collect and correlate do not claim the job ran no Dask."""
    marks, run, deny = tmp_path / "marks", tmp_path / "run", tmp_path / "deny"
    marks.mkdir()
    deny.touch()
    proc = start_job(run, marks, deny)
    _out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0 and (tmp_path / "done").exists(), err[-3000:]
    assert not ours(err), err[-3000:]
    denied = [line for line in err.splitlines() if "dask-correlate: " in line]
    assert any("CorrelateSchedulerPlugin" in line and "Permission denied" in line
               for line in denied), err[-3000:]
    assert sum("CorrelateWorkerPlugin" in line for line in denied) == 2, denied
    assert f"collect: no Dask scheduler or worker recorded into {run}: the job started none, " \
           "or they could not write there" in err
    out = subprocess.run([sys.executable, "-m", "correlate.cli", str(run), "--no-reports"],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "could not write there" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_unreadable_manifest_loses_the_jobs_facts_not_its_records(tmp_path):
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    proc = collect(run, "inprocess", str(marks), "40")
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (run / "manifest.json").read_text()
    (run / "manifest.json").write_text(text[:len(text.rstrip()) // 2])  # cut short
    out = subprocess.run([sys.executable, "-m", "correlate.cli", str(run), "--no-reports"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "manifest.json: unreadable JSON" in out.stdout
    frames = load(run)
    assert set(frames.executions["key"]) == ran(marks)
    assert frames.facts["exit_code"] is None and frames.facts["command"] is None


@pytest.mark.parametrize("event", ["restart", "retire", "memory"])
def test_workers_replaced_retired_or_killed_by_their_nanny(tmp_path, event):
    """client.restart() (every worker process replaced), retire_workers while tasks run, and a
    task holding more than its worker's memory limit (the nanny kills the worker, four times,
    and starts a new process each time: new pid, new folder): every execution that ran is a
    row or counted, and the tasks taken back from a dying worker are said."""
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(run), "--darshan", "off",
           "--profile", "off", "--flush-interval", "0.5", "--", sys.executable,
           "fault_jobs.py", "lifecycle", str(marks), event, "40"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=HERE)
    assert proc.returncode == 0 and (tmp_path / "done").exists(), proc.stderr[-3000:]
    assert f"{COLLECTORS}/" not in proc.stderr and "collect:" not in proc.stderr
    absent, counted, frames = accounted(run, marks)
    assert len(absent) <= counted, (sorted(absent)[:5], counted, frames.warnings)
    after = {f"after-{i}" for i in range(40)}
    assert after <= set(frames.executions["key"])  # the workers that came after record
    workers = list((run / "procs").glob("worker-*"))
    if event == "retire":
        assert len(workers) == 2
        assert len(closing_records(run)) == 3
    else:
        assert len(workers) > 2  # new processes, each its own folder
    if event == "memory":
        assert "hog: KilledWorker" in proc.stderr
        assert any("taken back from a worker that died" in w for w in frames.warnings)


def test_a_worker_whose_proc_json_is_unreadable_keeps_its_rows(tmp_path):
    """proc.json damaged after the job: the worker is known by its folder's name (role, host,
    pid) and its address by the scheduler's add_worker of that pid, so its executions are used
    and none is counted as missing."""
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    proc = collect(run, "cluster", str(marks), "100", "0.01")
    assert proc.returncode == 0, proc.stderr[-3000:]
    damaged = sorted((run / "procs").glob("worker-*"))[0]
    (damaged / "proc.json").write_text('{"pid": 1')
    frames = load(run)
    assert set(frames.executions["key"]) == ran(marks)
    ex = frames.executions
    assert ex.filter(pl.col("worker").is_null()).height == 0
    assert any(f"{damaged / 'proc.json'}: unreadable JSON" in w for w in frames.warnings)
    assert not any("missing" in w for w in frames.warnings), frames.warnings


def test_write_errors_of_a_failing_device_are_counted_with_their_errno(tmp_path):
    """Writes failing with EIO for a while (a device or network file system in trouble): the
    rule holds as for a full disk, the reason named by its errno."""
    marks, run, deny = tmp_path / "marks", tmp_path / "run", tmp_path / "deny"
    marks.mkdir()
    proc = start_job(run, marks, deny, deny_errno="EIO")
    wait_for(tmp_path / "ready")
    time.sleep(0.5)
    deny.touch()
    time.sleep(1.5)
    deny.unlink()
    frames = check(proc, run, marks, 0)
    assert any("write(s) into the run folder failed (EIO" in w for w in frames.warnings)


def test_a_worker_stopped_and_continued(tmp_path):
    """SIGSTOP then SIGCONT of a worker (a debugger, a job suspended by the batch system): its
    flush thread stops with it and resumes; nothing is lost."""
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    proc = start_job(run, marks)
    wait_for(tmp_path / "ready")
    time.sleep(0.5)
    pid = worker_pids(run)[0]
    os.kill(pid, signal.SIGSTOP)
    time.sleep(3)
    os.kill(pid, signal.SIGCONT)
    frames = check(proc, run, marks, 0)
    assert set(frames.executions["key"]) == ran(marks)


def test_correlate_on_a_job_still_running(tmp_path):
    """correlate while the job runs: it says the job may still be running, and counts what the
    scheduler saw finish that the workers have not flushed yet, with that reason."""
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    proc = start_job(run, marks)
    wait_for(tmp_path / "ready")
    time.sleep(1)
    frames = load(run)
    assert proc.poll() is None  # read while the job ran
    early = subprocess.run([sys.executable, "-m", "correlate.cli", str(run), "--no-reports",
                            "-o", str(tmp_path / "early")], capture_output=True, text=True)
    check(proc, run, marks, 0)
    assert early.returncode == 0 and "Traceback" not in early.stderr, early.stderr[-2000:]
    assert any("no exit code: the job is still running" in w for w in frames.warnings)
    assert any("has not closed: the job may still be running" in w for w in frames.warnings)
    gaps = frames.rejects.filter(pl.col("reason").str.contains("executions missing"))
    assert gaps.filter(~pl.col("reason").str.contains("the job may still be running")).height \
        == 0


def test_tasks_that_fork_child_processes(tmp_path):
    """Each task forks a child (multiprocessing's fork context), which ends with os._exit: the
    child inherits the collectors' exit hooks and whatever lock a thread of the worker held at
    the fork, but not the threads. It must exit without them (before: the job hung in such a
    child, or the child wrote its parent's rows a second time); every execution is recorded
    once."""
    marks, run = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    proc = collect(run, "fork", str(marks), "40", timeout=120)
    assert proc.returncode == 0 and not ours(proc.stderr), proc.stderr[-3000:]
    ex = load(run).executions
    assert ex.height == 40 and set(ex["key"]) == ran(marks)
    for closed in closing_records(run, "worker-*").values():
        assert "ended_by" not in closed
