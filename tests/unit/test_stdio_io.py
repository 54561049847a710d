"""C stdio I/O (Darshan's STDIO counters, untraced by DXT) over literal frames: given to the
executions that opened the file for it, nothing lost."""

from __future__ import annotations

import os

import polars as pl
import pytest

from collectors.file_opens import _access
from correlate.attribution.stdio import INCONSISTENT, OTHER_MODE, attribute_stdio, stdio_totals
from correlate.schema import conform
from correlate.schema.canonical import FILE_OPENS
from correlate.schema.darshan import IO_FILE_COUNTERS

PROCS = pl.DataFrame({"host": ["h", "h"], "pid": [1, 2], "role": ["worker", "scheduler"],
                      "main_thread_id": pl.Series([99, 98], dtype=pl.UInt64),
                      "local_directory": ["/scratch/w1", None]})
MS = 1_000_000
#: make runs 0-10 ms, load 20-30 ms, look 40-50 ms (process clock)
EX = pl.DataFrame({"execution_id": [0, 1, 2], "key": ["make", "load", "look"],
                   "host": ["h"] * 3, "pid": [1] * 3, "execution_seq": [1, 2, 3],
                   "local_start_ns": [0, 20 * MS, 40 * MS],
                   "local_stop_ns": [10 * MS, 30 * MS, 50 * MS]})
#: the process's Darshan clock runs 2 ms behind its own, measured to ±10 µs
CLOCKS = pl.DataFrame({"host": ["h"], "pid": [1], "domain": ["darshan"],
                       "offset_ns": [2 * MS], "uncertainty_ns": [10_000]})


def counters(rows, host="h", reads=(None, None), writes=(None, None)):
    """rows: (pid, module, path, read_bytes, write_bytes); ``reads``/``writes``: the first and
    last such call of every row, ms on the Darshan clock."""
    df = pl.DataFrame(rows, schema={"pid": pl.Int64, "module": pl.String, "path": pl.String,
                                    "read_bytes": pl.Int64, "write_bytes": pl.Int64},
                      orient="row")
    stamps = {f"{w}_{op}_ns": pl.lit(None if t is None else t * MS, pl.Int64)
              for op, pair in (("read", reads), ("write", writes))
              for w, t in zip(("first", "last"), pair, strict=True)}
    df = df.with_columns(**stamps)
    return conform(df.with_columns(
        host=pl.lit(host, pl.String), read_ops=(pl.col("read_bytes") > 0).cast(pl.Int64),
        write_ops=(pl.col("write_bytes") > 0).cast(pl.Int64),
        read_time_s=pl.col("read_bytes") * 1e-9, write_time_s=pl.col("write_bytes") * 1e-9,
        log=pl.lit("x.darshan")), IO_FILE_COUNTERS)


def opens(rows):
    """rows: (execution_seq, path, access)."""
    df = pl.DataFrame(rows, schema={"execution_seq": pl.Int64, "path": pl.String,
                                    "access": pl.String}, orient="row")
    return conform(df.with_columns(host=pl.lit("h"), pid=pl.lit(1, pl.Int64),
                                   thread_id=pl.lit(11, pl.UInt64),
                                   local_time_ns=pl.int_range(pl.len(), dtype=pl.Int64)),
                   FILE_OPENS)


def attributed(cnt, op):
    files, un = attribute_stdio(cnt, op, EX, PROCS, CLOCKS)
    # nothing lost: every STDIO byte and op is given to an execution or unattributed
    total = stdio_totals(cnt)
    assert files["bytes"].sum() + un["bytes"].sum() == pytest.approx(total["bytes"])
    assert files["ops"].sum() + un["ops"].sum() == pytest.approx(total["ops"])
    got = {(EX["key"][r["execution_id"]], r["path"], r["op"], r["attribution"]):
           pytest.approx(r["bytes"]) for r in files.iter_rows(named=True)}
    return got, un


