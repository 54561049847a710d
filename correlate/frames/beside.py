"""Another table's columns put beside a frame's rows: a left join that copies only the columns
it adds. A join of a big frame with a small one copies every column of the big one into its
result (the executions of a big run, once per join); ``beside`` joins only the frame's join
columns and hands back the side's columns in the frame's row order, to be added with
``hstack`` or ``with_columns`` (which share the frame's columns instead of copying them)."""

from __future__ import annotations

import polars as pl


def beside(frame: pl.DataFrame, side: pl.DataFrame, on: list[str],
           nulls_equal: bool = False) -> list[pl.Series]:
    """``side``'s columns but ``on``, a row per row of ``frame`` in its order (null where
    ``side`` has no row of its ``on``). ``side`` holds at most one row per ``on`` (checked:
    polars raises otherwise), rows whose ``on`` has a null aside unless ``nulls_equal`` (they
    join nothing: a join's validation would count them as one key)."""
    if side.is_empty():  # (a join would still hash every row of ``frame``'s ``on``)
        return side.drop(on).clear(frame.height).get_columns()
    if not nulls_equal and side.select(pl.any_horizontal(pl.col(on).is_null()).any()).item():
        side = side.drop_nulls(on)
    return frame.select(on).join(side, on=on, how="left", nulls_equal=nulls_equal,
                                 maintain_order="left", validate="m:1").drop(on).get_columns()


def with_beside(frame: pl.DataFrame, side: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """``frame`` with ``beside(frame, side, on)``."""
    return frame.hstack(beside(frame, side, on))
