"""The collectors never hang a job (CPython gh-106883, locks across a fork), and a stall that
happens anyway is written down with every thread's stack (collectors.watchdog)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from collectors import frames_guard, guard, watchdog
from correlate.sources import stalls

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("deadlock.py")
#: a run that ends takes well under a second; one that has not ended by then is hung
HUNG_AFTER_S = 8


@pytest.fixture
def guarded():
    """The guard installed for the test; left as it was found (a worker of this process, in an
    earlier test, may have installed it for good)."""
    before = frames_guard.installed()
    frames_guard.install(force=True)
    yield
    if not before:
        frames_guard.uninstall()


def _run_deadlock(*flags: str) -> subprocess.CompletedProcess | subprocess.TimeoutExpired:
    """The reproduction's result, or the TimeoutExpired (with its stderr) of a run still going
    after HUNG_AFTER_S."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        return subprocess.run([sys.executable, str(SCRIPT), *flags], capture_output=True,
                              text=True, timeout=HUNG_AFTER_S, env=env)
    except subprocess.TimeoutExpired as hung:
        return hung


@pytest.mark.skipif(not frames_guard.AFFECTED,
                    reason=f"Python {sys.version.split()[0]} cannot deadlock in "
                           "sys._current_frames (gh-106883 is fixed in 3.11.12; 3.10 and 3.12+ "
                           "never had it)")
def test_the_reproduction_hangs_without_the_guard_on_this_python():
    assert isinstance(_run_deadlock(), subprocess.TimeoutExpired)


def test_the_guard_ends_the_reproduction_every_time():
    for _ in range(3):
        done = _run_deadlock("--guard")
        assert isinstance(done, subprocess.CompletedProcess)
        assert done.returncode == 0 and "done" in done.stdout


STOPPED = """
import sys, threading
from pathlib import Path
from collectors import watchdog

dog = watchdog.watchdog(Path(sys.argv[1]), after_s=0.3)
done = threading.Event()

def deep(depth):  # frames pushed and popped all the time
    return 0 if depth == 0 else deep(depth - 1)

def busy():
    while not done.is_set():
        deep(40)

threads = [threading.Thread(target=busy) for _ in range(3)]
for t in threads:
    t.start()
print("ready", flush=True)
sys.stdin.readline()
done.set()
for t in threads:
    t.join()
dog.stop()
print("ended", flush=True)
"""