def test_writes_go_to_the_writer_and_reads_are_shared_by_the_readers():
    # GIVEN make wrote /d/a.npy through fwrite; load opened it twice to read, look once
    cnt = counters([(1, "STDIO", "/d/a.npy", 900, 800), (1, "POSIX", "/d/a.npy", 50, 128)])
    op = opens([(1, "/d/a.npy", "write"), (2, "/d/a.npy", "read"), (2, "/d/a.npy", "read"),
                (3, "/d/a.npy", "read")])
    got, un = attributed(cnt, op)
    # THEN the write is make's whole; the reads are split 2:1 by opens; POSIX is not stdio
    assert got == {("make", "/d/a.npy", "write", "stdio-file"): 800,
                   ("load", "/d/a.npy", "read", "stdio-split"): 600,
                   ("look", "/d/a.npy", "read", "stdio-split"): 300}
    assert un.is_empty()


def test_among_several_readers_the_one_whose_window_holds_the_calls_gets_them_whole():
    # GIVEN load and look both opened /d/a.npy to read, but every stdio read of it (Darshan's
    # first and last, 2 ms behind the process clock) lies inside load's window
    op = opens([(2, "/d/a.npy", "read"), (3, "/d/a.npy", "read")])
    got, _un = attributed(counters([(1, "STDIO", "/d/a.npy", 900, 0)], reads=(19, 27)), op)
    assert got == {("load", "/d/a.npy", "read", "stdio-file"): 900}
    # WHEN the reads span both windows, they stay shared by the opens
    got, _un = attributed(counters([(1, "STDIO", "/d/a.npy", 900, 0)], reads=(19, 46)), op)
    assert got == {("load", "/d/a.npy", "read", "stdio-split"): 450,
                   ("look", "/d/a.npy", "read", "stdio-split"): 450}
    # a read just past load's end, by more than the clock's uncertainty, fits no opener's
    # window: inconsistent, shared by time among the openers running then (look, which ran
    # 10 ms later, gets none of it), the 0.1 ms no window holds unattributed with why
    got, un = attributed(counters([(1, "STDIO", "/d/a.npy", 900, 0)], reads=(19, 28.1)), op)
    assert got == {("load", "/d/a.npy", "read", "inconsistent-split"): 900 * 9 / 9.1}
    assert un["reason"].to_list() == [f"C stdio (not traced by DXT): {INCONSISTENT}"]


def test_a_window_holding_the_calls_as_measured_wins_over_one_within_the_clocks_slack():
    # GIVEN no measured Darshan clock (a few ms of slack), load reading at 28-29.5 ms and look
    # starting right after it, at 30.5 ms: both windows hold the reads within the slack
    ex = EX.with_columns(local_start_ns=pl.Series([0, 20 * MS, int(30.5 * MS)]),
                         local_stop_ns=pl.Series([10 * MS, 30 * MS, 31 * MS]))
    op = opens([(2, "/d/a.npy", "read"), (3, "/d/a.npy", "read")])
    cnt = counters([(1, "STDIO", "/d/a.npy", 900, 0)], reads=(28, 29.5))
    files, _un = attribute_stdio(cnt, op, ex, PROCS, CLOCKS.clear())
    # THEN the one that holds them as measured gets them whole
    assert files.select("execution_id", "bytes", "attribution").rows() == [(1, 900.0,
                                                                             "stdio-file")]


def test_a_coroutines_window_is_its_active_slices():
    # GIVEN look is a coroutine active only at 40-42 and 48-50 ms, load a thread task at 20-30:
    # the reads at 44-45 ms (Darshan clock 42-43) lie in look's whole window but in none
    # of its slices, nor in load's
    op = opens([(2, "/d/a.npy", "read"), (3, "/d/a.npy", "read")])
    cnt = counters([(1, "STDIO", "/d/a.npy", 900, 0)], reads=(42, 43))
    look_slices = EX.filter(pl.col("key") == "look").drop("local_start_ns", "local_stop_ns").join(
        pl.DataFrame({"execution_id": [2, 2], "local_start_ns": [40 * MS, 48 * MS],
                      "local_stop_ns": [42 * MS, 50 * MS]}), on="execution_id")
    slices = pl.concat([EX.filter(pl.col("key") != "look"), look_slices.select(EX.columns)])
    files, _un = attribute_stdio(cnt, op, EX, PROCS, CLOCKS, slices)
    # THEN by whole windows look would hold them; by its slices nobody does: inconsistent, and
    # no candidate ran then, so nobody gets them (unattributed, with why)
    assert files.is_empty()
    assert _un["bytes"].to_list() == [900.0]
    assert _un["reason"].to_list() == [f"C stdio (not traced by DXT): {INCONSISTENT}"]
    files, _un = attribute_stdio(cnt, op, EX, PROCS, CLOCKS)
    assert files.select("execution_id", "attribution").rows() == [(2, "stdio-file")]


