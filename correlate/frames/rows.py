"""A frame's rows kept by a mask: the frame itself when the mask keeps every row, since a
polars filter that keeps every row still copies every column (a big run's executions or
tasks: gigabytes for nothing)."""

from __future__ import annotations

import polars as pl


def kept(frame: pl.DataFrame, keep: pl.Series) -> pl.DataFrame:
    """The rows of ``frame`` where ``keep`` (a Boolean per row) is true."""
    return frame if keep.all() else frame.filter(keep)
