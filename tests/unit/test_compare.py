"""compare: judging, ranking and explanations over literal output tables.

Each literal run lays its executions one after another on one thread (so each prefix's span
share is its summed task time), with a small deterministic spread per execution (±2%) so that
the rank test has distributions to compare."""

from __future__ import annotations

import polars as pl

from correlate.compare import changes as compare
from correlate.compare import explain
from correlate.schema import TABLES, conform

JITTER = (-0.02, -0.01, 0.0, 0.01, 0.02)


def run_tables(rows, seed: int = 0):
    """rows: (prefix, n, duration_s, cpu_s, read_bytes, io_time_s[, wait_thread_s]), per task."""
    recs, t = [], 0
    for prefix, n, dur, cpu, rb, io, *wait in rows:
        for i in range(n):
            j = 1 + JITTER[(i + seed) % len(JITTER)]
            d = dur * j
            recs.append({"execution_id": len(recs), "key": f"{prefix}-{i}", "prefix": prefix,
                         "duration_s": d, "cpu_s": cpu * j, "read_bytes": rb,
                         "write_bytes": 0.0, "read_ops": 1.0, "write_ops": 0.0,
                         "io_time_s": io * j, "wait_thread_s": wait[0] if wait else 0.0,
                         "start_ns": t, "stop_ns": t + int(d * 1e9)})
            t += int(d * 1e9)
    tasks = conform(pl.DataFrame(recs), TABLES["tasks"])
    files = conform(pl.DataFrame({"execution_id": tasks["execution_id"], "key": tasks["key"],
                                  "path": ["/d/" + p for p in tasks["prefix"]],
                                  "op": ["read"] * tasks.height, "bytes": tasks["read_bytes"],
                                  "ops": [1.0] * tasks.height, "io_time_s": tasks["io_time_s"]}),
                    TABLES["task_files"])
    return {"tasks": tasks, "task_files": files, "task_functions": TABLES["task_functions"].empty()}


BASE = [("load", 10, 0.2, 0.01, 1e6, 0.15), ("gauss", 10, 0.3, 0.28, 0.0, 0.0),
        ("sleepy", 10, 0.1, 0.0, 0.0, 0.0), ("tiny", 10, 0.01, 0.01, 0.0, 0.0)]


def diff_tables(tb, ta, by="prefix", setup=()):
    span = max(compare.job_span(tb), compare.job_span(ta))
    d = compare.diff(compare.profile(tb, by), compare.profile(ta, by),
                     compare.samples(tb, by), compare.samples(ta, by), by=by, span_s=span)
    if by == "prefix":
        return compare.machine_change(d, list(setup))
    return d, None


def compare_runs(before, after, by="prefix"):
    return diff_tables(run_tables(before), run_tables(after, seed=1), by)[0]


def test_two_known_slowdowns_rank_first_with_the_right_cause():
    # GIVEN: sleepy sleeps 0.3 s more per task; load reads twice the bytes, taking longer
    after = [("load", 10, 0.35, 0.01, 2e6, 0.30), ("gauss", 10, 0.3, 0.28, 0.0, 0.0),
             ("sleepy", 10, 0.4, 0.0, 0.0, 0.0), ("tiny", 10, 0.01, 0.01, 0.0, 0.0)]
    d = compare_runs(BASE, after)
    assert d["item"].head(2).to_list() == ["sleepy", "load"]
    lines = explain.explain(d, "prefix")
    assert len(lines) == 2
    assert lines[0].startswith("`sleepy`: job span share +3.000 s, task time +3.000 s (+300%)")
    assert "no source explains" in lines[0]
    assert lines[1] == ("`load`: job span share +1.500 s, task time +1.500 s (+75%) — bytes "
                        "read +100% (9.5 MiB → 19.1 MiB); I/O time +100% (+1.500 s)")


def test_more_bytes_in_the_same_time_are_a_fact_not_noise():
    after = [("load", 10, 0.2, 0.01, 2e6, 0.15), *BASE[1:]]
    d = compare_runs(BASE, after)
    assert d.row(0, named=True)["item"] == "load" and d["significant"].sum() == 1
    assert d.row(0, named=True)["counts_changed"] == "read_bytes"
    assert explain.explain(d, "prefix") == [
        "`load`: job span share +0.000 s, task time +0.000 s (+0%) — bytes read +100% "
        "(9.5 MiB → 19.1 MiB); I/O time about the same (+0.000 s)"]


