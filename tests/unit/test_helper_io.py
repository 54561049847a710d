"""Helper-thread I/O over literal frames: a library's own threads reading for a task."""

from __future__ import annotations

import polars as pl
import pytest
from test_attribute import MS, PROCS, executions, segments

from correlate.attribution import exact
from correlate.attribution.helpers import helper_io

HELPER, LOOP = 50, 99  # a library's I/O thread; the event loop (PROCS.main_thread_id)


def ex_two_tasks(a=(0, 100), b=(0, 100)):
    """a on thread 11 and b on thread 12 of process (h, 1), with execution_seq 1 and 2."""
    return executions([(0, "a", "h", 1, 11, *a), (1, "b", "h", 1, 12, *b)]).with_columns(
        execution_seq=pl.Series([1, 2], dtype=pl.Int64))


def opens(rows):
    """rows: (thread_id, path, time_ms, execution_seq)."""
    df = pl.DataFrame(rows, schema={"thread_id": pl.UInt64, "path": pl.String, "t": pl.Int64,
                                    "execution_seq": pl.Int64}, orient="row")
    return df.select(host=pl.lit("h"), pid=pl.lit(1, pl.Int64), thread_id="thread_id",
                     execution_seq="execution_seq", path="path",
                     local_time_ns=pl.col("t") * MS)


NO_OPENS = opens([])


def attribute_with_helpers(seg, ex, op=NO_OPENS, procs=PROCS, markers=()):
    att = helper_io(exact.io_to_executions(seg, ex), ex, op, procs, list(markers))
    files = exact.task_files(att).join(ex.select("execution_id", "key"), on="execution_id")
    un = exact.unattributed_io(att, ex, procs, list(markers))
    # nothing lost: attributed + unattributed == total, bytes and ops
    assert files["bytes"].sum() + un["bytes"].sum() == pytest.approx(seg["length"].sum())
    assert files["ops"].sum() + un["ops"].sum() == pytest.approx(seg.height)
    return att, files, un


def by_key(files):
    return {(r["key"], r["path"], r["attribution"]): pytest.approx(r["bytes"])
            for r in files.iter_rows(named=True)}


def test_an_open_in_the_tasks_context_on_the_helper_thread_gives_it_the_read_whole():
    # GIVEN two concurrent tasks; a helper thread opened /d/x for task a (its context)
    ex = ex_two_tasks()
    seg = segments([("h", 1, HELPER, 20, 30, 4096, "read", "/d/x")])
    op = opens([(HELPER, "/d/x", 15, 1)])
    # WHEN attributed
    att, files, un = attribute_with_helpers(seg, ex, op)
    # THEN the read is task a's, whole, by context
    assert by_key(files) == {("a", "/d/x", "helper-context"): 4096}
    assert att.segments["attribution"].to_list() == ["helper-context"]
    assert un.is_empty()


def test_an_open_is_only_evidence_inside_its_executions_window():
    # GIVEN the helper opened /d/x for a (0-40), but reads it again at 60-70 while only b runs
    ex = ex_two_tasks(a=(0, 40), b=(0, 100))
    seg = segments([("h", 1, HELPER, 20, 30, 10, "read", "/d/x"),
                    ("h", 1, HELPER, 60, 70, 20, "read", "/d/x")])
    op = opens([(HELPER, "/d/x", 15, 1)])
    att, files, _un = attribute_with_helpers(seg, ex, op)
    # THEN the first read is a's by context; the later one is b's only by time (split)
    assert by_key(files) == {("a", "/d/x", "helper-context"): 10,
                             ("b", "/d/x", "helper-split"): 20}