def test_an_open_for_reading_and_writing_or_of_unknown_mode_allows_both():
    cnt = counters([(1, "STDIO", "/d/b", 10, 20), (1, "STDIO", "/d/c", 30, 0)])
    op = opens([(2, "/d/b", "read-write"), (3, "/d/c", None)])
    got, _un = attributed(cnt, op)
    assert got == {("load", "/d/b", "read", "stdio-file"): 10,
                   ("load", "/d/b", "write", "stdio-file"): 20,
                   ("look", "/d/c", "read", "stdio-file"): 30}


def test_what_no_task_opened_for_it_stays_unattributed_with_its_reason():
    cnt = counters([(1, "STDIO", "/d/a", 0, 64),            # opened only for reading
                    (1, "STDIO", "/d/never", 5, 0),         # opened by no task
                    (1, "STDIO", "/scratch/w1/storage/k", 7, 0),
                    (2, "STDIO", "/d/sched", 9, 0)])        # the scheduler's own
    op = opens([(2, "/d/a", "read")])
    got, un = attributed(cnt, op)
    assert got == {}
    reasons = {(r["path"], r["op"]): r["reason"] for r in un.iter_rows(named=True)}
    assert reasons == {
        ("/d/a", "write"): f"C stdio (not traced by DXT): {OTHER_MODE}",
        ("/d/never", "read"):
            "C stdio (not traced by DXT): no task opened the file for it in Python",
        ("/scratch/w1/storage/k", "read"): "worker local directory (spill)",
        ("/d/sched", "read"): "scheduler process"}
    assert set(un["thread_kind"]) == {"no-thread-id"}
    # a run with no record of opens at all (imported, or older collectors) says so instead
    _got, un = attributed(counters([(1, "STDIO", "/d/a", 3, 0)]), opens([]))
    assert un["reason"].to_list() == [
        "C stdio (not traced by DXT): the run has no record of the files tasks opened"]


def test_a_log_without_dxt_gets_its_host_from_the_process_of_that_pid():
    # GIVEN a log with no DXT record (host unknown in the counters)
    cnt = counters([(1, "STDIO", "/d/a", 0, 40)], host=None)
    got, un = attributed(cnt, opens([(1, "/d/a", "write")]))
    assert got == {("make", "/d/a", "write", "stdio-file"): 40} and un.is_empty()


def test_the_open_audit_event_says_what_it_allows():
    assert _access("rb", 0) == "read" and _access("r", 0) == "read"
    assert _access("wb", 0) == "write" and _access("a", 0) == "write"
    assert _access("x", 0) == "write" and _access("r+b", 0) == "read-write"
    # os.open's event has no mode: its flags say it
    assert _access(None, os.O_RDONLY) == "read"
    assert _access(None, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) == "write"
    assert _access(None, os.O_RDWR) == "read-write"
    assert _access(None, None) is None


#: the tasks of a job whose streams the runtime misfiled (process clock, ms): saveA writes A
#: at 5, saveB writes B at 25, saveC writes C at 35; loadA reads A at 45, loadC reads C at 65,
#: loadB reads B at 75; lookA opens A to read its first bytes in Python (POSIX, 4,096 B)
MISFILED = pl.DataFrame({
    "execution_id": list(range(7)),
    "key": ["saveA", "saveB", "saveC", "loadA", "loadC", "loadB", "lookA"],
    "host": ["h"] * 7, "pid": [1] * 7, "execution_seq": list(range(1, 8)),
    "local_start_ns": [t * MS for t in (0, 20, 30, 40, 60, 72, 80)],
    "local_stop_ns": [t * MS for t in (10, 30, 38, 50, 70, 78, 90)]})
