"""Rules of the findings over literal tables, where a real job cannot plant the problem on the
test hosts (a shared file's slower calls: their file systems write one file from four threads
as fast as four files; the real job, writers taking turns with a lock, is in
tests/engine/test_findings.py) or plants it only with a worker's death (recomputed work). The real-cluster
checks of every rule are in tests/engine/test_findings.py and test_memory_pause.py."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.findings import Evidence, analyse
from correlate.schema import TABLES, conform

MS = 1_000_000
MIB = 1 << 20


def _tasks(rows: list[tuple]) -> pl.DataFrame:
    """(key, thread, start ms, stop ms, status): ready on their worker 1 s before their start
    (waited for their thread), no CPU or I/O of their own unless task_files give it."""
    df = pl.DataFrame(rows, orient="row", schema=["key", "thread_id", "start", "stop", "status"])
    return conform(df.with_row_index("execution_id").with_columns(
        prefix=pl.col("key").str.split("-").list.first(), host=pl.lit("h"), pid=pl.lit(1),
        worker=pl.lit("w"), start_ns=pl.col("start") * MS, stop_ns=pl.col("stop") * MS,
        duration_s=(pl.col("stop") - pl.col("start")) / 1e3, cpu_s=pl.lit(0.0),
        io_time_s=pl.lit(0.0), wait_thread_s=pl.lit(1.0)), TABLES["tasks"])


def _files(tasks: pl.DataFrame, rows: list[tuple[str, str, int, float]]) -> pl.DataFrame:
    """(key, path, MiB written, seconds inside the writes)."""
    df = pl.DataFrame(rows, orient="row", schema={"key": pl.String, "path": pl.String,
                                                  "mib": pl.Int64, "io_time_s": pl.Float64})
    return conform(df.join(tasks.select("key", "execution_id"), on="key").with_columns(
        op=pl.lit("write"), bytes=pl.col("mib") * MIB, ops=pl.col("mib"),
        attribution=pl.lit("exact-thread")), TABLES["task_files"])


def _with_segments(kind: str, tasks: pl.DataFrame, files: pl.DataFrame,
                   segments: pl.DataFrame) -> list[dict]:
    """The findings of ``kind`` with DXT's ``segments``, every task submitted at 0."""
    times = tasks.select("key", submitted_ns=pl.lit(0, pl.Int64), assigned_ns=pl.lit(0, pl.Int64))
    deps = pl.DataFrame(schema={"key": pl.String, "depends_on": pl.String})
    return [f for f in analyse(tasks, files, deps, times, Evidence(
        io_captured=True, dxt=True, segments=segments.lazy())).summary["findings"]
        if f["kind"] == kind]


def _analyse(tasks: pl.DataFrame, files: pl.DataFrame) -> list[dict]:
    times = tasks.select("key", submitted_ns=pl.lit(0, pl.Int64), assigned_ns=pl.lit(0, pl.Int64))
    deps = pl.DataFrame(schema={"key": pl.String, "depends_on": pl.String})
    return analyse(tasks, files, deps, times, Evidence(io_captured=True, dxt=True)
                   ).summary["findings"]


def test_four_writers_of_one_file_slower_than_lone_writers_are_shared_file():
    # GIVEN four executions writing one file at once, 100 MiB each in 0.8 s, and two that
    # later each wrote a file of their own, 100 MiB in 0.2 s
    tasks = _tasks([*((f"part-{i}", i, 0, 1000, "ok") for i in range(4)),
                    ("own-0", 0, 1000, 1400, "ok"), ("own-1", 1, 1000, 1400, "ok")])
    files = _files(tasks, [*((f"part-{i}", "/s", 100, 0.8) for i in range(4)),
                           ("own-0", "/o0", 100, 0.2), ("own-1", "/o1", 100, 0.2)])
    # WHEN the rules run
    found = [f for f in _analyse(tasks, files) if f["kind"] == "shared-file"]
    # THEN the shared file is found with its four writers; each lost 0.6 s against the lone
    # writers' throughput, and the path (part-0, then own-0 on its thread) holds one of them
    assert len(found) == 1 and found[0]["files"] == ["/s"]
    assert sorted(found[0]["keys"]) == [f"part-{i}" for i in range(4)]
    assert "up to 4 at once" in found[0]["evidence"]
    assert found[0]["cost_s"] == pytest.approx(0.6)


