"""Data that entered Dask from outside (in situ: a simulation scattering its blocks, the DEISA
fork's external tasks): when each key arrived, from whom, in which step, and how long the
analytics that used a step ended after its last arrival. Pure functions over canonical frames;
see docs/in-situ.md.

Every time here is the scheduler's clock, which is the run timeline (``events``): the
scheduler learns of a scattered key in ``Scheduler.update_data`` and of an external task when
it reaches ``memory``; the tasks' ends come from ``tasks.stop_ns`` (aligned onto it).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.frames.prefixes import key_split_groups
from correlate.schema import TABLES, conform


def external_state_arrivals(transitions: pl.DataFrame | pl.LazyFrame, keys: pl.DataFrame
                            ) -> pl.DataFrame:
    """``keys`` (key, t_arrival: ``waits.external_arrivals``) as arrival rows: the worker and
    size the scheduler's first transition to memory carried (null where it carried none)."""
    if keys.is_empty():
        return TABLES["arrivals"].empty().select("key", "nbytes", "time_ns", "worker", "client",
                                                 "client_address", "source")
    wanted = keys.get_column("key").cast(pl.String).implode()
    memory = (transitions.lazy().filter((pl.col("side") == "scheduler")
                                        & (pl.col("finish") == "memory")
                                        & pl.col("key").is_in(wanted))
              .select(pl.col("key").cast(pl.String), "local_time_ns", "worker", "nbytes")
              .collect())
    first = keys.with_columns(pl.col("key").cast(pl.String)).join(
        memory, left_on=["key", "t_arrival"], right_on=["key", "local_time_ns"], how="left"
    ).unique("key", keep="first", maintain_order=True)
    return first.select("key", "nbytes", time_ns="t_arrival",
                        worker=pl.col("worker").cast(pl.String),
                        client=pl.lit(None, pl.String), client_address=pl.lit(None, pl.String),
                        source=pl.lit("external-state"))


def arrivals_table(data_arrivals: pl.DataFrame, senders: pl.DataFrame,
                   external: pl.DataFrame) -> pl.DataFrame:
    """The ``arrivals`` output table: the scheduler's record of scattered keys and the external
    tasks' arrivals (``external_state_arrivals``), each with the rank and step its sender said
    (the client's own declaration when the scatter named no rank), else the key's task group
    as its step."""
    scattered = data_arrivals.select(
        "key", "nbytes", time_ns="local_time_ns", worker="worker", client="client",
        client_address="client_address", source=pl.lit("update-data"))
    rows = pl.concat([scattered, external.select(scattered.columns)], how="diagonal_relaxed")
    if rows.is_empty():
        return TABLES["arrivals"].empty()
    notes = senders.sort("local_time_ns", maintain_order=True)
    declared = (notes.filter(pl.col("key").is_null() & pl.col("rank").is_not_null())
                .unique("client", keep="last", maintain_order=True)
                .select("client", client_rank="rank"))
    said = (notes.filter(pl.col("key").is_not_null())
            .unique(["client", "key"], keep="last", maintain_order=True)
            .select("client", "key", "step", "send_s", key_rank="rank"))
    out = (rows.join(said, on=["client", "key"], how="left")
           .join(declared, on="client", how="left"))
    out = out.with_columns(rank=pl.coalesce("key_rank", "client_rank"),
                           step=pl.coalesce("step", key_split_groups(out.get_column("key"))))
    return conform(out, TABLES["arrivals"], path="arrivals").sort(
        "time_ns", "key", "worker", nulls_last=True)


def arrival_times(arrivals: pl.DataFrame) -> pl.DataFrame:
    """key → t_arrival: when the scheduler first knew it in memory (a key scattered to several
    workers at once arrives once)."""
    return arrivals.group_by("key").agg(t_arrival=pl.col("time_ns").min())


