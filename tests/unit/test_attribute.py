"""Attribution over literal frames: exact-thread, window-split, conservation."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.attribution import exact
from correlate.functions import functions_per_execution

MS = 1_000_000


def segments(rows):
    """rows: (host, pid, thread_id, start_ms, stop_ms, length, op, path)."""
    df = pl.DataFrame(rows, schema={"host": pl.String, "pid": pl.Int64, "thread_id": pl.UInt64,
                                    "s": pl.Int64, "e": pl.Int64, "length": pl.Int64,
                                    "op": pl.String, "path": pl.String}, orient="row")
    return df.with_row_index("seg_id").select(
        "seg_id", "host", "pid", "thread_id", "length", "op", "path",
        host_start_ns=pl.col("s") * MS, host_stop_ns=pl.col("e") * MS)


def executions(rows):
    """rows: (execution_id, key, host, pid, thread_id, start_ms, stop_ms)."""
    df = pl.DataFrame(rows, schema={"execution_id": pl.Int64, "key": pl.String,
                                    "host": pl.String, "pid": pl.Int64,
                                    "thread_id": pl.UInt64, "s": pl.Int64, "e": pl.Int64},
                      orient="row")
    return df.select("execution_id", "key", "host", "pid", "thread_id",
                     local_start_ns=pl.col("s") * MS, local_stop_ns=pl.col("e") * MS)


PROCS = pl.DataFrame({"host": ["h"], "pid": [1], "role": ["worker"],
                      "main_thread_id": pl.Series([99], dtype=pl.UInt64),
                      "local_directory": ["/scratch/w1"]})


def conservation(att, ex):
    files = exact.task_files(att).join(ex.select("execution_id", "key"), on="execution_id")
    un = exact.unattributed_io(att, ex, PROCS, [])
    total = att.segments["length"].sum()
    assert files["bytes"].sum() + un["bytes"].sum() == pytest.approx(total)
    assert files["ops"].sum() + un["ops"].sum() == pytest.approx(att.segments.height)
    return files, un


def test_exact_thread_separates_concurrent_tasks_on_one_process():
    # GIVEN two tasks running at the same time on two threads of one process
    ex = executions([(0, "a", "h", 1, 11, 0, 100), (1, "b", "h", 1, 12, 0, 100)])
    seg = segments([("h", 1, 11, 10, 20, 100, "read", "/d/a"),
                    ("h", 1, 12, 10, 20, 7, "write", "/d/b"),
                    ("h", 1, 12, 30, 31, 3, "write", "/d/b")])
    # WHEN attributed
    att = exact.io_to_executions(seg, ex)
    files, un = conservation(att, ex)
    # THEN each segment goes to its own thread's task, whole
    got = {(r["key"], r["path"], r["op"]): r["bytes"] for r in files.iter_rows(named=True)}
    assert got == {("a", "/d/a", "read"): 100.0, ("b", "/d/b", "write"): 10.0}
    assert set(att.shares["attribution"]) == {"exact-thread"}
    assert un.is_empty()


def test_exact_thread_outside_window_is_classified_by_thread_kind():
    ex = executions([(0, "a", "h", 1, 11, 100, 200)])
    seg = segments([("h", 1, 11, 10, 20, 5, "read", "/d/x"),      # executor, before task
                    ("h", 1, 99, 150, 151, 6, "write", "/d/y"),   # event loop during task
                    ("h", 1, 150, 150, 151, 7, "write", "/d/w"),  # a thread that ran no task
                    ("h", 1, 42, 150, 151, 8, "write", "/scratch/w1/storage/k"),  # spill
                    ("h", 2, 7, 150, 151, 9, "read", "/d/z")])    # unknown process
    att = exact.io_to_executions(seg, ex)
    files, un = conservation(att, ex)
    assert files.is_empty()
    kinds = {r["path"]: (r["thread_kind"], r["reason"]) for r in un.iter_rows(named=True)}
    assert kinds["/d/x"] == ("executor-outside-task", "outside any task execution")
    assert kinds["/d/y"] == ("event-loop", "outside any task execution")
    assert kinds["/d/w"] == ("other-thread", "outside any task execution")
    assert kinds["/scratch/w1/storage/k"][1] == "worker local directory (spill)"
    assert kinds["/d/z"][1] == "process is not a known Dask process"


def test_a_segment_goes_to_at_most_one_execution_when_a_task_runs_twice():
    ex = executions([(0, "a", "h", 1, 11, 0, 50), (1, "a", "h", 1, 11, 60, 100)])
    seg = segments([("h", 1, 11, 10, 20, 4, "read", "/f"), ("h", 1, 11, 70, 80, 6, "read", "/f")])
    att = exact.io_to_executions(seg, ex)
    assert att.shares.group_by("seg_id").len()["len"].max() == 1
    files, _ = conservation(att, ex)
    assert dict(files.select("execution_id", "bytes").iter_rows()) == {0: 4.0, 1: 6.0}


def test_window_split_without_thread_ids_splits_by_overlap_and_conserves():
    # GIVEN DXT without thread ids (v1) and two overlapping executions
    ex = executions([(0, "a", "h", 1, 11, 0, 10), (1, "b", "h", 1, 12, 5, 20)])
    seg = segments([("h", 1, None, 0, 10, 100, "read", "/f"),   # a fully, b half → normalised
                    ("h", 1, None, 15, 25, 10, "write", "/g"),  # b half, rest outside
                    ("h", 1, None, 30, 30, 1, "read", "/h")])   # zero-length, outside
    att = exact.io_to_executions(seg, ex)
    files, un = conservation(att, ex)
    assert set(att.shares["attribution"]) == {"window-split"}
    by = {(r["key"], r["path"]): r["bytes"] for r in files.iter_rows(named=True)}
    assert by[("a", "/f")] == pytest.approx(100 * 1.0 / 1.5)
    assert by[("b", "/f")] == pytest.approx(100 * 0.5 / 1.5)
    assert by[("b", "/g")] == pytest.approx(5.0)
    assert un.filter(pl.col("path") == "/g")["bytes"].sum() == pytest.approx(5.0)
    assert un.filter(pl.col("path") == "/h")["thread_kind"].to_list() == ["no-thread-id"]


def test_window_split_shares_are_summed_per_execution_file_and_op():
    # GIVEN two overlapping executions without thread ids, and reads and a write of two files
    ex = executions([(0, "a", "h", 1, None, 0, 10), (1, "b", "h", 1, None, 5, 20)])
    seg = segments([("h", 1, None, 0, 4, 8, "read", "/f"),      # a only
                    ("h", 1, None, 6, 8, 30, "read", "/f"),     # a and b, half each
                    ("h", 1, None, 7, 9, 10, "write", "/f"),    # a and b, half each
                    ("h", 1, None, 12, 14, 4, "read", "/g"),    # b only
                    ("h", 1, None, 16, 18, 6, "read", "/g")])   # b only
    # WHEN attributed
    att = exact.io_to_executions(seg, ex)
    files, _ = conservation(att, ex)
    # THEN one row per (execution, file, op), each with its shares summed
    got = {(r["key"], r["path"], r["op"]): (r["bytes"], r["ops"])
           for r in files.iter_rows(named=True)}
    assert got == {("a", "/f", "read"): (8 + 15.0, 1.5), ("a", "/f", "write"): (5.0, 0.5),
                   ("b", "/f", "read"): (15.0, 0.5), ("b", "/f", "write"): (5.0, 0.5),
                   ("b", "/g", "read"): (10.0, 2.0)}
    # and the time in the calls by the same shares: a 4 ms read whole, 2 ms calls halved
    seconds = {(r["key"], r["path"], r["op"]): r["io_time_s"] for r in files.iter_rows(named=True)}
    assert seconds == pytest.approx({("a", "/f", "read"): 0.005, ("a", "/f", "write"): 0.001,
                                     ("b", "/f", "read"): 0.001, ("b", "/f", "write"): 0.001,
                                     ("b", "/g", "read"): 0.004}, abs=1e-12)
    assert set(files["attribution"]) == {"window-split"}


def test_window_split_keeps_every_file_and_op_apart_however_many():
    # GIVEN two overlapping executions without thread ids and 20 files, each read and written
    # once while both ran (each call halved between them)
    ex = executions([(0, "a", "h", 1, None, 0, 100), (1, "b", "h", 1, None, 0, 100)])
    seg = segments([("h", 1, None, 10, 12, 2 * i + (op == "write") + 2, op, f"/f{i:02}")
                    for i in range(20) for op in ("read", "write")])
    # WHEN attributed, THEN each execution has one row per file and op, with its half
    files, _ = conservation(exact.io_to_executions(seg, ex), ex)
    got = {(r["key"], r["path"], r["op"]): r["bytes"] for r in files.iter_rows(named=True)}
    assert got == {(k, f"/f{i:02}", op): (2 * i + (op == "write") + 2) / 2
                   for k in ("a", "b") for i in range(20) for op in ("read", "write")}


def test_window_split_sums_do_not_depend_on_how_far_apart_execution_ids_are():
    # GIVEN the same 300 overlapping executions without thread ids (each shares segments with
    # the one before and after it), numbered next to each other (their shares grouped by one
    # packed integer key) or 2**53 apart (too wide to pack with the file: grouped by both)
    def files_by_key(spacing):
        ex = executions([(i * spacing, f"k{i}", "h", 1, None, 10 * i, 10 * i + 15)
                         for i in range(300)])
        seg = segments([("h", 1, None, 10 * i + 2, 10 * i + 12, 100 + i, op, f"/f{i % 3}")
                        for i in range(300) for op in ("read", "write")])
        files, _ = conservation(exact.io_to_executions(seg, ex), ex)
        return {(r["key"], r["path"], r["op"]): (r["bytes"], r["ops"], r["io_time_s"])
                for r in files.iter_rows(named=True)}

    # WHEN attributed
    compact, spread = files_by_key(1), files_by_key(2**53)
    # THEN one row per execution, file and op (three files per execution, two at the ends),
    # summed alike
    assert len(compact) == 2 * (3 * 300 - 2)
    assert spread == compact


def test_zero_length_segment_inside_two_windows_is_shared_equally():
    ex = executions([(0, "a", "h", 1, None, 0, 10), (1, "b", "h", 1, None, 0, 10)])
    seg = segments([("h", 1, None, 5, 5, 0, "read", "/eof")])
    att = exact.io_to_executions(seg, ex)
    assert sorted(att.shares["weight"].to_list()) == [0.5, 0.5]
    conservation(att, ex)


def test_process_without_executions_is_unattributed_with_method_none():
    ex = executions([(0, "a", "h", 1, 11, 0, 10)])
    seg = segments([("h", 5, 3, 0, 1, 10, "read", "/f")])
    att = exact.io_to_executions(seg, ex)
    assert att.segments["attribution"].to_list() == ["none"]
    conservation(att, ex)


def test_a_worker_without_executions_is_named_as_such_and_spill_stays_spill():
    # GIVEN a second worker that ran no task, and a spill write in the first one's directory
    procs = pl.concat([PROCS, PROCS.with_columns(pid=pl.lit(5, pl.Int64),
                                                 local_directory=pl.lit("/scratch/w5"))])
    ex = executions([(0, "a", "h", 1, 11, 0, 10)])
    seg = segments([("h", 5, 3, 0, 1, 10, "read", "/f"),
                    ("h", 1, 42, 20, 21, 8, "write", "/scratch/w1/storage/k")])
    # WHEN its I/O is left unattributed, THEN the reason says why, for each
    un = exact.unattributed_io(exact.io_to_executions(seg, ex), ex, procs, [])
    assert dict(un.select("path", "reason").iter_rows()) == {
        "/f": "worker without task windows",
        "/scratch/w1/storage/k": "worker local directory (spill)"}


def test_a_task_s_time_in_io_calls_is_the_sum_of_its_calls_in_seconds():
    ex = executions([(0, "a", "h", 1, 11, 0, 2000)])
    seg = segments([("h", 1, 11, 10, 20, 1, "read", "/f"), ("h", 1, 11, 30, 33, 1, "read", "/f"),
                    ("h", 1, 11, 40, 1540, 1, "write", "/f")])
    files, _ = conservation(exact.io_to_executions(seg, ex), ex)
    got = {r["op"]: r["io_time_s"] for r in files.iter_rows(named=True)}
    assert got == {"read": pytest.approx(0.013, abs=1e-12), "write": pytest.approx(1.5)}


def test_midpoints_out_of_start_order_on_one_thread_still_find_their_window():
    # GIVEN 100 back-to-back tasks of 10 ms on one thread, and 2000 calls on that thread in
    # start order whose lengths put their midpoints in shuffled order (a thread that Darshan saw
    # overlapping itself, e.g. an async or signal-handler write)
    import random

    rng = random.Random(11)
    ex = executions([(i, f"k{i}", "h", 1, 11, 10 * i, 10 * i + 10) for i in range(100)])
    starts = sorted(rng.randrange(0, 500) for _ in range(2000))
    stops = [s + rng.randrange(0, 2 * (1000 - s)) for s in starts]
    seg = segments([("h", 1, 11, s, e, 1, "read", f"/f{i}")
                    for i, (s, e) in enumerate(zip(starts, stops, strict=True))])
    # WHEN attributed
    att = exact.io_to_executions(seg, ex)
    conservation(att, ex)
    # THEN each goes to the window holding its midpoint
    got = dict(att.segments.select("path", "execution_id").iter_rows())
    want = {f"/f{i}": min((s + e) * MS // 2 // (10 * MS), 99) if (s + e) * MS // 2 <= 1000 * MS
            else None for i, (s, e) in enumerate(zip(starts, stops, strict=True))}
    assert got == want
    # and the segments come back in output order (thread, then start)
    assert att.segments["host_start_ns"].is_sorted()


def test_one_process_segments_match_only_that_process_s_threads():
    # GIVEN two processes whose executor threads have the same id and overlapping tasks, and
    # the segments of one of them (as an attribution partition has)
    ex = executions([(0, "a", "h", 1, 11, 0, 100), (1, "b", "h", 2, 11, 0, 100),
                     (2, "c", "g", 1, 11, 0, 100), (3, "d", "h", 3, 11, 5, 100),
                     (4, "e", "i", 2, 11, 5, 100)])
    seg = segments([("h", 2, 11, 10, 20, 5, "read", "/f")])
    att = exact.io_to_executions(seg, ex)
    files, _ = conservation(att, ex)
    # THEN the segment goes to its own process's task
    assert files["key"].to_list() == ["b"]


def test_two_processes_whose_threads_share_an_id_keep_their_own_segments():
    # GIVEN two processes of one host whose executor threads have the same id (pthread ids
    # repeat across processes), each running a task, and both processes' segments at once
    ex = executions([(0, "a", "h", 1, 11, 0, 100), (1, "b", "h", 2, 11, 0, 100)])
    seg = segments([("h", 1, 11, 10, 20, 5, "read", "/one"),
                    ("h", 2, 11, 10, 20, 7, "read", "/two")])
    # WHEN attributed, THEN each segment goes to its own process's task
    files, _ = conservation(exact.io_to_executions(seg, ex), ex)
    assert sorted(files.select("key", "path").rows()) == [("a", "/one"), ("b", "/two")]


def test_midpoints_out_of_order_with_their_neighbours_only_still_find_their_windows():
    # GIVEN two tasks on one thread and six calls in start order whose midpoints are 1, 8, 3,
    # 9, 4 and 10 ms: each is after the one two before it, but every other one is before its
    # neighbour (long calls interleaved with short ones)
    ex = executions([(0, "a", "h", 1, 11, 0, 4), (1, "b", "h", 1, 11, 5, 16)])
    calls = [(0, 2), (1, 15), (2, 4), (3, 15), (4, 4), (5, 15)]
    seg = segments([("h", 1, 11, s, e, 1, "read", f"/m{(s + e) // 2}") for s, e in calls])
    # WHEN attributed, THEN each goes to the window holding its midpoint
    att = exact.io_to_executions(seg, ex)
    assert dict(att.segments.select("path", "execution_id").iter_rows()) == {
        "/m1": 0, "/m3": 0, "/m4": 0, "/m8": 1, "/m9": 1, "/m10": 1}


def test_a_thread_s_first_two_calls_out_of_midpoint_order_find_their_windows():
    # GIVEN two threads; on the second, a long call then a short one inside the first task
    ex = executions([(0, "a", "h", 1, 12, 0, 4), (1, "b", "h", 1, 12, 5, 16),
                     (2, "c", "h", 1, 11, 0, 16)])
    seg = segments([("h", 1, 11, 0, 2, 1, "read", "/c"), ("h", 1, 12, 0, 16, 1, "read", "/m8"),
                    ("h", 1, 12, 1, 5, 1, "read", "/m3")])
    att = exact.io_to_executions(seg, ex)
    assert dict(att.segments.select("path", "execution_id").iter_rows()) == {
        "/c": 2, "/m8": 1, "/m3": 0}


def test_segments_of_several_processes_come_back_by_process_thread_and_start():
    # GIVEN two processes' segments, one process after the other (as a partition hands them),
    # each with two threads whose calls interleave in time
    ex = executions([(0, "a", "h", 1, 11, 0, 100), (1, "b", "h", 1, 12, 0, 100),
                     (2, "c", "h", 2, 11, 0, 100), (3, "d", "h", 2, 12, 0, 100)])
    seg = segments([("h", pid, tid, t, t + 1, 1, "read", f"/{pid}-{tid}-{t}")
                    for pid in (1, 2) for t in (10, 20, 30) for tid in (12, 11)])
    # WHEN attributed, THEN the segments come back in output order: process, thread, start
    got = exact.io_to_executions(seg, ex).segments.select("pid", "thread_id", "host_start_ns")
    assert got.rows() == sorted(got.rows())
    assert got.height == 12
    # and so do they when the processes come in another order, or one of them twice
    one, two = (seg.filter(pl.col("pid") == pid) for pid in (1, 2))
    early = pl.col("host_start_ns") <= 15 * MS
    for parts in ([two, one], [one.filter(early), two, one.filter(~early)]):
        got = exact.io_to_executions(pl.concat(parts), ex).segments.select(
            "pid", "thread_id", "host_start_ns")
        assert got.rows() == sorted(got.rows()) and got.height == 12, len(parts)


def _split_by_hand(seg, ex):
    """The window-split shares by the documented rule, one segment and window at a time."""
    out = {}
    for s in seg.iter_rows(named=True):
        dur = s["host_stop_ns"] - s["host_start_ns"]
        found = {}
        for e in ex.iter_rows(named=True):
            if (None in (s["host"], s["pid"]) or (s["host"], s["pid"]) != (e["host"], e["pid"])
                    or not (s["host_start_ns"] <= e["local_stop_ns"]
                            and s["host_stop_ns"] >= e["local_start_ns"])):
                continue
            inside = (min(s["host_stop_ns"], e["local_stop_ns"])
                      - max(s["host_start_ns"], e["local_start_ns"]))
            if dur == 0 or inside > 0:
                found[e["execution_id"]] = inside / dur if dur else 1.0
        total = sum(found.values())
        for eid, raw in found.items():
            weight = 1 / len(found) if dur == 0 else raw / total if total > 1 else raw
            out[(s["seg_id"], eid)] = weight
    return out


def test_window_split_matches_the_rule_on_many_processes_and_thread_layouts():
    # GIVEN segments without thread ids on three processes (and of an unknown host): tasks
    # back to back on executor threads, some touching, one thread whose tasks overlap, tasks
    # without a thread, zero-length calls, calls spanning several tasks
    import random

    rng = random.Random(3)
    ex_rows, eid = [], 0
    for host, pid in (("h", 1), ("h", 2), ("g", 1), (None, 1)):
        for thread in (11, 12, 13, None):
            t = rng.randint(0, 5)
            for _ in range(12):
                d = rng.randint(0, 6)
                ex_rows.append((eid, f"k{eid}", host, pid, thread, t, t + d))
                eid += 1
                t += d + rng.choice([0, 0, 1, 3]) - (2 if thread == 13 else 0)
    seg_rows = []
    for _ in range(600):
        host, pid = rng.choice([("h", 1), ("h", 2), ("g", 1), ("h", 3), (None, 1)])
        s = rng.randint(-3, 80)
        seg_rows.append((host, pid, None, s, s + rng.choice([0, 0, 1, 2, 5, 20]), 10, "read",
                         "/f"))
    ex, seg = executions(ex_rows), segments(seg_rows)
    # WHEN attributed
    att = exact.io_to_executions(seg, ex)
    # THEN every share is the one the rule gives, and there is no other
    got = {(s, e): w for s, e, w in att.split.select("seg_id", "execution_id", "weight").iter_rows()}
    want = _split_by_hand(seg, ex)
    assert got.keys() == want.keys()
    assert all(got[k] == pytest.approx(want[k]) for k in want)
    assert len(want) > 600  # calls spanning several tasks were split
    # and each segment names the execution of its largest share (ties: the smallest id)
    per_segment = {}
    for (s, e), w in want.items():
        per_segment.setdefault(s, []).append((-w, e))
    named = {s: (min(shares)[1], sum(-w for w, _ in shares)) for s, shares in per_segment.items()}
    got_named = {s: (e, w) for s, e, w in att.segments.select(
        "seg_id", "execution_id", "attributed_weight").iter_rows() if e is not None}
    assert got_named.keys() == named.keys()
    assert all(got_named[s][0] == named[s][0] and got_named[s][1] == pytest.approx(named[s][1])
               for s in named)
    assert any(len(v) > 1 and v[0][0] == v[1][0] for v in map(sorted, per_segment.values()))
    conservation(att, ex)


def _profile_rows(rows):
    """rows: (execution_seq, module, name, file, line, ncall, tsub_s, ttot_s), wall clock,
    calls."""
    schema = {"execution_seq": pl.Int64, "module": pl.String, "name": pl.String,
              "file": pl.String, "line": pl.Int64, "ncall": pl.Int64, "tsub_s": pl.Float64,
              "ttot_s": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        clock=pl.lit("wall").cast(pl.Enum(["wall", "cpu"])),
        ncall_kind=pl.lit("calls").cast(pl.Enum(["calls", "samples"])))


def _summed_by_rule(func_stats, ex):
    """The rule: the rows of one function (module, name, file, line, clock, what ncall
    counts) in one execution summed; rows of no execution left out."""
    function = ["module", "name", "file", "line", "clock", "ncall_kind"]
    return (func_stats.join(ex.select("execution_seq", "execution_id"), on="execution_seq")
            .group_by("execution_id", *function)
            .agg(pl.col("ncall").sum(), pl.col("tsub_s").sum(), pl.col("ttot_s").sum())
            .join(ex.select("execution_id", "key"), on="execution_id"))


def _by_function(df):
    return df.select(sorted(df.columns)).sort(pl.all(), nulls_last=True)


def test_profile_rows_of_one_function_in_one_execution_are_summed():
    ex = pl.DataFrame({"execution_seq": [1, 2, None], "execution_id": [10, 11, 12],
                       "key": ["a", "b", "c"]})
    rows = _profile_rows([
        (1, "m", "<lambda>", "/f.py", 3, 1, 0.5, 1.0),  # two lambdas on one line: one row
        (1, "m", "<lambda>", "/f.py", 3, 2, 0.25, 0.5),
        (1, "g", "<lambda>", "/g.py", 3, 1, 0.125, 0.125),  # same line, another file
        (1, "m", "other", "/f.py", 3, 1, 1.0, 1.0),  # same line, another name
        (2, "m", "<lambda>", "/f.py", 3, 4, 2.0, 2.0),  # another execution
        (2, None, "built-in", None, None, 1, 1.0, 1.0),  # no module, file or line: twice
        (2, None, "built-in", None, None, 1, 2.0, 2.0),
        (2, "m", "f", "/f.py", 7, 1, 3.0, 3.0),  # alone
        (None, "m", "<lambda>", "/f.py", 3, 1, 9.0, 9.0),  # outside any task
        (9, "m", "<lambda>", "/f.py", 3, 1, 9.0, 9.0),  # no such execution
    ])
    got = functions_per_execution(rows, ex)
    assert got.height == 6
    assert _by_function(got).equals(_by_function(_summed_by_rule(rows, ex)))
    lam = got.filter(pl.col("execution_id") == 10, pl.col("file") == "/f.py",
                     pl.col("name") == "<lambda>")
    assert lam.select("ncall", "tsub_s", "ttot_s").row(0) == (3, 0.75, 1.5)
    unique = rows.filter(pl.col("execution_seq") == 2, pl.col("line") == 7)
    assert functions_per_execution(unique, ex).height == 1


def test_profile_rows_summed_equal_the_rule_on_random_rows():
    import random

    rng = random.Random(11)
    ex = pl.DataFrame({"execution_seq": list(range(1, 41)), "execution_id": range(100, 140),
                       "key": [f"k-{i}" for i in range(40)]})
    rows = _profile_rows([
        (rng.choice([None, *range(1, 45)]), rng.choice(["m", "n", None]), rng.choice("fgh"),
         rng.choice(["/a.py", "/b.py", None]), rng.choice([1, 2, None]), rng.randrange(1, 4),
         rng.randrange(8) / 8, rng.randrange(16) / 8) for _ in range(3000)])
    got = functions_per_execution(rows, ex)
    assert _by_function(got).equals(_by_function(_summed_by_rule(rows, ex)))
    assert got.height < rows.filter(pl.col("execution_seq") <= 40).height  # some were summed


def test_a_midpoint_on_either_edge_of_the_window_belongs_to_the_execution():
    # GIVEN one execution from 10 to 20 ms and segments on its thread whose midpoints are its
    # start, its stop, and 1 ms either side
    ex = executions([(0, "a", "h", 1, 11, 10, 20)])
    seg = segments([("h", 1, 11, 8, 10, 1, "read", "/before"),   # mid 9: before the start
                    ("h", 1, 11, 9, 11, 2, "read", "/start"),    # mid 10: the start itself
                    ("h", 1, 11, 19, 21, 4, "read", "/stop"),    # mid 20: the stop itself
                    ("h", 1, 11, 20, 22, 8, "read", "/after")])  # mid 21: after the stop
    # WHEN attributed
    att = exact.io_to_executions(seg, ex)
    files, un = conservation(att, ex)
    # THEN the window is closed at both ends: start and stop are in it, a midpoint past either
    # edge is not
    assert dict(files.select("path", "bytes").iter_rows()) == {"/start": 2.0, "/stop": 4.0}
    assert sorted(un["path"]) == ["/after", "/before"]
