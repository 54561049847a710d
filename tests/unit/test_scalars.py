"""Python numbers out of polars scalars (correlate/frames/scalars.py)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import polars as pl
import pytest

from correlate.frames.scalars import count, integer, number, rounded, total


def test_a_null_stays_unknown_never_zero():
    empty = pl.Series("x", [], dtype=pl.Int64)
    nulls = pl.Series("x", [None, None], dtype=pl.Float64)
    for x in (empty.max(), nulls.max(), nulls.min()):
        assert number(x) is None
        assert integer(x) is None
        assert rounded(x) is None
        assert count(x) is None


def test_numbers_of_every_numeric_dtype_polars_and_numpy_return():
    assert number(pl.Series([1, 2], dtype=pl.Int64).sum()) == 3.0
    assert number(pl.Series([0.5, 0.25]).max()) == 0.5
    assert number(pl.Series([Decimal("1.25")], dtype=pl.Decimal(10, 2)).sum()) == 1.25
    assert number(np.int64(7)) == 7.0 and integer(np.uint32(7)) == 7
    assert integer(pl.Series([3, 9], dtype=pl.UInt16).max()) == 9


def test_a_count_is_an_integer_when_whole_and_keeps_its_fraction_otherwise():
    assert count(pl.Series([1.5, 2.5]).sum()) == 4 and isinstance(count(4.0), int)
    assert count(1 / 3) == round(1 / 3, 9)
    assert rounded(2 / 3, 4) == 0.6667


def test_a_column_that_is_no_number_fails_loudly():
    with pytest.raises(TypeError, match="expected a number, got date"):
        number(pl.Series([dt.date(2024, 1, 1)]).max())
    with pytest.raises(TypeError, match="expected a number, got str"):
        rounded(pl.Series(["a"]).max())
    with pytest.raises(TypeError, match="expected an integer, got float"):
        integer(2.0)  # refused, not truncated


def test_total_is_polars_sum_as_a_float():
    assert total(pl.Series([1, None, 2], dtype=pl.Int64)) == 3.0
    assert total(pl.Series([], dtype=pl.Float64)) == 0.0
