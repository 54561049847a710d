"""``group_agg``: the aggregates of ``group_by``, with float sums the same in every run."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from correlate.frames.grouping import group_agg


def test_sums_over_few_large_groups_are_the_same_in_every_run():
    # GIVEN a million rows in a few groups (per worker, per prefix), one group a null key
    rng = np.random.default_rng(1)
    df = pl.DataFrame({"g": rng.integers(0, 8, 1_000_000), "x": rng.random(1_000_000) * 1e3})
    df = df.with_columns(g=pl.when(pl.col("g") != 0).then("g"))
    # WHEN summed eight times
    runs = [group_agg(df, ["g"], x=pl.col("x").sum(), n=pl.len()) for _ in range(8)]
    # THEN the same floats each time, the groups of group_by in key order with nulls last
    assert all(r.equals(runs[0]) for r in runs)
    plain = df.group_by("g").agg(x=pl.col("x").sum(), n=pl.len()).sort("g", nulls_last=True)
    assert runs[0].select("g", "n").equals(plain.select("g", "n"))
    assert runs[0]["x"].to_list() == pytest.approx(plain["x"].to_list(), rel=1e-12)


def test_several_keys_and_an_empty_frame():
    df = pl.DataFrame({"a": ["x", "x", "y", None], "b": [1, 1, 2, 2], "v": [1.0, 2.0, 3.0, 4.0]})
    got = group_agg(df, ["a", "b"], v=pl.col("v").sum())
    assert got.rows() == [("x", 1, 3.0), ("y", 2, 3.0), (None, 2, 4.0)]
    assert group_agg(df.clear(), ["a", "b"], v=pl.col("v").sum()).columns == ["a", "b", "v"]


def test_only_the_columns_read_are_ordered_and_any_column_can_still_be_read():
    # GIVEN a table with columns no aggregation reads (task_files: keys and paths) beside the
    # ones summed
    df = pl.DataFrame({"m": ["b", "a", "b"], "path": ["/x", "/y", "/z"], "bytes": [1.0, 2.0, 4.0],
                       "ops": [1, 1, 2], "key": ["k1", "k2", "k3"]})
    # WHEN grouped with plain aggregations, with an aggregation of no column, and with a
    # wildcard (which reads columns it does not name)
    got = group_agg(df, ["m"], bytes=pl.col("bytes").sum(), n=pl.len(),
                    last=pl.col("path").last())
    wild = group_agg(df.select("m", "bytes", "ops"), ["m"], total=pl.sum_horizontal(
        pl.exclude("m")).sum())
    # THEN the same groups and sums as group_by, in key order
    assert got.rows() == [("a", 2.0, 1, "/y"), ("b", 5.0, 2, "/z")]
    assert wild.rows() == [("a", 3.0), ("b", 8.0)]


def test_each_aggregation_on_its_own_columns_gives_the_whole_frame_sorted_s_floats():
    # GIVEN float columns in a few large groups, one aggregation reading two columns
    rng = np.random.default_rng(2)
    df = pl.DataFrame({"g": rng.integers(0, 5, 300_000), "x": rng.random(300_000) * 1e3,
                       "y": rng.random(300_000), "other": rng.random(300_000)})
    df = df.with_columns(g=pl.when(pl.col("g") != 3).then("g"))
    aggs = {"x": pl.col("x").sum(), "y": pl.col("y").filter(pl.col("x") > 500).sum(),
            "n": pl.len(), "last": pl.col("y").last()}
    # WHEN grouped, and the whole frame sorted by the key and aggregated in one pass
    got = group_agg(df, ["g"], **aggs)
    ordered = df.sort("g", nulls_last=True, maintain_order=True).with_columns(
        r=pl.col("g").rle_id()).set_sorted("r")
    whole = ordered.group_by("r", maintain_order=True).agg(pl.col("g").first(), **aggs)
    # THEN the same floats to the last bit, the same groups in the same order
    assert got.equals(whole.drop("r"))
