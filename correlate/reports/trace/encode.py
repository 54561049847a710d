"""The trace's event encoders, which every track uses: events are polars rows (sort columns
``pid_t``, ``tid_t``, ``ts_t``, ``dur_t`` and the event as its JSON text), times in µs since the
trace's ``t0``."""

from __future__ import annotations

import polars as pl


def us(col: str | pl.Expr, t0: int) -> pl.Expr:
    """ns on the run timeline → µs since ``t0`` (to the ns)."""
    e = pl.col(col) if isinstance(col, str) else col
    return ((e - t0).cast(pl.Float64) / 1000.0).round(3)


def encode(df: pl.DataFrame, order: int, **fields: pl.Expr | str) -> pl.DataFrame:
    """One row per event: sort columns + the event as a JSON string."""
    return df.select(
        pid=pl.col("pid_t"), tid=pl.col("tid_t"), ts=pl.col("ts_t"),
        dur=pl.col("dur_t"), order=pl.lit(order, pl.Int32),
        json=pl.struct(*(pl.col(v).alias(k) if isinstance(v, str) else v.alias(k)
                         for k, v in fields.items())).struct.json_encode())


def metadata(procs: pl.DataFrame, tracks: pl.DataFrame) -> pl.DataFrame:
    """process_name / process_sort_index / thread_name / thread_sort_index events: ``procs``
    has ``pid_t``, ``name``, ``sort_index``; ``tracks`` ``pid_t``, ``tid_t``, ``name`` (a
    track sorts by its tid)."""
    zero = {"ts_t": pl.lit(0.0), "dur_t": pl.lit(0.0)}
    p = procs.with_columns(tid_t=pl.lit(0, pl.Int64), **zero)
    t = tracks.with_columns(**zero)
    pid, tid, meta = pl.col("pid_t"), pl.col("tid_t"), pl.lit("M")
    return pl.concat([
        encode(p, 0, name=pl.lit("process_name"), ph=meta, pid=pid, tid=tid,
               args=pl.struct(name=pl.col("name"))),
        encode(p, 0, name=pl.lit("process_sort_index"), ph=meta, pid=pid, tid=tid,
               args=pl.struct(sort_index=pl.col("sort_index"))),
        encode(t, 0, name=pl.lit("thread_name"), ph=meta, pid=pid, tid=tid,
               args=pl.struct(name=pl.col("name"))),
        encode(t, 0, name=pl.lit("thread_sort_index"), ph=meta, pid=pid, tid=tid,
               args=pl.struct(sort_index=tid))])


def no_overlap(df: pl.DataFrame, track: list[str]) -> pl.DataFrame:
    """Clip ``s``/``e`` (ns) so that slices of one track never partly overlap."""
    df = df.sort(*track, "s", "e")
    prev = pl.col("e").cum_max().shift(1).over(track)
    df = df.with_columns(s=pl.max_horizontal("s", prev.fill_null(pl.col("s"))))
    return df.with_columns(e=pl.max_horizontal("e", "s"))


def on_track(rows: pl.DataFrame, pid: int, t0: int) -> pl.DataFrame:
    """Rows with ``s``, ``e`` (ns) and ``tid`` as slices of process ``pid``: clipped so that
    they never partly overlap on their track, with their sort columns."""
    return no_overlap(rows, ["tid"]).with_columns(
        pid_t=pl.lit(pid, pl.Int64), tid_t="tid", ts_t=us("s", t0),
        dur_t=(us("e", t0) - us("s", t0)).round(3))
