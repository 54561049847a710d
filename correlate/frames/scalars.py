"""Python numbers out of polars scalars.

Polars types ``Series.sum()``, ``.max()``, ``.item()`` and friends as the union of every
dtype's Python value (int, float, Decimal, date, str, bytes, list, ...). The columns we add up
or take the extremes of are numeric; these functions say so once, checked when they run, so a
wrong column fails loudly here instead of as an odd number in a report.
"""

from __future__ import annotations

from decimal import Decimal
from numbers import Integral, Real

import polars as pl


def number(x: object) -> float | None:
    """A numeric scalar as a float; a null (not measured) stays None, never 0."""
    if x is None:
        return None
    if isinstance(x, Real | Decimal):  # Real: int, float and numpy's numbers too
        return float(x)
    raise TypeError(f"expected a number, got {type(x).__name__}: {x!r}")


def integer(x: object) -> int | None:
    """An integer scalar (an integer column's sum, min, max or item) as an int; a null stays
    None. A float is refused rather than truncated."""
    if x is None:
        return None
    if isinstance(x, Integral):  # int and numpy's integers
        return int(x)
    raise TypeError(f"expected an integer, got {type(x).__name__}: {x!r}")


def total(column: pl.Series) -> float:
    """``column.sum()`` as a float. Polars adds nulls as 0 and sums an empty column to 0, so a
    caller for whom an unmeasured column is unknown, not 0, checks that first."""
    return float(column.sum())


def rounded(x: object, nd: int = 9) -> float | None:
    """A numeric scalar rounded to ``nd`` decimals for JSON; a null stays None."""
    v = number(x)
    return None if v is None else round(v, nd)


def count(x: object) -> int | float | None:
    """A byte or operation count: an integer when whole (37748736, not 37748736.0); window-split
    attribution can give a task a fraction of a segment's bytes, kept as a float."""
    r = rounded(x)
    return int(r) if r is not None and r.is_integer() else r