def test_slower_storage_is_told_apart_from_more_data():
    after = [("load", 10, 0.5, 0.01, 1e6, 0.45), *BASE[1:]]
    lines = explain.explain(compare_runs(BASE, after), "prefix")
    assert "slower storage, not more data" in lines[0]


def test_more_executions_with_unchanged_cpu_per_execution():
    after = [BASE[0], ("gauss", 30, 0.3, 0.28, 0.0, 0.0), *BASE[2:]]
    lines = explain.explain(compare_runs(BASE, after), "prefix")
    assert "3.0× the executions (10 → 30)" in lines[0]
    assert "CPU per execution unchanged" in lines[0]


def test_timings_are_judged_by_their_own_spread():
    # GIVEN: 1,000 executions 6% longer each, and 3 executions 40% longer each
    before = [("many", 1000, 0.01, 0.0, 0.0, 0.0), ("few", 3, 0.1, 0.0, 0.0, 0.0)]
    after = [("many", 1000, 0.0106, 0.0, 0.0, 0.0), ("few", 3, 0.14, 0.0, 0.0, 0.0)]
    d = compare_runs(before, after)
    rows = d.rows_by_key("item", named=True, unique=True)
    assert rows["many"]["significant"] and rows["many"]["p_wall"] < 1e-6
    assert not rows["few"]["significant"] and rows["few"]["p_wall"] is None
    assert rows["few"]["evidence"].startswith("too few executions to judge timing (3 → 3")


def test_the_same_run_twice_names_nothing():
    d = compare_runs(BASE, BASE)
    assert not d["significant"].any() and explain.explain(d, "prefix") == []


def test_a_cpu_bound_prefix_waiting_longer_for_a_core_alone_is_not_named():
    # GIVEN: gauss (CPU-bound) takes 30% longer at the same CPU: contention, not gauss
    after = [BASE[0], ("gauss", 10, 0.39, 0.28, 0.0, 0.0), *BASE[2:]]
    d = compare_runs(BASE, after)
    gauss = d.filter(pl.col("item") == "gauss").row(0, named=True)
    assert gauss["wall_changed"] and gauss["stretched"] and gauss["cpu_bound"]
    assert not gauss["significant"] and "waiting longer or shorter for a core" in gauss[
        "evidence"]


def test_a_loaded_machine_is_named_once_and_a_cpu_regression_still_by_its_cpu():
    # GIVEN: every CPU-bound prefix takes 60% longer at unchanged CPU (a loaded machine), and
    # crunch (its task time 2.1× its CPU before: it shares the cores) does twice the CPU work
    before = [*BASE, ("hash", 10, 0.2, 0.19, 0.0, 0.0), ("crunch", 10, 0.4, 0.19, 0.0, 0.0)]
    # (sleep and I/O waits wake later: load's I/O takes 10% longer), and sleepy sleeps 3× as
    # long: no machine does that to a sleep
    after = [("load", 10, 0.22, 0.01, 1e6, 0.165), ("gauss", 10, 0.48, 0.28, 0.0, 0.0),
             ("sleepy", 10, 0.3, 0.0, 0.0, 0.0),
             ("tiny", 10, 0.016, 0.01, 0.0, 0.0), ("hash", 10, 0.32, 0.19, 0.0, 0.0),
             ("crunch", 10, 1.28, 0.38, 0.0, 0.0)]
    d, machine = diff_tables(run_tables(before), run_tables(after, seed=1))
    assert machine and "4 unrelated prefix(es) (gauss, hash, load, tiny) take longer" in machine
    assert "host load is not recorded" in machine
    assert d.filter(pl.col("machine"))["item"].sort().to_list() == [
        "gauss", "hash", "load", "tiny"]
    named = explain.explanations(d, "prefix", machine=True)
    assert [item for item, _ in named] == ["crunch", "sleepy"]
    why = named[0][1]
    assert "CPU per execution +100% (+1.900 s in all)" in why
    assert "+2.100 s more waiting for a core at the same contention as before" in why
    assert "+4.800 s of it is neither CPU nor I/O: the machine or the concurrency" in why
    assert "the machine or the concurrency changed (see its line)" in why


def test_a_change_of_threads_is_a_setup_change_named_first():
    d, machine = diff_tables(run_tables(BASE), run_tables(BASE, seed=1),
                             setup=compare.setup_differences(
                                 {"facts": {"nthreads": [2], "command": "a"}},
                                 {"facts": {"nthreads": [1], "command": "b"}}))
    assert machine == ("The machine or the concurrency changed, not one prefix: the setup "
                       "differs in nthreads: 2 → 1.")