def external_waits(arrived: pl.DataFrame, dependencies: pl.DataFrame,
                   submitted: pl.DataFrame) -> pl.DataFrame:
    """Per key (a task with inputs from outside Dask, ``arrived``: key, t_arrival): the time
    those inputs kept it waiting, from the first of them to arrive, or the task's submission
    (``submitted``: key, t_wait, its transition to waiting) if that was earlier, to the last
    one's arrival."""
    if arrived.is_empty() or dependencies.is_empty():
        return pl.DataFrame(schema={"key": pl.String, "wait_external_s": pl.Float64})
    inputs = (dependencies.select(pl.col("key").cast(pl.String),
                                  pl.col("depends_on").cast(pl.String))
              .join(arrived.with_columns(pl.col("key").cast(pl.String)),
                    left_on="depends_on", right_on="key"))
    per_task = inputs.group_by("key").agg(first=pl.col("t_arrival").min(),
                                          last=pl.col("t_arrival").max())
    per_task = per_task.join(submitted.select(pl.col("key").cast(pl.String), "t_wait"),
                             on="key", how="left")
    start = pl.min_horizontal("first", "t_wait")
    return per_task.select("key", wait_external_s=((pl.col("last") - start) * 1e-9).clip(0.0))


def steps_table(arrivals: pl.DataFrame, dependencies: pl.DataFrame, tasks: pl.DataFrame
                ) -> pl.DataFrame:
    """The ``arrival_steps`` output table: per step, its arrivals' spread across senders (a
    sender is a rank where the client said one, else a client), who came last, and the
    analytics that used them: the executions of the tasks that take one of the step's keys as
    a direct input, the last of them to end, and its lag after the step's last arrival."""
    if arrivals.is_empty():
        return TABLES["arrival_steps"].empty()
    first_of_key = arrivals.sort("time_ns", "key", "worker", nulls_last=True).unique(
        "key", keep="first", maintain_order=True)
    sender = pl.coalesce(pl.col("rank").cast(pl.String), pl.col("client"))
    per_step = first_of_key.group_by("step").agg(
        keys=pl.len(), senders=sender.drop_nulls().n_unique(),
        first_ns=pl.col("time_ns").min(), last_ns=pl.col("time_ns").max(),
        last_client=pl.col("client").sort_by("time_ns").last(),
        last_rank=pl.col("rank").sort_by("time_ns").last())
    sizes = first_of_key.group_by("step").agg(
        nbytes=pl.when(pl.col("nbytes").null_count() == 0).then(pl.col("nbytes").sum()))
    users = (dependencies.select(pl.col("key").cast(pl.String),
                                 pl.col("depends_on").cast(pl.String))
             .join(first_of_key.select("key", "step"), left_on="depends_on", right_on="key")
             .select("key", "step").unique())
    runs = (tasks.select(pl.col("key").cast(pl.String), "stop_ns", "wait_external_s")
            .join(users, on="key")
            .group_by("step").agg(analytics_tasks=pl.len(),
                                  analytics_end_ns=pl.col("stop_ns").max(),
                                  wait_external_s=pl.col("wait_external_s").max()))
    out = (per_step.join(sizes, on="step", how="left").join(runs, on="step", how="left")
           .with_columns(spread_s=(pl.col("last_ns") - pl.col("first_ns")) * 1e-9,
                         analytics_tasks=pl.col("analytics_tasks").fill_null(0),
                         lag_s=(pl.col("analytics_end_ns") - pl.col("last_ns")) * 1e-9))
    return conform(out, TABLES["arrival_steps"], path="arrival_steps").sort("first_ns", "step")


#: steps listed one by one in summary.json up to this many (the table holds every one)
SUMMARY_STEPS = 100


