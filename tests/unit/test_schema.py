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
    expected = df.sort(keys, nulls_last=True, maintain_order=True)
    assert sorted_for_output(df, TABLES["events"]).equals(expected)