def test_writers_taking_turns_with_a_lock_on_one_file_are_shared_file():
    # GIVEN four executions that started together, each writing 100 MiB of one file in 0.25 s
    # after the previous one's last write (a lock on the whole file), DXT's segments saying so
    tasks = _tasks([(f"part-{i}", i, 0, 250 * (i + 1), "ok") for i in range(4)])
    files = _files(tasks, [(f"part-{i}", "/s", 100, 0.25) for i in range(4)])
    segments = tasks.select("execution_id", path=pl.lit("/s"), op=pl.lit("write"),
                            offset=pl.col("execution_id") * 100 * MIB,
                            length=pl.lit(100 * MIB), stop_ns="stop_ns",
                            start_ns=pl.col("stop_ns") - 250 * MS)
    # WHEN the rules run
    found = _with_segments("shared-file", tasks, files, segments)
    # THEN the waits for the file before the first writes, 0.25 + 0.5 + 0.75 s, are found;
    # without them the four write at once and the window ends at 0.25 s, 0.75 s sooner
    assert len(found) == 1 and found[0]["files"] == ["/s"]
    assert "1.500 s waiting for it before their first call" in found[0]["evidence"]
    assert found[0]["partial"] and "no file a single execution used" in found[0]["partial"]
    assert found[0]["cost_s"] == pytest.approx(0.75)
    # the same writes with no wait between a start and its first write: no finding
    ahead = segments.with_columns(start_ns=pl.lit(0, pl.Int64), stop_ns=pl.lit(250 * MS))
    assert not _with_segments("shared-file", tasks, files, ahead)


def test_repeated_reads_cost_the_repeats_not_the_first_read():
    # GIVEN a chain of four reads of one 100 MiB file on one thread: the first from the disk
    # in 2 s, the three repeats from the page cache in 0.1 s each, DXT's segments saying so
    tasks = _tasks([("r-0", 0, 0, 2000, "ok"), *((f"r-{i}", 0, 1900 + 100 * i,
                                                  2000 + 100 * i, "ok") for i in (1, 2, 3))])
    files = _files(tasks, [("r-0", "/f", 100, 2.0), *((f"r-{i}", "/f", 100, 0.1)
                                                      for i in (1, 2, 3))])
    files = files.with_columns(op=pl.lit("read").cast(files.schema["op"]))
    segments = tasks.select("execution_id", "start_ns", "stop_ns", seg_id="execution_id",
                            path=pl.lit("/f"), op=pl.lit("read"), offset=pl.lit(0),
                            length=pl.lit(100 * MIB))
    # WHEN the rules run
    found = _with_segments("repeated-reads", tasks, files, segments)
    # THEN the file is read 4 times, and reading it once saves the three repeats' 0.3 s, not
    # three quarters of all four reads' 2.3 s
    assert len(found) == 1 and found[0]["files"] == ["/f"] and "(4.0 times)" in found[0][
        "evidence"]
    assert found[0]["cost_s"] == pytest.approx(0.3)


def test_one_file_written_at_once_as_fast_as_lone_files_is_no_finding():
    tasks = _tasks([*((f"part-{i}", i, 0, 1000, "ok") for i in range(4)),
                    ("own-0", 0, 1000, 1400, "ok"), ("own-1", 1, 1000, 1400, "ok")])
    files = _files(tasks, [*((f"part-{i}", "/s", 100, 0.2) for i in range(4)),
                           ("own-0", "/o0", 100, 0.2), ("own-1", "/o1", 100, 0.2)])
    assert not [f for f in _analyse(tasks, files) if f["kind"] == "shared-file"]


def test_work_recomputed_after_a_worker_died_is_memory_pressure():
    # GIVEN a result lost with its worker (ran 0-500 ms) and its task run again at 600 ms,
    # the last execution of the job, beside a short one
    tasks = _tasks([("a-0", 0, 0, 500, "lost"), ("b-0", 1, 0, 100, "ok"),
                    ("a-0", 1, 600, 1100, "ok")])
    files = _files(tasks, [])
    found = [f for f in _analyse(tasks, files) if f["kind"] == "memory-pressure"]
    # THEN the recomputation is the finding; removing it ends the job at the busy time shared
    # by the two threads, (0.5 + 0.1) / 2 s, as the path's bound (1.1 - 0.5 s) allows
    assert len(found) == 1 and found[0]["keys"] == ["a-0"] and found[0]["prefixes"] == ["a"]
    assert "1 execution(s) recomputed results that died with a worker" in found[0]["evidence"]
    assert found[0]["cost_s"] == pytest.approx(1.1 - 0.6)


@pytest.mark.parametrize(("run_ms", "gap_ms", "tiny"), [(0.1, 1.9, True), (20.0, 15.0, False)])
def test_only_executions_shorter_than_dask_s_own_cost_scale_are_tiny_tasks(run_ms, gap_ms, tiny):
    # GIVEN 60 executions of one prefix back to back on one thread, each waiting ``gap_ms``
    # after the previous one's end: 0.1 ms tasks with 1.9 ms between them (the per-task
    # overhead dominates), or 20 ms tasks with 15 ms between them (a wait that long is not
    # Dask's per-task cost: batching would not remove it)
    step = run_ms + gap_ms
    tasks = _tasks([(f"tick-{i}", 0, i * step, i * step + run_ms, "ok") for i in range(60)])
    found = [f for f in _analyse(tasks, _files(tasks, [])) if f["kind"] == "tiny-tasks"]
    if tiny:
        assert len(found) == 1 and found[0]["prefixes"] == ["tick"]
        assert "60 tick executions of 0.10 ms median" in found[0]["evidence"]
    else:
        assert found == []