def test_pages_read_by_a_pool_go_to_the_task_that_read_the_files_footer():
    # GIVEN pyarrow's pattern: each task reads its file's footer on its own thread, the pool
    # thread reads the pages of both files while both tasks run
    ex = ex_two_tasks()
    seg = segments([("h", 1, 11, 5, 6, 100, "read", "/d/a.parquet"),
                    ("h", 1, 12, 5, 6, 200, "read", "/d/b.parquet"),
                    ("h", 1, HELPER, 10, 20, 5000, "read", "/d/a.parquet"),
                    ("h", 1, HELPER, 20, 30, 7000, "read", "/d/b.parquet"),
                    ("h", 1, HELPER + 1, 30, 40, 9000, "read", "/d/a.parquet")])
    _att, files, un = attribute_with_helpers(seg, ex)
    # THEN every byte of a file goes to the task that touched it, by file affinity
    assert by_key(files) == {("a", "/d/a.parquet", "exact-thread"): 100,
                             ("a", "/d/a.parquet", "helper-file"): 14000,
                             ("b", "/d/b.parquet", "exact-thread"): 200,
                             ("b", "/d/b.parquet", "helper-file"): 7000}
    assert un.is_empty()


def test_a_file_touched_by_two_running_tasks_is_shared_by_overlap_and_wholly_attributed():
    # GIVEN both tasks opened /d/s; the helper's read overlaps a for 10 ms and b for 30 ms
    ex = ex_two_tasks(a=(0, 20), b=(0, 100))
    seg = segments([("h", 1, HELPER, 10, 40, 4000, "read", "/d/s")])
    op = opens([(11, "/d/s", 1, 1), (12, "/d/s", 2, 2)])
    att, files, un = attribute_with_helpers(seg, ex, op)
    # THEN it is shared 1:3, all of it attributed, and the method says it was shared
    assert by_key(files) == {("a", "/d/s", "helper-shared"): 1000,
                             ("b", "/d/s", "helper-shared"): 3000}
    assert att.segments["attributed_weight"].to_list() == [pytest.approx(1.0)]
    assert att.segments["execution_id"].to_list() == [1]
    assert un.is_empty()


def test_a_helper_read_no_file_links_to_a_task_is_split_over_the_running_tasks():
    # GIVEN helper reads of a file nobody touched: one while both tasks run, one half after
    # both ended
    ex = ex_two_tasks(a=(0, 100), b=(0, 60))
    seg = segments([("h", 1, HELPER, 20, 40, 400, "read", "/d/z"),
                    ("h", 1, HELPER, 80, 120, 400, "read", "/d/z")])
    _att, files, un = attribute_with_helpers(seg, ex)
    # THEN each is split over the tasks it overlaps, as window-split does; the part outside
    # every window stays unattributed
    assert by_key(files) == {("a", "/d/z", "helper-split"): 400, ("b", "/d/z", "helper-split"): 200}
    assert un.select("thread_kind", "reason", "bytes").rows() == [
        ("other-thread", "outside any task execution", pytest.approx(200))]


def test_loop_spill_markers_and_reads_outside_every_task_keep_their_reasons():
    ex = ex_two_tasks(a=(0, 100), b=(0, 100))
    seg = segments([("h", 1, LOOP, 10, 20, 1, "write", "/d/z"),
                    ("h", 1, HELPER, 10, 20, 2, "write", "/scratch/w1/storage/x"),
                    ("h", 1, HELPER, 10, 20, 4, "write", "/run/markers/h-1"),
                    ("h", 1, HELPER, 200, 210, 8, "read", "/d/z")])
    _att, files, un = attribute_with_helpers(seg, ex, markers=["/run/markers/h-1"])
    assert files.is_empty()
    got = {(r["thread_kind"], r["reason"]): r["bytes"] for r in un.iter_rows(named=True)}
    assert got == {("event-loop", "outside any task execution"): 1,
                   ("other-thread", "worker local directory (spill)"): 2,
                   ("other-thread", "collector clock marker"): 4,
                   ("other-thread", "outside any task execution"): 8}


def test_without_a_known_event_loop_only_file_evidence_attributes_other_threads():
    # GIVEN imported data: no event-loop thread id, so any other thread may be the loop
    ex = ex_two_tasks()
    procs = PROCS.with_columns(main_thread_id=pl.lit(None, pl.UInt64))
    seg = segments([("h", 1, 11, 5, 6, 100, "read", "/d/a"),
                    ("h", 1, 77, 10, 20, 50, "read", "/d/a"),
                    ("h", 1, 77, 10, 20, 60, "write", "/d/log")])
    _att, files, un = attribute_with_helpers(seg, ex, procs=procs)
    # THEN the read of a's file is a's; the unlinked write is not split over the tasks
    assert by_key(files) == {("a", "/d/a", "exact-thread"): 100, ("a", "/d/a", "helper-file"): 50}
    assert un["bytes"].sum() == 60


