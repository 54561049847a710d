"""A table made a piece at a time is held only until its pieces pass a bound, then spilled
(``spill.Spool``): read back, the same rows in the same order, Categorical columns as they
were."""

from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

from correlate.frames.spill import Spool


def _piece(start: int, n: int) -> pl.DataFrame:
    return pl.DataFrame({"execution_id": range(start, start + n),
                         "path": pl.Series([f"/f{i % 2}" for i in range(n)],
                                           dtype=pl.Categorical)})


def test_pieces_past_the_bound_are_spilled_and_read_back_in_order() -> None:
    spool = Spool(rows=5)
    pieces = [_piece(0, 3), _piece(3, 3), _piece(6, 3), _piece(9, 1)]
    for p in pieces:
        spool.add(p)
    # (the first two passed the bound together: spilled; the last two held, 4 rows)
    assert len(spool.scans) == 1
    assert [p.height for p in spool.held] == [3, 1]
    assert_frame_equal(spool.lazy().collect(), pl.concat(pieces))


def test_pieces_within_the_bound_stay_in_memory() -> None:
    spool = Spool(rows=100)
    spool.add(_piece(0, 3))
    assert not spool.scans
    assert_frame_equal(spool.lazy().collect(), _piece(0, 3))