def test_waiting_before_a_slower_execution_is_context_not_the_cause():
    before = [*BASE[:2], ("sleepy", 10, 0.1, 0.0, 0.0, 0.0, 0.05), BASE[3]]
    after = [*BASE[:2], ("sleepy", 10, 0.4, 0.0, 0.0, 0.0, 0.20), BASE[3]]
    lines = explain.explain(compare_runs(before, after), "prefix")
    assert lines == ["`sleepy`: job span share +3.000 s, task time +3.000 s (+300%) — none of "
                     "it is CPU or I/O: time inside the task that no source explains (sleeping, "
                     "locks, GIL, external calls). Before the executions, not in task time: "
                     "waiting (dependencies, queue, a thread, data from outside Dask) +1.500 s."]


def test_a_run_that_starts_spilling_says_so_next_to_the_slower_executions():
    before, after = run_tables(BASE), run_tables(
        [*BASE[:1], ("gauss", 10, 0.4, 0.28, 0.0, 0.0), *BASE[2:]], seed=1)
    spilling = pl.col("prefix") == "gauss"
    after["tasks"] = after["tasks"].with_columns(
        spilled_bytes=pl.when(spilling).then(8e6).otherwise(0.0),
        input_read_back_s=pl.when(spilling).then(0.1).otherwise(None))
    d, _ = diff_tables(before, after)
    gauss = dict(explain.explanations(d, "prefix"))["gauss"]
    assert "spilled_bytes" in d.filter(pl.col("item") == "gauss")["counts_changed"][0]
    assert ("Before the executions, not in task time: results spilled to disk 76.3 MiB, none "
            "before; Dask's disk-read (inputs out of the store) +1.000 s.") in gauss


def test_a_coroutine_prefix_that_awaits_longer_says_so():
    before = run_tables([*BASE, ("fetch", 10, 0.1, 0.01, 0.0, 0.0)])
    after = run_tables([*BASE, ("fetch", 10, 0.4, 0.01, 0.0, 0.0)], seed=1)
    for tables, waited in ((before, 0.09), (after, 0.39)):
        tables["tasks"] = tables["tasks"].with_columns(awaiting_s=pl.when(
            pl.col("prefix") == "fetch").then(waited))
    d, _ = diff_tables(before, after)
    fetch = dict(explain.explanations(d, "prefix"))["fetch"]
    assert "awaiting +3.000 s of it (coroutine tasks suspended on the event loop)" in fetch


def test_part_of_a_change_without_a_source_is_named_next_to_the_measured_part():
    after = [("load", 10, 0.55, 0.01, 2e6, 0.30), *BASE[1:]]
    lines = explain.explain(compare_runs(BASE, after), "prefix")
    assert "bytes read +100%" in lines[0] and "I/O time +100% (+1.500 s)" in lines[0]
    assert "+2.000 s of it is neither CPU nor I/O" in lines[0]


def test_each_file_with_more_bytes_is_named():
    def own_files(rows, seed=0):
        t = run_tables(rows, seed)
        files = t["task_files"].filter(pl.col("key").str.starts_with("load-"))
        return {**t, "task_files": files.with_columns(path="/d/" + pl.col("key"))}

    after = [("load", 10, 0.35, 0.01, 2e6, 0.30), *BASE[1:]]
    d, _ = diff_tables(own_files(BASE), own_files(after, 1), by="file")
    assert d.height == 10 and d["significant"].all()
    assert (d["counts_changed"] == "read_bytes").all()
    assert explain.explain(d, "file", top=1)[0].endswith(
        "with bytes +100% (976.6 KiB → 1.9 MiB)")


def test_sampled_profiles_do_not_talk_about_calls():
    def functions(tsub, ncall):
        return pl.DataFrame({"item": ["m:f"], "executions": [10.0], "wall_s": [tsub],
                             "ncall": [ncall], "ttot_s": [tsub]})

    d = compare.diff(functions(1.0, 100), functions(3.0, 300), by="function")
    assert explain.explain(d, "function") == [
        "`m:f`: exclusive time +2.000 s (+200%), 3.0× the calls (100 → 300)"]
    d = compare.diff(functions(1.0, 100), functions(3.0, 300), by="function", exact_calls=False)
    assert explain.explain(d, "function", call_counts=False) == []  # samples are no count
    sampled = {"facts": {"collector_options": {"profile": "sample"}}}
    assert not compare.exact_call_counts(sampled)
    assert compare.exact_call_counts({"facts": {"collector_options": {"profile": "yappi"}}})
    assert compare.exact_call_counts({"source_format": "mofka-csv", "facts": {}})


