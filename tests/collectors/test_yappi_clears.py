"""Clears of Yappi's tables (``YappiProfile``, "Clears"): a function made anew for every task
grows Yappi's entries whatever the tags, so past a memory bound its tables are cleared. The
rows of executions that end before or start after a clear stay exact (call counts of known
functions, on several threads at once); executions in flight at a forced clear get no rows and
are counted; rows outside tasks are summed across clears."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import polars as pl
import pytest

yappi = pytest.importorskip("yappi")

import _yappi  # noqa: E402

from collectors import profiling  # noqa: E402
from collectors.profiling import TaskTags, YappiProfile  # noqa: E402


@pytest.fixture
def profiler():
    prof = YappiProfile(TaskTags(), "wall")
    yield prof
    if yappi.is_running():
        yappi.stop()
    yappi.clear_stats()
    threading.setprofile(None)


def short_call() -> int:
    return 1


def made_anew():
    """A new function and code object, as unpickling a ``__main__`` function gives per task."""
    ns: dict = {}
    exec("def made_anew(x):\n    return x + 1\n", ns)  # noqa: S102 - a fresh code object
    return ns["made_anew"]


def run_executions(profiler: YappiProfile, n: int, threads: int) -> dict[int, dict[str, int]]:
    """``n`` executions on ``threads`` task threads, each calling ``short_call`` seq % 7 + 1
    times and a function made for it once; → seq → {function: ncall} of its rows."""
    tags = profiler.tags
    resume, pause = profiler.task_hooks()
    got: dict[int, dict[str, int]] = {}

    def timed(seq: int) -> None:
        fn = made_anew()
        tags.local.seq = profiler.acquire(seq)
        resume()
        try:
            for _ in range(seq % 7 + 1):
                short_call()
            fn(seq)
        finally:
            # as the worker's _timed: the execution always ends (a slot never given back
            # would hold every later clear, and the executions waiting for it, for ever)
            try:
                pause()
            except RuntimeError:  # refused while another thread installs (set_profile):
                pass  # the hook stays on, under tag 0 from here; the rows are the calls made
            tags.local.seq = 0
            rows = profiler.finish(seq)
        got[seq] = {}
        for r in rows:
            got[seq][r[5]] = got[seq].get(r[5], 0) + r[8]

    with ThreadPoolExecutor(threads, thread_name_prefix="task-thread") as ex:
        list(ex.map(timed, range(1, n + 1)))
    return got


def expected(seq: int) -> dict[str, int]:
    return {"short_call": seq % 7 + 1, "made_anew": 1}


def test_rows_around_clears_stay_exact_on_several_threads(profiler, monkeypatch):
    """Clears wait for an instant with no execution in flight (new ones wait for it): every
    execution's rows are exactly its calls, and Yappi's memory stays near its bound."""
    monkeypatch.setattr(profiling, "DRAIN_SHARE", 1e6)  # never forced: always waits
    profiler.start(("task-thread",))
    profiler.clear_bytes = _yappi.get_mem_usage() + 60_000
    got = run_executions(profiler, 3000, threads=3)
    memory = _yappi.get_mem_usage()
    profiler.stop()
    assert profiler.clears >= 3 and profiler.clears_forced == 0
    assert profiler.executions_cut == 0
    assert got == {seq: expected(seq) for seq in range(1, 3001)}
    assert memory < profiler.clear_bytes + 60_000


def long_call(started: threading.Event, release: threading.Event) -> None:
    started.set()
    release.wait(30)


def test_a_forced_clear_cuts_the_executions_in_flight_and_counts_them(profiler, monkeypatch):
    """A clear that may not wait is forced at once: an execution in flight then lost the calls
    running at it (Yappi drops its call stacks), so it gets no rows and is counted; every
    other execution, before and after, is exact."""
    monkeypatch.setattr(profiling, "DRAIN_SHARE", 0.0)
    tags = profiler.tags
    profiler.start(("task-thread",))
    resume, pause = profiler.task_hooks()
    started, release = threading.Event(), threading.Event()
    long_rows: list[tuple] = []

    def long_execution() -> None:
        tags.local.seq = profiler.acquire(10_000)
        resume()
        short_call()
        long_call(started, release)
        short_call()  # after the clear: Yappi has this call only, not the two before
        pause()
        tags.local.seq = 0
        long_rows.extend(profiler.finish(10_000))

    with ThreadPoolExecutor(1, thread_name_prefix="task-thread-long") as ex:
        running = ex.submit(long_execution)
        assert started.wait(10)
        profiler.clear_bytes = _yappi.get_mem_usage() + 60_000
        got = run_executions(profiler, 3000, threads=2)
        release.set()
        running.result()
    profiler.stop()
    assert profiler.clears >= 3 and profiler.clears_forced >= 1
    assert long_rows == []
    cut = [seq for seq, rows in got.items() if not rows]
    assert profiler.executions_cut == len(cut) + 1
    assert {seq: rows for seq, rows in got.items() if rows} == {
        seq: expected(seq) for seq in range(1, 3001) if seq not in cut}


def test_rows_outside_tasks_are_summed_across_clears(profiler):
    """Tag 0 (threads outside tasks, always profiled) is read before each clear and summed:
    its call counts are those of the whole run, not since the last clear."""
    profiler.start(("task-thread",))
    profiler.clear_bytes = _yappi.get_mem_usage() + 60_000
    with ThreadPoolExecutor(1, thread_name_prefix="helper") as helper:
        for _ in range(5):
            helper.submit(lambda: [short_call() for _ in range(10)]).result()
            run_executions(profiler, 300, threads=2)
        rows = profiler.rows({0})
    profiler.stop()
    assert profiler.clears >= 3
    outside = [r for r in rows if r[5] == "short_call"]
    assert sum(r[8] for r in outside) == 50 and {r[3] for r in outside} == {0}


def test_what_a_clear_cannot_free_is_known_and_counted(profiler):
    """Yappi 1.7.6 (Python 3.10+) keeps every code object it saw called alive, clears or not:
    the probe at start says so exactly when it is true of the functions of the executions, and
    then the memory the clears freed still counts against the budget (``memory``)."""
    import gc
    import weakref

    profiler.start(("task-thread",))
    profiler.clear_bytes = _yappi.get_mem_usage() + 60_000
    tags = profiler.tags
    resume, pause = profiler.task_hooks()
    codes = []

    def timed(seq: int) -> None:
        fn = made_anew()
        codes.append(weakref.ref(fn.__code__))
        tags.local.seq = profiler.acquire(seq)
        resume()
        fn(seq)
        pause()
        tags.local.seq = 0
        profiler.finish(seq)

    with ThreadPoolExecutor(2, thread_name_prefix="task-thread") as ex:
        list(ex.map(timed, range(1, 3001)))
    gc.collect()
    assert profiler.clears >= 3
    # the code objects of the executions before the last clear: freed unless Yappi leaks
    alive = sum(r() is not None for r in codes[:1000])
    assert alive == (1000 if profiler.keeps_code_alive else 0)
    held = _yappi.get_mem_usage()
    assert (profiler.memory() > held + 2 * 60_000) == profiler.keeps_code_alive
    profiler.stop()


SOURCE = """
def f1(x):
    return x + 1