def test_exact_thread_results_are_unchanged_by_the_helper_pass():
    ex = ex_two_tasks()
    seg = segments([("h", 1, 11, 10, 20, 100, "read", "/d/a"),
                    ("h", 1, 12, 10, 20, 7, "write", "/d/b"),
                    ("h", 1, 12, 200, 210, 3, "write", "/d/b")])
    before = exact.io_to_executions(seg, ex)
    after = helper_io(before, ex, NO_OPENS, PROCS, [])
    assert after.segments.equals(before.segments)
    assert exact.task_files(after).equals(exact.task_files(before))


def test_an_executions_attribution_is_the_least_exact_method_that_gave_it_io():
    ex = ex_two_tasks()
    seg = segments([("h", 1, 11, 5, 6, 100, "read", "/d/a"),
                    ("h", 1, HELPER, 10, 20, 50, "read", "/d/a"),
                    ("h", 1, 12, 5, 6, 10, "read", "/d/b")])
    _att, files, _un = attribute_with_helpers(seg, ex)
    totals = exact.task_io_totals(files).sort("execution_id")
    assert totals.select("execution_id", "io_method", "read_bytes").rows() == [
        (0, "helper-file", 150.0), (1, "exact-thread", 10.0)]


def test_the_summary_says_with_how_many_concurrent_readers_a_file_was_shared():
    from correlate.summary import _shared_readers

    ex = ex_two_tasks(a=(0, 20), b=(0, 100))
    seg = segments([("h", 1, HELPER, 10, 40, 4000, "read", "/d/s")])
    _att, files, _un = attribute_with_helpers(seg, ex, opens([(11, "/d/s", 1, 1),
                                                              (12, "/d/s", 2, 2)]))
    assert _shared_readers(files) == [
        "helper-thread reads of files several running tasks had opened cannot be told apart "
        "(helper-shared, split by overlap): /d/s: 4,000 B shared with 2 concurrent readers of "
        "the file"]
    # one reader: a plain helper-file, no note
    _att, files, _un = attribute_with_helpers(seg, ex, opens([(12, "/d/s", 2, 2)]))
    assert set(files["attribution"].cast(pl.String)) == {"helper-file"}
    assert _shared_readers(files) == []


def test_an_executions_io_without_a_method_has_no_method_not_the_most_exact():
    # GIVEN task_files rows of one execution whose method is unknown (null), and of another
    # whose only method is exact-thread
    files = pl.DataFrame({"execution_id": [0, 1], "op": ["read", "write"], "bytes": [5.0, 7.0],
                          "ops": [1.0, 1.0], "io_time_s": [0.1, 0.2],
                          "attribution": pl.Series([None, "exact-thread"], dtype=pl.String)})
    # THEN the first says none rather than the most exact label
    totals = exact.task_io_totals(files).sort("execution_id")
    assert totals.select("execution_id", "io_method", "read_bytes", "write_bytes").rows() == [
        (0, None, 5.0, 0.0), (1, "exact-thread", 0.0, 7.0)]


def test_an_executions_total_with_an_unmeasured_part_is_unknown_not_smaller():
    # GIVEN execution 0 with one read whose time was not measured (null), execution 1 with all
    # measured, and execution 2 whose unmeasured part is a write (its read total stays known)
    files = pl.DataFrame({"execution_id": [0, 0, 1, 2, 2], "op": ["read"] * 4 + ["write"],
                          "bytes": [5.0, 3.0, 7.0, 2.0, None], "ops": [1.0] * 5,
                          "io_time_s": [0.1, None, 0.2, 0.3, 0.4],
                          "attribution": ["exact-thread"] * 5})
    totals = exact.task_io_totals(files).sort("execution_id")
    assert totals.select("execution_id", "read_bytes", "write_bytes", "io_time_s").rows() == [
        (0, 8.0, 0.0, None), (1, 7.0, 0.0, 0.2), (2, 2.0, None, 0.7)]