@pytest.mark.parametrize(("unspilled", "found_as"), [(None, "partial"), (0.0, None),
                                                       (64.0 * MIB, "whole")])
def test_a_path_wait_in_dask_s_disk_read_is_spill_only_where_spill_was_read(unspilled, found_as):
    # GIVEN a chain of two executions on one thread, the second waiting 0.4 s in Dask's
    # disk-read (inputs out of the worker's store) before it ran; the run's spill read back is
    # unknown (no Darshan), none (every file counted), or 64 MiB
    tasks = _tasks([("a-0", 0, 0, 100, "ok"), ("b-0", 0, 600, 700, "ok")]).with_columns(
        input_read_back_s=pl.Series([None, 0.4]),
        unspilled_bytes=pl.lit(unspilled, pl.Float64))
    found = [f for f in _analyse(tasks, _files(tasks, [])) if f["kind"] == "spill"]
    if found_as is None:  # the store was slow, not the disk: no spill finding
        assert found == []
        return
    assert len(found) == 1 and found[0]["keys"] == ["b-0"]
    assert (found[0]["partial"] is None) == (found_as == "whole")
    assert found[0]["cost_s"] == pytest.approx(0.4)


@pytest.mark.parametrize(("cpu_s", "found"), [(0.35, True), (0.004, False)])
def test_a_task_starved_of_the_gil_below_any_share_is_cpu_outside_tasks(cpu_s, found):
    # GIVEN a worker process that spent 20 s of CPU during its one task's 19.4 s window, the
    # task itself computing 0.35 s of it (1.8% of its wall: the GIL held by threads outside
    # any task), or 4 ms (a sleep's share, 0.02%)
    from correlate.findings.overhead import OUTSIDE_MIN_CPU

    tasks = _tasks([("crunch-0", 0, 0, 19_400, "ok")]).with_columns(
        cpu_s=pl.lit(cpu_s), local_start_ns=pl.col("start_ns"), local_stop_ns=pl.col("stop_ns"))
    assert cpu_s / 19.4 < OUTSIDE_MIN_CPU  # below the share either way
    samples = pl.DataFrame({"host": ["h", "h"], "pid": [1, 1], "local_time_ns": [0, 19_400 * MS],
                            "process_cpu_s": [0.0, 20.0]})
    times = tasks.select("key", submitted_ns=pl.lit(0, pl.Int64), assigned_ns=pl.lit(0, pl.Int64))
    deps = pl.DataFrame(schema={"key": pl.String, "depends_on": pl.String})
    findings = analyse(tasks, _files(tasks, []), deps, times,
                       Evidence(io_captured=True, dxt=True, process_cpu=samples)
                       ).summary["findings"]
    hit = [f for f in findings if f["kind"] == "cpu-outside-tasks"]
    # THEN the computing task is found (it lost what the outside CPU took of its window), the
    # sleeping one is not
    assert bool(hit) == found
    if found:
        assert hit[0]["keys"] == ["crunch-0"] and hit[0]["cost_s"] > 15


def test_work_pinned_to_one_thread_is_idle_threads_unless_it_ran_on_an_event_loop():
    # GIVEN four executions in turn on one thread, each ready 1 s before it started, while the
    # worker's other thread ran one execution (not waiting) and then nothing
    tasks = _tasks([*((f"pinned-{i}", 1, 1000 * i, 1000 * (i + 1), "ok") for i in range(4)),
                    ("other-0", 2, 0, 1000, "ok")]).with_columns(
        wait_thread_s=pl.when(pl.col("prefix") == "pinned").then(pl.col("wait_thread_s"))
        .otherwise(0.0))
    files = _files(tasks, [])
    # WHEN / THEN the waits an idle thread could have taken are a finding
    found = [f for f in _analyse(tasks, files) if f["kind"] == "idle-threads"]
    assert len(found) == 1 and found[0]["prefixes"] == ["pinned"]
    # and none when those executions were coroutines (awaiting_s: Dask ran them on the
    # worker's event loop, where no executor thread could have taken them)
    looped = tasks.with_columns(awaiting_s=pl.when(pl.col("prefix") == "pinned")
                                .then(pl.lit(0.5)))
    assert [f for f in _analyse(looped, files) if f["kind"] == "idle-threads"] == []


def test_a_straggler_is_named_alone_among_its_prefixs_executions():
    # GIVEN eight executions of 100 ms and one of 1 s, each on a thread of its own, and two
    # executions of another prefix, too few to have a spread
    tasks = _tasks([*((f"part-{i}", i, 0, 100 + i, "ok") for i in range(8)),
                    ("part-8", 8, 0, 1000, "ok"), ("other-0", 9, 0, 900, "ok"),
                    ("other-1", 10, 0, 100, "ok")])
    found = [f for f in _analyse(tasks, _files(tasks, [])) if f["kind"] == "straggler"]
    # THEN only the slow one is a straggler, costing at most its time beyond the median
    assert [(f["prefixes"], f["keys"]) for f in found] == [(["part"], ["part-8"])]
    assert 0 < found[0]["cost_s"] <= 1.0 - 0.1035
