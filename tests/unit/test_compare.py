"""compare: ranking and explanations over literal output tables."""

from __future__ import annotations

import polars as pl

from correlate import compare
from correlate.schema import TABLES, conform
from correlate.schema import outputs as _outputs  # noqa: F401


def run_tables(rows):
    """rows: (prefix, n, duration_s, cpu_s, read_bytes, io_time_s)."""
    recs = []
    for prefix, n, dur, cpu, rb, io in rows:
        recs += [{"execution_id": len(recs) + i, "key": f"{prefix}-{i}", "prefix": prefix,
                  "duration_s": dur, "cpu_s": cpu, "read_bytes": rb, "write_bytes": 0.0,
                  "read_ops": 1.0, "write_ops": 0.0, "io_time_s": io} for i in range(n)]
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
    assert lines[1].startswith("`load`") and "I/O time +100% with bytes +100%" in lines[1]


def test_slower_storage_is_told_apart_from_more_data():
    after = [("load", 10, 0.5, 0.01, 1e6, 0.45), *BASE[1:]]
    lines = compare.explain(compare_runs(BASE, after), "prefix")
    assert "slower storage, not more data" in lines[0]


def test_more_executions_with_unchanged_cpu_per_execution():
    after = [BASE[0], ("gauss", 30, 0.3, 0.28, 0.0, 0.0), *BASE[2:]]
    lines = compare.explain(compare_runs(BASE, after), "prefix")
    assert "3.0× the executions (10 → 30)" in lines[0]
    assert "CPU per execution unchanged" in lines[0]


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
