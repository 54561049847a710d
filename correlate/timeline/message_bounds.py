"""Bounds on a worker's clock from the task messages themselves (NTP-style, by causality).

For a task the scheduler sent once and got back once, on the scheduler's clock ``s`` and the
worker's clock ``w``, with ``offset = scheduler clock − worker clock``:

- the scheduler's →processing hook runs before it sends the task, the worker's
  released→waiting hook after it received it:  ``offset ≥ s_send − w_receive``;
- the worker's executing→memory hook runs before it reports the result, the scheduler's
  processing→memory hook after it received the report:  ``offset ≤ s_done − w_done``.

Over every such task of a worker process the tightest pair bounds its offset with certainty
(one-way message latencies make the interval's width), unlike Dask's ``scheduler_delay``,
which assumes symmetric round trips and is often read once, at registration, when they are not.
Tasks sent more than once (stolen, retried, rescheduled) are left out: a later send can follow
an earlier receipt.
"""

from __future__ import annotations

import polars as pl


def message_bounds(transitions: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Per worker process: ``host, pid, lower_ns, upper_ns, pairs`` (tasks used)."""
    # keys as integers, so that the joins below compare no strings: a Categorical key (the
    # engine's) as its code, a string as its 64-bit hash (a collision would only drop or pair
    # one task of millions, inside a bound that holds for every other)
    lf = transitions.lazy()
    key = (pl.col("key").to_physical() if isinstance(lf.collect_schema()["key"], pl.Categorical)
           else pl.col("key").hash())
    t = lf.select("side", key, "worker", "host", "pid", "local_time_ns", "start", "finish")
    sched = t.filter(pl.col("side") == "scheduler")
    work = t.filter(pl.col("side") == "worker")
    sent = (sched.filter(pl.col("finish") == "processing").group_by("key")
            .agg(s_send=pl.col("local_time_ns").first(), n=pl.len()).filter(pl.col("n") == 1))
    back = (sched.filter((pl.col("start") == "processing") & (pl.col("finish") == "memory"))
            .group_by("key").agg(pl.col("worker").first(), s_done=pl.col("local_time_ns").first(),
                                 n=pl.len())
            .filter((pl.col("n") == 1) & pl.col("worker").is_not_null()))
    received = (work.filter((pl.col("start") == "released") & (pl.col("finish") == "waiting"))
                .group_by("worker", "key").agg(pl.col("host").first(), pl.col("pid").first(),
                                               w_recv=pl.col("local_time_ns").min()))
    done = (work.filter(pl.col("start").is_in(["executing", "long-running"])
                        & (pl.col("finish") == "memory"))
            .group_by("worker", "key").agg(w_done=pl.col("local_time_ns").max()))
    pairs = (back.select("key", "worker", "s_done").join(sent.select("key", "s_send"), on="key")
             .join(received, on=["worker", "key"]).join(done, on=["worker", "key"]))
    return (pairs.group_by("host", "pid")
            .agg(lower_ns=(pl.col("s_send") - pl.col("w_recv")).max(),
                 upper_ns=(pl.col("s_done") - pl.col("w_done")).min(),
                 pairs=pl.len().cast(pl.Int64))
            .with_columns(pl.col("host").cast(pl.String))  # (Categorical in the engine)
            .sort("host", "pid").collect())


def combined(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """``message_bounds`` of the whole transitions from those of its parts by key (each
    task's pair is in one part): the tightest bounds, the tasks used added up."""
    return (pl.concat(parts).group_by("host", "pid")
            .agg(pl.col("lower_ns").max(), pl.col("upper_ns").min(), pl.col("pairs").sum())
            .sort("host", "pid"))
