"""compare: ranking and explanations over literal output tables."""

from __future__ import annotations

import polars as pl
import pytest

from correlate import compare
from correlate.schema import TABLES, conform


def run_tables(rows):
    """rows: (prefix, n, duration_s, cpu_s, read_bytes, io_time_s[, wait_thread_s]), per task."""
    recs = []
    for prefix, n, dur, cpu, rb, io, *wait in rows:
        recs += [{"execution_id": len(recs) + i, "key": f"{prefix}-{i}", "prefix": prefix,
                  "duration_s": dur, "cpu_s": cpu, "read_bytes": rb, "write_bytes": 0.0,
                  "read_ops": 1.0, "write_ops": 0.0, "io_time_s": io,
                  "wait_thread_s": wait[0] if wait else 0.0} for i in range(n)]
    tasks = conform(pl.DataFrame(recs), TABLES["tasks"])
    files = conform(pl.DataFrame({"execution_id": tasks["execution_id"], "key": tasks["key"],
                                  "path": ["/d/" + p for p in tasks["prefix"]],
                                  "op": ["read"] * tasks.height, "bytes": tasks["read_bytes"],
                                  "ops": [1.0] * tasks.height, "io_time_s": tasks["io_time_s"]}),
                    TABLES["task_files"])
    return {"tasks": tasks, "task_files": files, "task_functions": TABLES["task_functions"].empty()}


BASE = [("load", 10, 0.2, 0.01, 1e6, 0.15), ("gauss", 10, 0.3, 0.28, 0.0, 0.0),
        ("sleepy", 10, 0.1, 0.0, 0.0, 0.0), ("tiny", 10, 0.01, 0.01, 0.0, 0.0)]


def compare_runs(before, after, by="prefix"):
    tb, ta = run_tables(before), run_tables(after)
    total = max(tb["tasks"]["duration_s"].sum(), ta["tasks"]["duration_s"].sum())
    return compare.diff(compare.profile(tb, by), compare.profile(ta, by), total_wall_s=total)


def test_two_known_slowdowns_rank_first_with_the_right_cause():
    # GIVEN: sleepy sleeps 0.3 s more per task; load reads twice the bytes, taking longer
    after = [("load", 10, 0.35, 0.01, 2e6, 0.30), ("gauss", 10, 0.3, 0.28, 0.0, 0.0),
             ("sleepy", 10, 0.4, 0.0, 0.0, 0.0), ("tiny", 10, 0.01, 0.01, 0.0, 0.0)]
    d = compare_runs(BASE, after)
    assert d["item"].head(2).to_list() == ["sleepy", "load"]
    lines = compare.explain(d, "prefix")
    assert len(lines) == 2
    assert lines[0].startswith("`sleepy`") and "no source explains" in lines[0]
    assert lines[1] == ("`load`: wall +1.500 s (+75%) — I/O time +100% (+1.500 s) with bytes "
                        "+100% (9.5 MiB → 19.1 MiB)")


def test_slower_storage_is_told_apart_from_more_data():
    after = [("load", 10, 0.5, 0.01, 1e6, 0.45), *BASE[1:]]
    lines = compare.explain(compare_runs(BASE, after), "prefix")
    assert "slower storage, not more data" in lines[0]


def test_more_executions_with_unchanged_cpu_per_execution():
    after = [BASE[0], ("gauss", 30, 0.3, 0.28, 0.0, 0.0), *BASE[2:]]
    lines = compare.explain(compare_runs(BASE, after), "prefix")
    assert "3.0× the executions (10 → 30)" in lines[0]
    assert "CPU per execution unchanged" in lines[0]


def test_waiting_before_a_slower_execution_is_context_not_the_cause():
    # GIVEN: sleepy sleeps 0.3 s more per task, so its later tasks also wait longer for a
    # thread (as on the real cluster); waiting happens before the execution, outside wall
    before = [*BASE[:2], ("sleepy", 10, 0.1, 0.0, 0.0, 0.0, 0.05), BASE[3]]
    after = [*BASE[:2], ("sleepy", 10, 0.4, 0.0, 0.0, 0.0, 0.20), BASE[3]]
    lines = compare.explain(compare_runs(before, after), "prefix")
    assert lines == ["`sleepy`: wall +3.000 s (+300%) — none of it is CPU or I/O: time "
                     "inside the task that no source explains (sleeping, locks, GIL, external "
                     "calls). Before the executions, not in wall: waiting +1.500 s."]


def test_a_run_that_starts_spilling_says_so_next_to_the_slower_executions():
    # GIVEN: after, gauss's results are spilled (8 MB each) and its executions wait 0.1 s
    # each for spilled inputs, while they also take 0.1 s longer
    before, after = run_tables(BASE), run_tables([*BASE[:1], ("gauss", 10, 0.4, 0.28, 0.0, 0.0),
                                                   *BASE[2:]])
    spilling = pl.col("prefix") == "gauss"
    after["tasks"] = after["tasks"].with_columns(
        spilled_bytes=pl.when(spilling).then(8e6).otherwise(0.0),
        input_read_back_s=pl.when(spilling).then(0.1).otherwise(None))
    d = compare.diff(compare.profile(before, "prefix"), compare.profile(after, "prefix"))
    lines = compare.explain(d, "prefix")
    gauss = next(line for line in lines if line.startswith("`gauss`"))
    assert ("Before the executions, not in wall: results spilled to disk 76.3 MiB, none "
            "before; reading spilled inputs back +1.000 s.") in gauss