MISFILED_OPENS = [(1, "/d/A", "write"), (2, "/d/B", "write"), (3, "/d/C", "write"),
                  (4, "/d/A", "read"), (5, "/d/C", "read"), (6, "/d/B", "read"),
                  (7, "/d/A", "read")]


def _record(path, op, nbytes, first_ms, last_ms, module="STDIO"):
    """One record of process 1 with ``nbytes`` of ``op``, its first and last call at these
    process-clock times (Darshan's clock is 2 ms behind)."""
    reads, writes = (None, None), (None, None)
    span = (first_ms - 2, last_ms - 2)
    if op == "read":
        reads = span
    else:
        writes = span
    return counters([(1, module, path, nbytes if op == "read" else 0,
                      nbytes if op == "write" else 0)], reads=reads, writes=writes)


def _misfiled(records):
    cnt = pl.concat(records)
    files, un = attribute_stdio(cnt, opens(MISFILED_OPENS), MISFILED, PROCS, CLOCKS)
    total = stdio_totals(cnt)
    assert files["bytes"].sum() + un["bytes"].sum() == pytest.approx(total["bytes"])
    got = {(MISFILED["key"][r["execution_id"]], r["path"], r["op"], r["attribution"]):
           pytest.approx(r["bytes"]) for r in files.iter_rows(named=True)}
    return got, un


def test_a_file_whose_records_both_hold_a_misfiled_stream_gets_what_both_leave_it():
    # GIVEN the runtime filed saveB's write (3,000 B) under A's write record and loadC's read
    # (2,000 B) under A's read record: A's records are its own 5,000 B plus another file's,
    # and no consistent record tells A's size (lookA's POSIX read is only its first 4,096 B);
    # B's and C's sizes are known from their consistent records
    got, un = _misfiled([
        _record("/d/A", "write", 8000, 5, 25), _record("/d/A", "read", 7000, 45, 65),
        _record("/d/C", "write", 2000, 35, 35), _record("/d/B", "read", 3000, 75, 75),
        _record("/d/A", "read", 4096, 85, 85, module="POSIX")])
    # THEN A's write record less saveB's 3,000 B and A's read record less loadC's 2,000 B
    # leave A the same 5,000 B: two records agree, and every task gets what it moved, on
    # the file it opened (saveB's and loadC's bytes are B's and C's, whatever Darshan's name)
    assert got == {("saveA", "/d/A", "write", "stdio-reassigned"): 5000,
                   ("saveB", "/d/B", "write", "stdio-refiled"): 3000,
                   ("loadA", "/d/A", "read", "stdio-reassigned"): 5000,
                   ("loadC", "/d/C", "read", "stdio-refiled"): 2000,
                   ("saveC", "/d/C", "write", "stdio-file"): 2000,
                   ("loadB", "/d/B", "read", "stdio-file"): 3000}
    assert un.is_empty()


def test_records_whose_sizes_nothing_tells_stay_shared_by_time_and_say_so():
    # GIVEN both streams of A and of B filed under A, in both operations: 8,000 B written and
    # read, and no record of B at all; nothing tells how the 8,000 B divide between A and B
    got, un = _misfiled([
        _record("/d/A", "write", 8000, 5, 25), _record("/d/A", "read", 8000, 45, 75),
        _record("/d/C", "write", 2000, 35, 35), _record("/d/C", "read", 2000, 65, 65),
        _record("/d/A", "read", 4096, 85, 85, module="POSIX")])
    # THEN no task is given A's records as if it were known whose they are: they are shared
    # by time among the tasks running during their calls, the rest unattributed, with why
    assert {k[3] for k in got if k[0] in ("saveA", "saveB", "loadA", "loadB")} == {
        "inconsistent-split"}
    assert set(un["reason"]) == {f"C stdio (not traced by DXT): {INCONSISTENT}"}
    assert un["bytes"].sum() > 0
