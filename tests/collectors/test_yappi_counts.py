"""Yappi through the collectors' profiler: one call of a task function is one call, also when a
profile snapshot is taken while it runs (Yappi's enumeration counts a running first call in
place, and its return used to count it again); the executors' threads have Yappi's hook only
around the task function, so per-execution entries do not pile up under one caller."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

yappi = pytest.importorskip("yappi")

from collectors.profiling import TaskTags, YappiProfile  # noqa: E402


@pytest.fixture
def profiler():
    prof = YappiProfile(TaskTags(), "wall")
    yield prof
    if yappi.is_running():
        yappi.stop()
    yappi.clear_stats()
    threading.setprofile(None)


def long_call(started: threading.Event, release: threading.Event) -> None:
    started.set()
    release.wait(10)


def short_call() -> int:
    return 1


def test_a_call_running_across_a_snapshot_is_counted_once(profiler):
    tags = profiler.tags
    started, release = threading.Event(), threading.Event()

    def task() -> None:
        tags.local.seq = profiler.acquire(7)
        long_call(started, release)
        short_call()
        tags.local.seq = 0

    profiler.start()
    th = threading.Thread(target=task)
    th.start()
    assert started.wait(10)
    during = {r[5]: r for r in profiler.rows() if r[3] == 7}
    assert during["long_call"][8] == 1  # running: reported as one call, no time yet
    release.set()
    th.join()
    after = {r[5]: r for r in profiler.finish(7)}
    profiler.stop()
    assert after["long_call"][8] == 1 and after["long_call"][9] > 0
    assert after["short_call"][8] == 1


def test_task_threads_profile_only_the_task_function(profiler):
    tags = profiler.tags
    profiler.start(("task-thread",))
    resume, pause = profiler.task_hooks()

    def timed(seq: int) -> None:
        tags.local.seq = profiler.acquire(seq)
        resume()
        try:
            short_call()
        finally:
            pause()
            tags.local.seq = 0

    # both alive until the rows are read (a thread's id can be reused once it ended)
    with ThreadPoolExecutor(1, thread_name_prefix="task-thread") as ex, \
            ThreadPoolExecutor(1, thread_name_prefix="helper") as helper:
        for seq in range(1, 51):
            ex.submit(timed, seq).result()
        helper.submit(short_call).result()
        rows = profiler.rows()
    profiler.stop()
    mine = [r for r in rows if r[5] == "short_call"]
    # one entry per execution, one call each, plus the helper thread's (tag 0)
    assert sorted((r[3], r[8]) for r in mine) == [(0, 1)] + [(s, 1) for s in range(1, 51)]
    task_threads = {r[2] for r in mine if r[3] > 0}
    # nothing of the executor's own loop on the task thread (tag 0): hook only around tasks
    assert not [r for r in rows if r[2] in task_threads and r[3] == 0]


def test_rows_of_some_executions_are_read_by_tag(profiler):
    """A snapshot asks for the executions not written yet: Yappi's entries of those tags, the
    same rows as when every running execution is read, and none of the others."""
    tags = profiler.tags
    profiler.start()

    def task(seq: int) -> None:
        tags.local.seq = profiler.acquire(seq)
        short_call()
        tags.local.seq = 0

    for seq in range(1, 21):
        th = threading.Thread(target=task, args=(seq,))
        th.start()
        th.join()
    every = profiler.rows()
    some = profiler.rows({0, 3, 17})
    profiler.stop()
    assert {r[3] for r in every} >= set(range(1, 21))
    assert sorted(some) == sorted(r for r in every if r[3] in {0, 3, 17})
    assert {r[3] for r in some if r[5] == "short_call"} == {3, 17}


def test_reused_tags_give_each_execution_exactly_its_own_calls(profiler):
    """Tags are slots, read and given back as each execution ends: its rows are the
    difference from the slot's previous holder, so execution ``i`` that calls ``short_call``
    ``i % 7 + 1`` times has exactly that ncall, whatever ran under its slot before (on 3
    threads at once, so slots pass between threads); Yappi's tags (and its memory) stay
    those of the executions in flight, not of every execution so far."""
    import _yappi

    tags = profiler.tags
    profiler.start(("task-thread",))
    resume, pause = profiler.task_hooks()
    got: dict[int, int] = {}

    def timed(seq: int) -> None:
        tags.local.seq = profiler.acquire(seq)
        resume()
        for _ in range(seq % 7 + 1):
            short_call()
        pause()
        tags.local.seq = 0
        for r in profiler.finish(seq):
            if r[5] == "short_call":
                got[r[3]] = got.get(r[3], 0) + r[8]

    with ThreadPoolExecutor(3, thread_name_prefix="task-thread") as ex:
        list(ex.map(timed, range(1, 3001)))
    held: list[tuple] = []
    _yappi.enum_func_stats(held.append, {})
    profiler.stop()
    assert got == {seq: seq % 7 + 1 for seq in range(1, 3001)}
    # Yappi holds the entries of at most 3 tags (one per thread) and tag 0, not of 3,000
    assert profiler.slots <= 3 and {e[12] for e in held} <= {0, 1, 2, 3}


def test_the_sampler_forgets_written_executions():
    from collectors.profiling import StackSampler

    tags = TaskTags()
    sampler = StackSampler(tags)
    release = threading.Event()
    th = threading.Thread(target=release.wait, args=(10,))
    th.start()
    for seq in (1, 2):
        tags.current[th.ident] = seq
        sampler.sample_once()
    release.set()
    th.join()
    assert {r[3] for r in sampler.rows()} == {1, 2}
    assert {r[3] for r in sampler.rows({2})} == {2}
    sampler.forget({1})
    assert {r[3] for r in sampler.rows()} == {2}


def test_a_sample_after_an_execution_began_stands_only_for_the_time_since():
    """The sampler woke late (0.05 s since its previous sample): the execution that began
    1 ms ago gets about 1 ms, the one that ran throughout the 0.05 s; none more than its own
    time (a function's time above its execution's wall was a late sample's whole gap)."""
    import time

    from collectors.profiling import StackSampler

    tags = TaskTags()
    sampler = StackSampler(tags)
    release = threading.Event()
    threads = [threading.Thread(target=release.wait, args=(10,)) for _ in range(2)]
    for th in threads:
        th.start()
    now = time.perf_counter()
    sampler._last = now - 0.05
    (old, new) = (th.ident for th in threads)
    tags.began[old], tags.began[new] = now - 1.0, now - 0.001
    tags.current[old], tags.current[new] = 1, 2
    sampler.sample_once()
    release.set()
    for th in threads:
        th.join()
    took = {seq: max(r[9] for r in sampler.rows({seq})) for seq in (1, 2)}
    assert 0.05 <= took[1] < 0.06
    assert 0.001 <= took[2] < 0.01


def test_ended_executions_leave_no_note_of_early_counts(profiler):
    """Calls shorter than Yappi's wall-clock tick look like calls still running (one call, no
    time); the notes kept to correct such counts go with the executions as they end."""
    tags = profiler.tags

    def task() -> None:
        for seq in range(1, 201):
            tags.local.seq = profiler.acquire(seq)
            short_call()
        tags.local.seq = 0

    profiler.start()
    th = threading.Thread(target=task)
    th.start()
    th.join()
    rows = profiler.rows(set(range(1, 201)))
    profiler.stop()
    assert {r[3] for r in rows if r[5] == "short_call"} == set(range(1, 201))
    assert any(ident[1] <= 100 for ident in profiler._counted_early)  # the case arises
    for seq in range(1, 101):
        profiler.finish(seq)
    assert profiler._counted_early and all(
        ident[1] > 100 for ident in profiler._counted_early)


def test_the_worker_runs_nothing_but_the_task_while_yappi_is_on(profiler):
    """Yappi builds an entry per function, C functions included, per execution: anything
    ``_timed`` calls while the hook is on (a clock, a guard) costs every task a few more.
    Yappi's memory per task under ``_timed`` is that of the bare resume, task, pause."""
    from collectors.worker_plugin import CorrelateWorkerPlugin

    plugin = CorrelateWorkerPlugin.__new__(CorrelateWorkerPlugin)
    plugin.tags, plugin.profiles_final, plugin.timed_seqs, plugin.executions = (
        profiler.tags, [], set(), [])
    plugin._add_execution = plugin.executions.extend
    profiler.start(("task-thread",))
    resume, pause = plugin.task_hooks = profiler.task_hooks()

    def bare(seq: int) -> None:
        profiler.tags.local.seq = seq
        resume()
        short_call()
        pause()

    def growth(each, first: int) -> float:  # noqa: ANN001
        before = yappi.get_mem_usage()
        for seq in range(first, first + 300):
            each(seq)
        return (yappi.get_mem_usage() - before) / 300

    with ThreadPoolExecutor(1, thread_name_prefix="task-thread") as ex:
        per_task = ex.submit(lambda: (
            growth(bare, 1), growth(lambda s: plugin._timed("k", s, short_call), 1001))).result()
    profiler.stop()
    bare_bytes, timed_bytes = per_task
    assert bare_bytes > 0
    assert timed_bytes <= bare_bytes * 1.05, per_task