def test_a_coroutine_prefix_that_awaits_longer_says_so():
    # GIVEN: fetch (async def tasks) takes 0.3 s longer each, all of it awaiting
    before = run_tables([*BASE, ("fetch", 10, 0.1, 0.01, 0.0, 0.0)])
    after = run_tables([*BASE, ("fetch", 10, 0.4, 0.01, 0.0, 0.0)])
    for tables, waited in ((before, 0.09), (after, 0.39)):
        tables["tasks"] = tables["tasks"].with_columns(awaiting_s=pl.when(
            pl.col("prefix") == "fetch").then(waited))
    d = compare.diff(compare.profile(before, "prefix"), compare.profile(after, "prefix"))
    fetch = next(line for line in compare.explain(d, "prefix") if line.startswith("`fetch`"))
    assert "awaiting +3.000 s of it (coroutine tasks suspended on the event loop)" in fetch


def test_part_of_a_change_without_a_source_is_named_next_to_the_measured_part():
    # GIVEN: load's I/O time doubles and each task also sleeps 0.2 s more
    after = [("load", 10, 0.55, 0.01, 2e6, 0.30), *BASE[1:]]
    lines = compare.explain(compare_runs(BASE, after), "prefix")
    assert "I/O time +100% (+1.500 s) with bytes +100%" in lines[0]
    assert "+2.000 s of it is neither CPU nor I/O" in lines[0]


def test_a_change_spread_over_many_files_is_judged_against_all_io_time():
    # GIVEN: each load task reads its own file, twice the bytes in 1.5× the time; each file's
    # +0.15 s is below 3% of the task wall time (6.1 s → 0.18 s) but all I/O doubled
    def own_files(rows):
        t = run_tables(rows)
        files = t["task_files"].filter(pl.col("key").str.starts_with("load-"))
        return {**t, "task_files": files.with_columns(path="/d/" + pl.col("key"))}

    after = [("load", 10, 0.35, 0.01, 2e6, 0.30), *BASE[1:]]
    files_b = compare.profile(own_files(BASE), "file")
    files_a = compare.profile(own_files(after), "file")
    assert compare.dimension_total(files_b, files_a) == pytest.approx(3.0)
    d = compare.diff(files_b, files_a)
    assert d.height == 10 and d["significant"].all()
    assert not compare.diff(files_b, files_a, total_wall_s=6.1)["significant"].any()
    assert compare.explain(d, "file", top=1) == [
        "`/d/load-0`: I/O time +0.150 s (+100%) with bytes +100% (976.6 KiB → 1.9 MiB)"]


def test_sampled_profiles_do_not_talk_about_calls():
    def functions(tsub, ncall):
        return pl.DataFrame({"item": ["m:f"], "executions": [10], "wall_s": [tsub],
                             "ncall": [ncall], "ttot_s": [tsub]})

    d = compare.diff(functions(1.0, 100), functions(3.0, 300), total_wall_s=4.0)
    assert compare.explain(d, "function") == [
        "`m:f`: exclusive time +2.000 s (+200%), 3.0× the calls (100 → 300)"]
    assert compare.explain(d, "function", call_counts=False) == [
        "`m:f`: exclusive time +2.000 s (+200%)"]
    sampled = {"facts": {"collector_options": {"profile": "sample"}}}
    assert not compare.exact_call_counts(sampled)
    assert compare.exact_call_counts({"facts": {"collector_options": {"profile": "yappi"}}})
    assert compare.exact_call_counts({"source_format": "mofka-csv", "facts": {}})


def test_new_and_vanished_prefixes_are_said_so():
    after = [("load", 10, 0.2, 0.01, 1e6, 0.15), *BASE[1:3], ("fresh", 10, 0.3, 0.0, 0.0, 0.0)]
    lines = compare.explain(compare_runs(BASE, after), "prefix")
    assert lines == ["`fresh`: wall +3.000 s — new in this run (10 executions)"]
    lines = compare.explain(compare_runs(after, BASE), "prefix")
    assert lines == ["`fresh`: wall -3.000 s — absent from this run (10 executions before)"]


def test_a_run_compared_with_itself_shows_nothing_beyond_noise():
    d = compare_runs(BASE, BASE)
    assert not d["significant"].any()
    assert compare.explain(d, "prefix") == []
    assert compare.setup_differences({"facts": {"workers": 2}}, {"facts": {"workers": 2}}) == []


def test_setup_differences_are_listed():
    diffs = compare.setup_differences(
        {"source_format": "run-folder", "facts": {"nthreads": 4}},
        {"source_format": "run-folder", "facts": {"nthreads": 8}})
    assert diffs == ["nthreads: 4 → 8"]


def test_setup_differences_name_the_command_and_each_changed_entry():
    before = {"facts": {"command": "python job.py --images 4", "versions": {"dask": "1", "x": "2"},
                        "job_environment": {}},
              "io": {"segments_by_method": {"exact-thread": 3}}}
    after = {"facts": {"command": "python job.py --images 4 --size 128",
                       "versions": {"dask": "1", "x": "3"}, "job_environment": {"OMP": "1"}},
             "io": {"segments_by_method": {"exact-thread": 3, "none": 1}}}
    assert compare.setup_differences(before, after) == [
        "command: python job.py --images 4 → python job.py --images 4 --size 128",
        "versions.x: 2 → 3", "job_environment.OMP: (none) → 1",
        "I/O attribution methods: exact-thread → exact-thread, none"]


def test_compare_md_writes_one_kind_of_minus():
    from correlate.reports.compare import _dbytes, _ds

    assert _dbytes(-15.8 * 2**20) == "-15.8 MiB" and _ds(-3.669) == "-3.669"
