"""``RunFrames.table``: a lazy table read from many parts comes back in one chunk per column."""

from __future__ import annotations

import polars as pl

from correlate.schema import TABLES
from correlate.sources.frames import RunFrames


def _parts_tagged_with_one_host(n_parts: int, rows: int) -> pl.LazyFrame:
    """Like a run folder's transitions: one scan per part, each tagged with its process."""
    empty = TABLES["transitions"].empty()
    return pl.concat([
        pl.LazyFrame({"local_time_ns": range(i * rows, (i + 1) * rows),
                      "key": [f"k-{i}-{j}" for j in range(rows)]})
        .with_columns(host=pl.lit("node0"), pid=pl.lit(100 + i, pl.Int64))
        for i in range(n_parts)]).select(
        *(pl.col(c).cast(empty.schema[c]) for c in ("local_time_ns", "key", "host", "pid")))


def test_table_is_read_whole_in_one_chunk_per_column() -> None:
    lazy = _parts_tagged_with_one_host(n_parts=5, rows=1000)
    frames = RunFrames(transitions=lazy)
    got = frames.table("transitions", ["local_time_ns", "key", "host", "pid"])
    assert got.n_chunks("all") == [1, 1, 1, 1]
    assert got.equals(lazy.collect())
    assert got.get_column("pid").unique().sort().to_list() == [100, 101, 102, 103, 104]


def test_a_value_shared_by_every_row_is_not_spelled_out_per_row() -> None:
    lazy = _parts_tagged_with_one_host(n_parts=5, rows=200_000)
    got = RunFrames(transitions=lazy).table("transitions", ["local_time_ns", "host"])
    # a million times "node0" as string views would be 16 MB; kept as one value it is nothing
    assert got.estimated_size() < 1_000_000 * 8 + 1_000_000
    assert got.get_column("host").unique().to_list() == ["node0"]


def test_rows_kept_by_a_mask_are_the_frame_itself_when_every_row_is() -> None:
    from correlate.frames.rows import kept

    df = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    assert kept(df, pl.Series([True, True, True])) is df  # (not a copy of every column)
    assert kept(df, pl.Series([True, False, True])).equals(df.filter(pl.Series([True, False,
                                                                                True])))
    assert kept(df, pl.Series([False] * 3)).is_empty()
