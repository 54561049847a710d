"""The trace's arrivals process: data that entered Dask from outside (``arrivals``,
``arrival_steps``; docs/in-situ.md), drawn apart from the workers' tracks.

Tracks: "steps: arrivals" (a slice per step from its first to its last arrival), "steps:
analytics after the last arrival" (a slice per step from its last arrival to the end of the
tasks that used its keys: the lag), then one track per sender (its rank, else its client) with
an instant per key that arrived (key, step, bytes, worker, the scatter call's duration).
"""

from __future__ import annotations

import polars as pl

from correlate.reports.trace.encode import encode, metadata, on_track, us

#: trace pid of the arrivals process (beside the notes process, before the workers)
ARRIVALS_PID = 999_998
SPREAD_TID, LAG_TID, FIRST_SENDER_TID = 1, 2, 10


def _sender() -> pl.Expr:
    return pl.coalesce(pl.format("sender rank {}", pl.col("rank")),
                       pl.format("sender {}", pl.col("client")), pl.lit("sender unknown"))


def first_time(arrivals: pl.DataFrame) -> int | None:
    first = arrivals.get_column("time_ns").min()
    return None if first is None else int(first)  # type: ignore[arg-type]


def arrival_events(arrivals: pl.DataFrame, steps: pl.DataFrame, t0: int) -> list[pl.DataFrame]:
    """The arrivals process's metadata and events, encoded as ``perfetto`` does (empty list:
    no arrivals)."""
    if arrivals.is_empty():
        return []
    senders = (arrivals.select(name=_sender()).unique().sort("name")
               .with_row_index("tid_t", offset=FIRST_SENDER_TID)
               .with_columns(pl.col("tid_t").cast(pl.Int64)))
    tracks = pl.concat([
        pl.DataFrame({"tid_t": [SPREAD_TID, LAG_TID],
                      "name": ["steps: arrivals (first → last)",
                               "steps: analytics after the last arrival"]},
                     schema_overrides={"tid_t": pl.Int64}),
        senders.select("tid_t", "name")]).with_columns(pid_t=pl.lit(ARRIVALS_PID, pl.Int64))
    proc = pl.DataFrame({"pid_t": [ARRIVALS_PID], "name": ["data from outside Dask (arrivals)"],
                         "sort_index": [0]}, schema_overrides={"pid_t": pl.Int64})
    pid, tid = pl.col("pid_t"), pl.col("tid_t")
    keys = arrivals.with_columns(name=_sender()).join(senders, on="name").with_columns(
        pid_t=pl.lit(ARRIVALS_PID, pl.Int64), ts_t=us("time_ns", t0), dur_t=pl.lit(0.0))
    instants = encode(keys, 4, name=pl.col("key"), cat=pl.lit("arrival"), ph=pl.lit("i"),
                          s=pl.lit("t"), ts=pl.col("ts_t"), pid=pid, tid=tid,
                          args=pl.struct("key", "step", "nbytes", "worker", "rank", "client",
                                         "client_address", "send_s",
                                         source=pl.col("source").cast(pl.String)))
    spread = steps.with_columns(s=pl.col("first_ns"), e=pl.col("last_ns"),
                                tid=pl.lit(SPREAD_TID, pl.Int64))
    lag = steps.drop_nulls("analytics_end_ns").with_columns(
        s=pl.col("last_ns"), e=pl.max_horizontal("analytics_end_ns", "last_ns"),
        tid=pl.lit(LAG_TID, pl.Int64))
    slices = []
    for rows, args in ((spread, pl.struct("keys", "senders", "nbytes", "spread_s",
                                          "last_rank", "last_client")),
                       (lag, pl.struct("lag_s", "analytics_tasks", "wait_external_s"))):
        slices.append(encode(on_track(rows, ARRIVALS_PID, t0), 1, name=pl.col("step"), cat=pl.lit("arrivals"),
                                 ph=pl.lit("X"), ts=pl.col("ts_t"), dur=pl.col("dur_t"),
                                 pid=pid, tid=tid, args=args))
    return [metadata(proc, tracks), instants, *slices]
