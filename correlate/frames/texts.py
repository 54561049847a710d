"""A function of each row's text, of a column of texts or of a Categorical one (the engine's
keys): of a Categorical column it is computed once per distinct text and given to each row by
its code, so that no text is made per row (a task's key is in many rows of a table)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl


def per_text(values: pl.Series, f: Callable[[pl.Series], pl.Series]) -> pl.Series:
    """``f`` (a row-wise function of a String series) of each row's text (of a null row:
    ``f`` of a null text), as ``f(values.cast(pl.String))`` gives it."""
    if values.dtype != pl.Categorical:
        return f(values.cast(pl.String)).alias(values.name)
    distinct = values.unique().drop_nulls()
    codes = distinct.to_physical().to_numpy()
    got = f(distinct.cast(pl.String))
    of_code = np.zeros(int(codes.max(initial=0)) + 1, got.to_numpy().dtype)
    of_code[codes] = got.to_numpy()
    out = pl.Series(values.name, of_code[values.to_physical().fill_null(0).to_numpy()],
                    dtype=got.dtype)
    if not values.has_nulls():
        return out
    of_null = f(pl.Series([None], dtype=pl.String))
    return pl.select(pl.when(values.is_not_null()).then(out).otherwise(pl.lit(of_null))
                     ).to_series().alias(values.name)


def as_codes(frame: pl.DataFrame, names: tuple[str, ...]) -> pl.DataFrame:
    """``frame`` with its String columns of ``names`` as Categorical: a big table the engine
    keeps for the summary and the findings holds a code per row instead of a text (a task's
    group, its prefix), the texts once in polars' categories."""
    texts = [name for name in names if frame.schema.get(name) == pl.String]
    return frame.with_columns(pl.col(texts).cast(pl.Categorical)) if texts else frame