def work(x):
    return f1(x) + f1(x + 1)
"""


#: tasks of the real-cluster test, and the Yappi memory past which its workers clear: small
#: enough that each worker clears several times (its closing record says how often)
CLUSTER_TASKS = 250
CLUSTER_CLEAR_BYTES = 200_000


def _small_clears(dask_worker) -> int:
    profiler = dask_worker.plugins["dask-correlate-worker"].profiler
    profiler.clear_bytes = CLUSTER_CLEAR_BYTES
    return profiler.clear_bytes


@pytest.mark.cluster
@pytest.mark.parametrize("mode", ["yappi", "yappi-all"])
def test_a_real_cluster_clears_yappi_and_every_execution_is_exact_or_counted(tmp_path, mode):
    """2 workers x 2 threads, ``collectors.record(profile=mode)``, 500 tasks of a function
    made anew for every task (defined by exec: pickled by value, unpickled per task), Yappi's
    clear bound made small: the workers clear Yappi, and every execution has exactly its own
    calls (work 1, f1 2) unless it is counted as cut by a forced clear."""
    from distributed import Client, LocalCluster

    import collectors
    from testing.raw_parts import calls_per_execution, closing_records

    ns: dict = {}
    exec(SOURCE, ns)  # noqa: S102 - a function cloudpickle sends by value
    run = tmp_path / "run"
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        with collectors.record(client, run, profile=mode):
            assert set(client.run(_small_clears).values()) == {CLUSTER_CLEAR_BYTES}
            got = client.gather(client.map(ns["work"], range(CLUSTER_TASKS)))
    assert got == [2 * i + 3 for i in range(CLUSTER_TASKS)]
    clears = [c.get("profile_clears", {}) for c in closing_records(run, "worker-*").values()]
    assert len(clears) == 2 and sum(c.get("clears", 0) for c in clears) >= 2
    joined = calls_per_execution(run, ["work", "f1"])
    # every task timed; one row per execution: a task Dask ran again (a worker the scheduler
    # lost on a loaded machine, its tasks recomputed elsewhere) has one per run
    assert joined["key"].n_unique() == CLUSTER_TASKS
    assert joined.height >= CLUSTER_TASKS
    without = joined.filter(pl.col("work").is_null())
    assert without.height == sum(c.get("executions_cut", 0) for c in clears), (clears, without)
    exact = joined.filter(pl.col("work").is_not_null())
    wrong = exact.filter((pl.col("work") != 1) | (pl.col("f1") != 2))
    assert wrong.is_empty(), (clears, wrong)


def _install_race(*args: str) -> tuple[dict, str]:
    """``install_race.py``'s JSON line, and its stderr."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(here.parents[1]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(here / "install_race.py"), *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