def test_new_and_vanished_prefixes_are_said_so():
    after = [("load", 10, 0.2, 0.01, 1e6, 0.15), *BASE[1:3], ("fresh", 10, 0.3, 0.0, 0.0, 0.0)]
    lines = explain.explain(compare_runs(BASE, after), "prefix")
    assert lines[0].startswith("`fresh`: ") and lines[0].endswith(
        "— new in this run (10 executions)")
    assert any(line.startswith("`tiny`: ") and line.endswith(
        "— absent from this run (10 executions before)") for line in lines)


def test_several_runs_per_side_average_counts_and_keep_their_range():
    runs = [compare.profile(run_tables(BASE, s), "prefix") for s in range(2)]
    runs[1] = runs[1].with_columns(transfer_bytes=pl.when(pl.col("item") == "load")
                                   .then(1e6).otherwise(0.0))
    mean = compare.mean_profile(runs)
    load = mean.filter(pl.col("item") == "load").row(0, named=True)
    assert load["transfer_bytes"] == 5e5 and load["transfer_bytes_range"] == 1e6
    # a count moving within its run-to-run range is not named
    after = compare.mean_profile([compare.profile(run_tables(BASE, s), "prefix")
                                  for s in (2, 3)]).with_columns(
        transfer_bytes=pl.when(pl.col("item") == "load").then(8e5).otherwise(0.0))
    d = compare.diff(mean, after)
    assert not d["significant"].any()


def test_setup_differences_are_listed_concurrency_first():
    diffs = compare.setup_differences(
        {"source_format": "run-folder", "facts": {"nthreads": 4, "command": "a"}},
        {"source_format": "run-folder", "facts": {"nthreads": 8, "command": "b"}})
    assert diffs == ["nthreads: 4 → 8", "command: a → b"]


def test_setup_differences_name_the_command_and_each_changed_entry():
    before = {"facts": {"command": "python job.py --images 4", "versions": {"dask": "1", "x": "2"},
                        "job_environment": {}},
              "io": {"segments_by_method": {"exact-thread": 3}}}
    after = {"facts": {"command": "python job.py --images 4 --size 128",
                       "versions": {"dask": "1", "x": "3"}, "job_environment": {"OMP": "1"}},
             "io": {"segments_by_method": {"exact-thread": 3, "none": 1}}}
    assert compare.setup_differences(before, after) == [
        "versions.x: 2 → 3",
        "command: python job.py --images 4 → python job.py --images 4 --size 128",
        "job_environment.OMP: (none) → 1",
        "I/O attribution methods: exact-thread → exact-thread, none"]


def test_compare_md_writes_one_kind_of_minus():
    from correlate.reports.compare import _dbytes, _ds

    assert _dbytes(-15.8 * 2**20) == "-15.8 MiB" and _ds(-3.669) == "-3.669"


def test_work_lost_with_a_dead_worker_is_named_in_the_compare():
    # GIVEN an after run where a worker died holding 4 gauss results: those 4 executions are
    # lost (status lost) and ran again, 14 runs instead of 10
    before = run_tables(BASE)
    after = run_tables([*BASE[:1], ("gauss", 14, 0.3, 0.28, 0.0, 0.0), *BASE[2:]], seed=1)
    lost = pl.col("key").is_in([f"gauss-{i}" for i in range(4)])
    after["tasks"] = after["tasks"].with_columns(
        status=pl.when(lost).then(pl.lit("lost")).otherwise(pl.lit("ok")))
    d, _ = diff_tables(before, after)
    gauss = d.filter(pl.col("item") == "gauss").row(0, named=True)
    assert (gauss["lost_before"], gauss["lost_after"]) == (0.0, 4.0)
    assert "lost" in gauss["counts_changed"]
    assert "executions lost with a worker that died 0 → 4 (their results recomputed)" in dict(
        explain.explanations(d, "prefix"))["gauss"]
    assert d.filter(pl.col("item") != "gauss")["lost_after"].sum() == 0
    totals = explain.totals_line(compare.profile(before, "prefix"),
                                 compare.profile(after, "prefix"), d)
    assert "Of them lost with a worker that died (their results recomputed): 0 → 4." in totals
