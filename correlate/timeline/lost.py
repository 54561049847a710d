"""Executions whose worker died: rows from the scheduler's records, and the work lost with them.

A worker killed between two flushes takes the rows of its last executions with it, but the
scheduler heard of each: every task-finished message carries the execution's compute
startstop (worker, thread, start and stop, shifted by Dask onto the scheduler's clock). Those
executions get rows of their own here (``window_source`` ``scheduler-startstops``; CPU and I/O
null: not measured). An execution on a worker that died is ``lost`` when its result died with
the worker and the scheduler recomputed the task: the scheduler released the key from memory
by its worker cleanup (``memory -> released``, stimulus ``handle-worker-cleanup-…``: no other
worker held it) and the key ran again after it. A lost execution ran to an end, so it is a run
of its task (``endings.is_run``).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.frames.prefixes import key_split_groups, key_splits
from correlate.frames.rows import kept
from correlate.frames.scalars import integer
from correlate.sources.missing import WORKER_CLEANUP

LOST = "lost"
#: window_source of the rows made from the scheduler's startstops
FROM_SCHEDULER = "scheduler-startstops"


def died(processes: pl.DataFrame) -> list[str]:
    """Addresses of the workers that did not close (killed or crashed), sorted."""
    if processes.is_empty() or "closed_cleanly" not in processes.columns:
        return []
    return sorted(processes.filter((pl.col("role") == "worker")
                                   & (pl.col("closed_cleanly") == False)  # noqa: E712
                                   ).get_column("worker").drop_nulls().unique().to_list())


def startstops_read(startstops: pl.DataFrame, processes: pl.DataFrame) -> pl.DataFrame:
    """The startstops the engine reads after the load: every one but the compute startstops of
    workers that closed, which only ``unrecorded`` would read, and only of workers that died.
    A run has a compute startstop per execution: held from the load to the findings, they
    were a big run's largest table after the executions."""
    keep = (pl.col("action") != "compute").fill_null(True) | pl.col("worker").is_in(
        died(processes))
    return kept(startstops, startstops.select(keep).to_series())


def unrecorded(tasks: pl.DataFrame, startstops: pl.DataFrame, processes: pl.DataFrame,
               workers: list[str]) -> pl.DataFrame:
    """Rows for the compute startstops on ``workers`` that no execution row matches: per
    (worker, key), those after the first as many as the worker recorded (its rows are its
    earlier executions: those it flushed before it died)."""
    ss = startstops.filter((pl.col("action") == "compute") & pl.col("worker").is_in(workers))
    if ss.is_empty():
        return tasks.clear()
    got = (tasks.filter(pl.col("worker").is_in(workers)).group_by("worker", "key")
           .agg(got=pl.len()))
    ss = (ss.sort("reported_start_ns", "key")
          .with_columns(nth=pl.int_range(pl.len()).over("worker", "key"))
          .join(got, on=["worker", "key"], how="left")
          .filter(pl.col("nth") >= pl.col("got").fill_null(0)))
    names = tasks.select("key", "prefix", "group").drop_nulls("prefix").unique("key")
    where = (processes.drop_nulls("worker").unique("worker", keep="first")
             .select("worker", "host", "pid"))
    rows = (ss.select("key", "worker", start_ns="reported_start_ns",
                      stop_ns="reported_stop_ns")
            .join(names, on="key", how="left").join(where, on="worker", how="left")
            .with_columns(duration_s=(pl.col("stop_ns") - pl.col("start_ns")) * 1e-9,
                          status=pl.lit("ok"), window_source=pl.lit(FROM_SCHEDULER)))
    rows = rows.with_columns(prefix=pl.coalesce("prefix", key_splits(rows["key"])))
    rows = rows.with_columns(group=pl.coalesce("group", key_split_groups(rows["key"],
                                                                         rows["prefix"])))
    last = integer(tasks.get_column("execution_id").max())
    first = 0 if last is None else last + 1
    return rows.sort("start_ns", "worker", "key").with_columns(
        execution_id=pl.int_range(pl.len(), dtype=pl.Int64) + first)


def results_lost(transitions: pl.DataFrame) -> pl.Series:
    """Keys whose result the scheduler lost with a worker: released from memory by its
    worker cleanup (each such key is recomputed when still wanted)."""
    # (lazily: a filter of the transitions, a run's largest table, copies every column)
    return (transitions.lazy().filter((pl.col("side") == "scheduler")
                                      & (pl.col("start") == "memory")
                                      & (pl.col("finish") == "released")
                                      & pl.col("stimulus_id").str.starts_with(WORKER_CLEANUP))
            .select("key").collect().get_column("key").cast(pl.String).unique())