def _text_of(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_a_process_stopped_past_the_stall_time_goes_on_unharmed(tmp_path):
    """SIGSTOP for 1.5 s (five times the stall time), then SIGCONT, while three threads run
    Python: the process goes on, records a `process` stall with the stacks, and nothing dumps
    its threads' stacks from outside the interpreter as it resumes (faulthandler's timer, armed
    by the watchdog before, did so among the running threads, reading frames as they changed:
    it crashed a worker of a real cluster mid-dump in the stopped-worker test below)."""
    import signal

    child = subprocess.Popen([sys.executable, "-c", STOPPED, str(tmp_path)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        time.sleep(0.3)
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(1.5)
        os.kill(child.pid, signal.SIGCONT)
        deadline = time.monotonic() + 30  # (the watchdog's next tick writes the stall)
        while ('"kind": "process"' not in _text_of(tmp_path / watchdog.FILE)
               and time.monotonic() < deadline and child.poll() is None):
            time.sleep(0.05)
        time.sleep(0.3)  # (and the stacks after its header)
        out, err = child.communicate("\n", timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0 and out == "ended\n", err[-3000:]
    assert "Timeout (" not in err, err[-3000:]
    found, unreadable = stalls.read(tmp_path)
    assert unreadable == [] and [s["kind"] for s in found] == ["process"], found
    assert found[0]["end"] - found[0]["start"] >= 1.4


def test_the_guard_turns_collections_off_only_for_the_call_and_restores_them():
    seen: list[bool] = []
    guarded = frames_guard._guarded(lambda: seen.append(gc.isenabled()) or {})
    assert guarded() == {} and seen == [False] and gc.isenabled()
    gc.disable()
    try:
        guarded()
        assert not gc.isenabled()  # the caller's own choice stays
    finally:
        gc.enable()

    def fails() -> None:
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        frames_guard._guarded(fails)()
    assert gc.isenabled()


def test_install_guards_every_caller_of_sys_and_uninstall_gives_the_originals_back():
    # (a worker of this process, in an earlier test, may have installed it: it stays)
    before = frames_guard.installed()
    builtin = frames_guard._ORIGINALS.get("_current_frames", sys._current_frames)
    frames_guard.install(force=True)
    try:
        assert frames_guard.installed() and sys._current_frames is not builtin
        assert threading.get_ident() in sys._current_frames()
        frames_guard.install(force=True)  # idempotent: not a guard around the guard
        assert frames_guard._ORIGINALS["_current_frames"] is builtin
    finally:
        frames_guard.uninstall()
        assert sys._current_frames is builtin and not frames_guard.installed()
        if before:
            frames_guard.install(force=True)


def _forked_while_held(lock: Any, in_child: Callable[[], object]) -> int | None:
    """Fork while another thread holds ``lock``; run ``in_child`` in the child (where that
    thread does not exist). The child's exit code, or None if it hung (killed after 5 s)."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(5)
        pid = os.fork()
        if pid == 0:
            try:
                in_child()
            finally:
                os._exit(0)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.02)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        return None
    finally:
        release.set()
        holder.join()


def test_a_child_forked_while_another_thread_holds_the_guard_can_sample_stacks(guarded):
    assert _forked_while_held(frames_guard._lock, sys._current_frames) == 0, (
        "the forked child hung in sys._current_frames")


@pytest.mark.parametrize("module", [guard, watchdog], ids=["guard", "watchdog"])
def test_a_child_forked_while_another_thread_holds_a_collector_lock_can_take_it(module):
    def take() -> None:
        with module._lock:
            pass

    assert _forked_while_held(module._lock, take) == 0, (
        f"the forked child hung on {module.__name__}'s lock")


def test_a_stalled_thread_is_recorded_with_its_stack_and_its_end(tmp_path):
    dog = watchdog.Watchdog(tmp_path, after_s=0.3)
    progress = [time.monotonic()]
    stuck = threading.Event()

    def waits_for_nothing_in_particular() -> None:
        stuck.wait(10)

    thread = threading.Thread(target=waits_for_nothing_in_particular, name="stuck-one")
    thread.start()
    dog.watch("event-loop", "tcp://w:1", lambda: progress[0], period=0.1)
    dog.start()
    try:
        time.sleep(1.2)  # progress stopped: a stall, recorded once
        progress[0] = time.monotonic() + 60  # progress again: its end
        time.sleep(0.6)
    finally:
        stuck.set()
        thread.join()
        dog.stop()
    text = (tmp_path / watchdog.FILE).read_text()
    headers = [line for line in text.splitlines() if line.startswith(watchdog.HEADER)]
    assert len(headers) == 2, text
    import json

    first, last = (json.loads(h[len(watchdog.HEADER):]) for h in headers)
    assert first["kind"] == "event-loop" and first["owner"] == "tcp://w:1"
    assert first["end"] is None and last["start"] == first["start"] and last["end"] > first["start"]
    assert "stuck-one" in first["threads"].values()
    assert "waits_for_nothing_in_particular" in text
    found, unreadable = stalls.read(tmp_path)  # as correlate reads it
    assert unreadable == [] and len(found) == 1
    assert (found[0]["start"], found[0]["end"]) == (first["start"], last["end"])
    stuck_one = next(t for t in found[0]["threads"] if t["name"] == "stuck-one")
    assert stuck_one["frames"][-4].startswith("waits_for_nothing_in_particular (")
    assert stalls.describe("worker-h-1", found[0]).startswith(
        "worker-h-1: stalled at ") and "the event loop of tcp://w:1 made no progress" in (
        stalls.describe("worker-h-1", found[0]))


def test_a_clean_stop_without_a_stall_leaves_no_file(tmp_path):
    dog = watchdog.Watchdog(tmp_path, after_s=0.3)
    dog.watch("flush", "x", lambda: time.monotonic())
    dog.start()
    time.sleep(0.5)
    dog.stop()
    assert not (tmp_path / watchdog.FILE).exists()


@pytest.mark.cluster
def test_a_worker_stopped_longer_than_the_stall_time_is_named_by_correlate(tmp_path,
                                                                         machine_alone):
    """A real job under `collect` (2 worker processes x 2 threads): one worker is stopped with
    SIGSTOP for 3 s, twice the stall time; `correlate` says which and for how long. The job
    runs with the machine alone (on a loaded machine other loops pause too), the reading
    beside other tests."""
    from correlate.sources.detect import load

    run, marks = tmp_path / "run", tmp_path / "marks"
    marks.mkdir()
    with machine_alone():
        pid, stopped, job_stderr = _stop_a_worker_for_3_s(run, marks, tmp_path)
    worker = next(d for d in (run / "procs").glob("worker-*")
                  if json.loads((d / "proc.json").read_text())["pid"] == pid)
    frames = load(run)
    # (on a loaded machine another loop may also pause past the 1.5 s: only the stop is long)
    long = [s for s in frames.facts["stalls"]
            if s["end"] is None or s["end"] - s["start"] >= 2.5]
    # (every stall recorded, and each process's stalls.txt, in the message: a run without the
    # stop's stall says why there)
    assert [(s["process"], s["kind"]) for s in long] == [(worker.name, "process")], (
        frames.facts["stalls"], {d.name: (d / "stalls.txt").read_text()[:2000]
                                 for d in (run / "procs").iterdir()
                                 if (d / "stalls.txt").exists()},
        sorted(d.name for d in (run / "procs").iterdir()), stopped, job_stderr[-3000:])
    assert long[0]["end"] - long[0]["start"] <= 6
    assert any(w.startswith(f"{worker.name}: stalled at") and "no thread of the process ran" in w
               for w in frames.warnings)
    cli = subprocess.run([sys.executable, "-m", "correlate.cli", str(run), "-o",
                          str(tmp_path / "out"), "--no-reports"], capture_output=True, text=True,
                         timeout=300)
    assert cli.returncode == 0, cli.stderr[-2000:]
    assert f"{worker.name}: stalled at" in cli.stdout + cli.stderr


def _stop_a_worker_for_3_s(run: Path, marks: Path, tmp_path: Path) -> tuple[int, str, str]:
    """The job under `collect`; once 20 tasks have ended, the worker that ran one of them
    stopped (SIGSTOP) for 3 s, then continued; returns when the job has ended, with the
    worker's pid, its state as the kernel saw it during the stop (state letter, tasks ended
    then) and the job's stderr."""
    import signal

    here = Path(__file__).parent
    job = subprocess.Popen(
        [sys.executable, "-m", "collectors.launcher", "-o", str(run), "--darshan", "off",
         "--flush-interval", "0.5", "--stall-after", "1.5", "--", sys.executable,
         "fault_jobs.py", "cluster", str(marks), "300", "0.03"],
        cwd=here, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists() or len(list(marks.iterdir())) < 20:
        assert time.monotonic() < deadline and job.poll() is None, job.stderr and job.stderr.read()
        time.sleep(0.05)
    # (a worker that has run tasks: one the cluster started and lost would not be running)
    pid = next(int(text) for m in marks.iterdir() if (text := m.read_text()))
    os.kill(pid, signal.SIGSTOP)
    time.sleep(0.5)
    # (field 3 of /proc/PID/stat: T when stopped; the name in field 2 may hold spaces)
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    stopped = f"{pid} {state} after {len(list(marks.iterdir()))} tasks"
    time.sleep(2.5)
    os.kill(pid, signal.SIGCONT)
    _out, err = job.communicate(timeout=240)
    assert job.returncode == 0, err[-3000:]
    return pid, stopped, err


def test_a_signal_handler_that_samples_stacks_inside_the_guard_does_not_wait_for_itself(
        guarded):
    """A Python signal handler runs on the main thread between two bytecodes, possibly while
    that thread is inside the guard (a stack-dumping handler, as some job scripts install)."""
    import signal

    sampled: list[int] = []
    old = signal.signal(signal.SIGALRM, lambda *_: sampled.append(len(sys._current_frames())))
    try:
        with frames_guard._lock:  # the main thread inside the guard when the signal lands
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            deadline = time.monotonic() + 5
            while not sampled and time.monotonic() < deadline:
                pass  # (bytecodes: the handler runs here)
        assert sampled and sampled[0] >= 1
    finally:
        signal.signal(signal.SIGALRM, old)
