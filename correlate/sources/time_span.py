"""Impossible times: rows whose recorded instants lie far outside their process's own span.

A damaged data buffer (a bit flip, a block of another file after a crash of the file system)
still decodes: its bytes read as a time of any value, years from the run. Such a row is not
used: it is counted as rejected with the reason. The rule holds for any run: an instant
(``INSTANTS``) is possible when it lies within ``MARGIN_NS`` of its process's span, from the
earliest start recorded for it (proc.json ``started_ns``, the manifest's ``started_ns``) to the
latest end (its closing record's ``closed_ns``, the manifest's ``ended_ns``, its files'
modification times: nothing in a file was recorded after the file was last written), and never
before ``FLOOR_NS``; a duration (``DURATIONS``, seconds) is possible when it is a finite number
no longer, in either sign, than that span with its margins. The margin is wide: clocks of
other hosts (``reported_*`` times carry the scheduler's offset) and clock steps stay far inside
it, while a garbage 64-bit value lands anywhere in ±292 years (within a day of the run about
once in 100,000)."""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.schema.run import DURATIONS, INSTANTS

MARGIN_NS = 86_400 * 10**9  # one day
FLOOR_NS = 946_684_800 * 10**9  # 2000-01-01, before any run
REASON = ("impossible time: an instant more than a day before its process started or after its "
          "last write, or a duration not a number or longer than that (a damaged data buffer)")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def span(starts: list[Any], ends: list[Any]) -> tuple[int, int | None]:
    """(earliest, latest) possible instant of a process from the start and end times recorded
    for it (values that are not integers are left out); latest None: no end known."""
    lo = [v for v in map(_int, starts) if v is not None]
    hi = [v for v in map(_int, ends) if v is not None]
    return (max(FLOOR_NS, min(lo) - MARGIN_NS) if lo else FLOOR_NS,
            max(hi) + MARGIN_NS if hi else None)


def possible(frame: pl.DataFrame | pl.Schema, lo: pl.Expr, hi: pl.Expr) -> pl.Expr | None:
    """True for a row whose instants (null ones aside) are all within [lo, hi] (``hi`` null:
    no upper bound); None when the frame (or schema) has no instant column."""
    names = frame.names() if isinstance(frame, pl.Schema) else frame.columns
    columns = [c for c in INSTANTS if c in names]
    durations = [c for c in DURATIONS if c in names]
    if not columns and not durations:
        return None
    longest = (hi - lo).cast(pl.Float64) / 1e9
    return pl.all_horizontal(
        *(pl.col(c).is_null() | ((pl.col(c) >= lo) & (hi.is_null() | (pl.col(c) <= hi)))
          for c in columns),
        *(pl.col(c).is_null() | (pl.col(c).is_finite()
                                 & (hi.is_null() | (pl.col(c).abs() <= longest)))
          for c in durations))


def split_scan(frame: pl.LazyFrame, lo: int, hi: int | None) -> tuple[pl.LazyFrame, int]:
    """``split`` for a lazy scan (a large table of run formats 1 and 2): the rows of
    impossible times are counted now, reading the instant columns only, and left out when the
    scan is read."""
    ok = possible(frame.collect_schema(), pl.lit(lo, pl.Int64), pl.lit(hi, pl.Int64))
    if ok is None:
        return frame, 0
    bad = frame.select((~ok).sum()).collect().item()
    return (frame.filter(ok) if bad else frame), bad


def split(frame: pl.DataFrame, lo: pl.Expr, hi: pl.Expr, by: str | None = None
          ) -> tuple[pl.DataFrame, dict[Any, int]]:
    """``frame`` without its rows of impossible times, and how many were left out (per value
    of the column ``by``, or under None)."""
    ok = possible(frame, lo, hi)
    if ok is None or frame.is_empty():
        return frame, {}
    marked = frame.with_columns(_possible=ok)
    bad = marked.filter(~pl.col("_possible"))
    if bad.is_empty():
        return frame, {}
    counts = (dict(bad.group_by(by).len().iter_rows()) if by is not None
              else {None: bad.height})
    return marked.filter(pl.col("_possible")).drop("_possible"), counts


__all__ = ["FLOOR_NS", "MARGIN_NS", "REASON", "possible", "span", "split", "split_scan"]
