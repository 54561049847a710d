"""``beside``: a side table's columns in a frame's row order, as a left join gives them."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.frames.beside import beside, with_beside

FRAME = pl.DataFrame({"key": ["b", "a", "c", None], "worker": ["w1", "w2", "w1", "w1"],
                      "n": [1, 2, 3, 4]},
                     schema={"key": pl.Categorical, "worker": pl.String, "n": pl.Int64})
KINDS = pl.Enum(["x", "y"])


def test_each_row_gets_its_keys_columns_and_null_where_the_side_has_none():
    side = pl.DataFrame({"key": ["a", "b", None], "s": [1.5, 2.5, 9.0], "kind": ["x", "y", "y"]},
                        schema={"key": pl.Categorical, "s": pl.Float64, "kind": KINDS})
    got = with_beside(FRAME, side, ["key"])
    assert got.select("s", "kind").rows() == [(2.5, "y"), (1.5, "x"), (None, None),
                                               (None, None)]  # (a null key joins nothing)
    both = beside(FRAME, side, ["key"], nulls_equal=True)
    assert [c.to_list() for c in both] == [[2.5, 1.5, None, 9.0], ["y", "x", None, "y"]]


def test_an_empty_side_gives_null_columns_of_its_types():
    side = pl.DataFrame(schema={"key": pl.Categorical, "worker": pl.String, "s": pl.Float64,
                                "kind": KINDS})
    got = beside(FRAME, side, ["key", "worker"], nulls_equal=True)
    assert [(c.name, c.dtype, c.len(), c.null_count()) for c in got] == [
        ("s", pl.Float64, 4, 4), ("kind", KINDS, 4, 4)]
    assert with_beside(FRAME.clear(), side, ["key", "worker"]).height == 0


def test_a_side_with_two_rows_of_one_key_is_refused():
    side = pl.DataFrame({"key": ["a", "a"], "s": [1.0, 2.0]},
                        schema={"key": pl.Categorical, "s": pl.Float64})
    with pytest.raises(pl.exceptions.ComputeError):
        beside(FRAME, side, ["key"])