def summary(arrivals: pl.DataFrame, steps: pl.DataFrame, notes: pl.DataFrame) -> dict | None:
    """summary.json's ``arrivals`` section (None: the run had none): totals, each sender's
    share (keys, bytes, time in its scatter calls (``notes``: the senders' notes, one event
    per call), steps in which its data came last), the
    per-step lag with its trend (least-squares slope over the steps in order of their first
    arrival: positive when the analytics falls further behind step after step), and the steps
    themselves."""
    if arrivals.is_empty():
        return None
    keys, senders = _senders(arrivals, steps, notes)
    ordered = steps.sort("first_ns", "step").with_row_index("i")
    bounds = steps.select(first=pl.col("first_ns").min(), last=pl.col("last_ns").max(),
                          n=pl.len()).row(0, named=True)
    span = (bounds["last"] - bounds["first"]) * 1e-9
    lasts = ordered.select(lo=pl.col("last_ns").min(), hi=pl.col("last_ns").max(),
                           n=pl.len()).row(0, named=True)
    listed = ordered.head(SUMMARY_STEPS).select(
        "step", "keys", "senders", "nbytes", "spread_s", "last_rank", "last_client",
        "analytics_tasks", "lag_s", "wait_external_s")
    return {
        "keys": keys.height,
        "nbytes": keys.select(_KNOWN_BYTES).item(),
        "sources": sorted(set(arrivals.get_column("source").cast(pl.String))),
        "senders": senders.to_dicts(),
        "steps": steps.height,
        "max_spread_s": steps.get_column("spread_s").max(),
        "span_s": span,
        # the simulation's pace: time between consecutive steps' last arrivals
        "step_interval_s": ((lasts["hi"] - lasts["lo"]) * 1e-9 / (lasts["n"] - 1)
                            if lasts["n"] > 1 else None),
        "wait_external_s": steps.get_column("wait_external_s").sum()
        if steps.get_column("wait_external_s").null_count() < steps.height else None,
        "lag_s": _lag(ordered.drop_nulls("lag_s")),
        "per_step": listed.to_dicts(),
        "per_step_listed": min(steps.height, SUMMARY_STEPS),
    }


#: the bytes of a group of keys, null when one's size is not known
_KNOWN_BYTES = pl.when(pl.col("nbytes").null_count() == 0).then(pl.col("nbytes").sum())


def _senders(arrivals: pl.DataFrame, steps: pl.DataFrame, notes: pl.DataFrame
             ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each key's first arrival with its sender, and per sender: keys, bytes, time in its
    scatter calls, the steps in which its data came last."""
    sender = pl.coalesce(pl.col("rank").cast(pl.String).str.replace(r"^", "rank "),
                         pl.col("client"), pl.lit("unknown"))
    last_by = steps.select(sender=pl.coalesce(
        pl.col("last_rank").cast(pl.String).str.replace(r"^", "rank "), pl.col("last_client"),
        pl.lit("unknown"))).group_by("sender").agg(last_in_steps=pl.len())
    keys = (arrivals.sort("time_ns", "key", "worker", nulls_last=True)
            .unique("key", keep="first", maintain_order=True).with_columns(sender=sender))
    # one call scattered all the keys of its event: its duration counted once; a sender
    # with a key its notes did not time has no total (null: not measured)
    untimed = keys.group_by("sender").agg(untimed=pl.col("send_s").is_null().any())
    calls = (notes.drop_nulls("key").unique(["client", "local_time_ns"])
             .join(keys.select("client", "sender").unique(), on="client")
             .group_by("sender").agg(send_s=pl.col("send_s").sum()))
    senders = (keys.group_by("sender").agg(keys=pl.len(), nbytes=_KNOWN_BYTES)
               .join(untimed, on="sender").join(calls, on="sender", how="left")
               .with_columns(send_s=pl.when(~pl.col("untimed")).then("send_s"))
               .drop("untimed")
               .join(last_by, on="sender", how="left")
               .with_columns(pl.col("last_in_steps").fill_null(0)).sort("sender"))
    return keys, senders


def _lag(lagged: pl.DataFrame) -> dict[str, Any]:
    """The steps' lag (``lagged``: in order of their first arrival, ``i``): first, last,
    worst, mean, and its trend (least-squares slope: positive when the analytics falls
    further behind step after step)."""
    trend = None
    if lagged.height >= 2:
        x, y = lagged.get_column("i").cast(pl.Float64), lagged.get_column("lag_s")
        var = float(((x - x.mean()) ** 2).sum())
        trend = float(((x - x.mean()) * (y - y.mean())).sum()) / var if var else None
    worst = lagged.sort("lag_s", descending=True).head(1)
    return {"first": lagged.get_column("lag_s").head(1).item() if lagged.height else None,
            "last": lagged.get_column("lag_s").tail(1).item() if lagged.height else None,
            "max": worst.get_column("lag_s").item() if worst.height else None,
            "max_step": worst.get_column("step").item() if worst.height else None,
            "mean": lagged.get_column("lag_s").mean() if lagged.height else None,
            "trend_s_per_step": trend}