def test_a_thread_starting_during_another_threads_hook_install_runs_and_is_profiled():
    """Installed by threading's bootstrap (``threading.setprofile``, how Yappi hooks new
    threads), a refused install raised before the thread's target ran and the thread died
    silently (an executor's thread: never replaced). Both threads run; the helper thread is
    profiled (the install is retried) and the task thread starts without the hook."""
    got, stderr = _install_race("thread-start")
    assert "Cannot install a profile function" not in stderr
    assert got == {"ran": ["helper", "task"], "errors": [], "helper_profiled": True,
                   "threads_unhooked": 0, "bootstrap_restored": True}


def test_an_execution_whose_hook_install_is_refused_waits_for_it_and_is_exact():
    """CPython (3.11.7) refuses a profile-function install while another thread is in the
    middle of one, whose audit hook (Python code: the collectors' own ``file_opens`` hook is
    one) gave the GIL away: a task thread's hook then never went on, and its execution had no
    rows and was not counted. The profiler's hook-on tries again (``set_profile``): the
    execution's rows are exact."""
    got, _stderr = _install_race()
    if got["attempts"] == 1:
        pytest.skip("this Python installs a profile function during another thread's install")
    # the first install was refused, a later one took: the execution's rows are exact
    assert got["attempts"] > 1
    assert got == {"short_call": 3, "rows": 1, "attempts": got["attempts"], "cut": 0}


def test_an_execution_whose_hook_never_went_on_gets_no_rows_and_is_counted(profiler,
                                                                          monkeypatch):
    """An install that keeps being refused (``set_profile`` gives up): the execution ran
    without Yappi's hook, so it gets no rows (not rows short of its calls) and is counted."""
    tags = profiler.tags
    profiler.start(("task-thread",))
    resume, pause = profiler.task_hooks()
    tries = []

    def refused(install) -> bool:
        def attempt() -> None:
            tries.append(1)
            raise RuntimeError("Cannot install a profile function while another profile "
                               "function is being installed")
        return real(attempt)
    real = profiling.set_profile
    monkeypatch.setattr(profiling, "set_profile", refused)

    def execution() -> list[tuple]:
        tags.local.seq = profiler.acquire(7)
        resume()
        short_call()
        pause()
        tags.local.seq = 0
        return profiler.finish(7)

    with ThreadPoolExecutor(1, thread_name_prefix="task-thread") as ex:
        rows = ex.submit(execution).result()
    profiler.stop()
    assert len(tries) == profiling.INSTALL_TRIES
    assert rows == [] and profiler.executions_cut == 1