def with_lost(tasks: pl.DataFrame, startstops: pl.DataFrame, processes: pl.DataFrame,
              released: pl.Series) -> pl.DataFrame:
    """``tasks`` with the unrecorded executions of the workers that died, and ``status``
    ``lost`` on every execution of such a worker that ran to an end (ok), whose key is in
    ``released`` (``results_lost``) and started again after it."""
    workers = died(processes)
    if not workers:
        return tasks
    added = unrecorded(tasks, startstops, processes, workers)
    t = pl.concat([tasks, added], how="diagonal_relaxed") if added.height else tasks
    again = t.select("key", "start_ns").group_by("key").agg(last_start=pl.col("start_ns").max())
    return (t.join(again, on="key", how="left", maintain_order="left")
            .with_columns(status=pl.when(pl.col("worker").is_in(workers)
                                         & (pl.col("status") == "ok")
                                         & pl.col("key").is_in(released.implode())
                                         & (pl.col("start_ns") < pl.col("last_start")))
                          .then(pl.lit(LOST)).otherwise(pl.col("status")))
            .drop("last_start"))


def summary(tasks: pl.DataFrame, processes: pl.DataFrame,
            removed: dict[str, int] | None = None) -> dict[str, Any]:
    """summary.json's ``lost``: the workers that died and when the scheduler removed them
    (``removed``: its remove_worker times), the executions whose results died with them (and
    how many of those have rows only from the scheduler's records), the tasks recomputed, the
    compute seconds lost, and the lost executions per prefix (``span_s``, the critical
    path's share, is added once the path is known: ``span_lost``)."""
    rows = tasks.select("key", "prefix", "duration_s", "window_source", "status").filter(
        pl.col("status") == LOST)
    per = rows.group_by("prefix").agg(executions=pl.len()).sort(
        "executions", "prefix", descending=[True, False])
    return {
        "workers_died": died(processes),
        "died_ns": died_at(processes, removed or {}),
        "executions": rows.height,
        "from_scheduler_records": rows.filter(
            pl.col("window_source") == FROM_SCHEDULER).height,
        "tasks_recomputed": rows.get_column("key").n_unique(),
        "compute_s": round(float(rows.get_column("duration_s").sum()), 6),
        "by_prefix": {p: n for p, n in per.iter_rows()},
    }


def span_lost(tasks: pl.DataFrame, critical_path: pl.DataFrame) -> float | None:
    """Seconds of the task window spent recomputing lost results: the links of the critical
    path that are runs of a lost execution's key after it (removing the loss saves at most
    these). None without a critical path."""
    if critical_path.is_empty():
        return None
    # (lazy: the filters take the columns they read, not the whole tasks table)
    first_lost = (tasks.lazy().filter(pl.col("status") == LOST)
                  .group_by("key").agg(lost_ns=pl.col("start_ns").min()))
    again = (tasks.lazy().filter(pl.col("status") != LOST).join(first_lost, on="key")
             .filter(pl.col("start_ns") > pl.col("lost_ns")).select("execution_id").collect())
    on_path = critical_path.join(again, on="execution_id", how="semi")
    return round(float(on_path.get_column("duration_s").fill_null(0.0).sum()), 6)


def died_at(processes: pl.DataFrame, removed: dict[str, int]) -> dict[str, int | None]:
    """Each worker that died → when the scheduler removed it (its ``remove_worker`` event,
    scheduler clock: the run timeline), None where the scheduler recorded no removal."""
    return {w: removed.get(w) for w in died(processes)}


def sentences(lost: dict[str, Any] | None) -> list[str]:
    """The line for the terminal, the reports and the headline, when work was lost."""
    n = (lost or {}).get("executions") or 0
    if not n:
        return []
    assert lost is not None
    prefixes = ", ".join(f"{p} {c:,}" for p, c in list(lost["by_prefix"].items())[:5])
    dead = len(lost["workers_died"])
    return [f"{n:,} execution(s) lost with {dead} worker(s) that died (their results died "
            f"with the worker; {lost['tasks_recomputed']:,} task(s) recomputed, "
            f"{lost['compute_s']:.3f} s of compute lost"
            + (f", {lost['span_s']:.3f} s of the critical path recomputing them"
               if lost.get("span_s") is not None else "")
            + f"; runs of their task, "
            f"{lost['from_scheduler_records']:,} known from the scheduler's records only): "
            f"{prefixes}"]
