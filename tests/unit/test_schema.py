"""The schema module's helpers."""

from __future__ import annotations


def test_sorted_for_output_equals_a_full_sort_with_ties_broken_by_strings():
    import random

    import polars as pl

    import correlate.schema.outputs  # noqa: F401
    from correlate.schema import TABLES, sorted_for_output

    rng = random.Random(3)
    n = 5000
    df = pl.DataFrame({
        "time_ns": [rng.choice([None, *range(300)]) for _ in range(n)],
        "side": [rng.choice(["scheduler", "worker"]) for _ in range(n)],
        "key": [rng.choice(["a", "b", "c", None]) for _ in range(n)],
        "start": [rng.choice(["x", "y"]) for _ in range(n)],
        "finish": [rng.choice(["p", "q", None]) for _ in range(n)],
        "row": range(n)})
    keys = list(TABLES["events"].sort_by)
    for frame in (df, df.drop_nulls(), df.with_columns(side=pl.lit("worker"))):
        expected = frame.sort(keys, nulls_last=True, maintain_order=True)
        assert sorted_for_output(frame, TABLES["events"]).equals(expected)
    segments = pl.DataFrame({"host": ["h"] * n, "pid": [rng.randrange(3) for _ in range(n)],
                             "thread_id": [rng.randrange(4) for _ in range(n)],
                             "start_ns": [rng.randrange(100) for _ in range(n)],
                             "seg_id": range(n)})
    expected = segments.sort(TABLES["segments"].sort_by, maintain_order=True)
    assert sorted_for_output(segments, TABLES["segments"]).equals(expected)
    functions = pl.DataFrame({  # two numeric keys, then strings; few ties, some at the ends
        "execution_id": [rng.randrange(n) for _ in range(n)],
        "tsub_s": [rng.choice([0.5, 0.25, *[rng.random() for _ in range(5)]]) for _ in range(n)],
        "file": [rng.choice(["f", "g", None]) for _ in range(n)],
        "line": [rng.randrange(3) for _ in range(n)],
        "name": [rng.choice(["m", "n"]) for _ in range(n)], "row": range(n)})
    keys = list(TABLES["task_functions"].sort_by)
    for frame in (functions, functions.head(1), functions.filter(pl.col("tsub_s") < 0.3)):
        expected = frame.sort(keys, nulls_last=True, maintain_order=True)
        assert sorted_for_output(frame, TABLES["task_functions"]).equals(expected)
