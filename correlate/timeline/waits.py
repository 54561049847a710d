"""Where the rest of a task's time went: waiting for dependencies, a queue slot, a thread,
data from outside Dask, and input transfers. Pure functions over canonical frames.

Times come from the transitions (scheduler clock for the scheduler side, worker clock for the
worker side; each difference is taken within one clock, so no alignment is needed) and from the
``transfer`` startstops Dask attaches to the task that needed the data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import polars as pl

from correlate.frames.rows import kept

SCHEDULER_STATES = {"released", "waiting", "queued", "processing", "memory", "erred",
                    "forgotten", "no-worker"}


def _at(side: str, finish: str, name: str) -> pl.Expr:
    """The transition's time when it is ``side``'s transition to ``finish``, else null."""
    return (pl.when((pl.col("side") == side) & (pl.col("finish") == finish))
            .then(pl.col("local_time_ns")).alias(name))


def scheduler_waits(transitions: pl.DataFrame) -> pl.DataFrame:
    """Per key (a string, whichever way the transitions hold it): wait_dependencies_s and
    wait_queued_s (scheduler side), wait_thread_s (worker). Keys without any of the transitions
    used are left out (their waits are unknown)."""
    used = (((pl.col("side") == "scheduler")
             & pl.col("finish").is_in(["waiting", "queued", "processing"]))
            | ((pl.col("side") == "worker") & pl.col("finish").is_in(["ready", "executing"])))
    times = ["t_wait", "t_queued", "t_proc", "t_ready", "t_exec"]
    # each first time is a plain min over a column that holds only its transitions' times (a
    # filter inside the aggregation runs once per key: slow with many keys)
    firsts = (transitions.lazy().filter(used).select(
        "key", _at("scheduler", "waiting", "t_wait"), _at("scheduler", "queued", "t_queued"),
        _at("scheduler", "processing", "t_proc"), _at("worker", "ready", "t_ready"),
        _at("worker", "executing", "t_exec"))
        .group_by("key").agg(pl.col(times).min()).collect())
    s = 1e-9
    return firsts.select(
        "key",
        wait_dependencies_s=(pl.coalesce("t_queued", "t_proc") - pl.col("t_wait")) * s,
        wait_queued_s=(pl.col("t_proc") - pl.col("t_queued")) * s,
        wait_thread_s=(pl.col("t_exec") - pl.col("t_ready")) * s,
        t_wait=pl.col("t_wait"),
        t_proc=pl.col("t_proc"),  # the assignment (the critical path's gates)
    )


def ready_to_executing(transitions: pl.DataFrame, time: pl.Expr,
                       workers: pl.Series | None = None) -> pl.DataFrame:
    """Per key with both: the worker of its first worker-side ``ready`` (a string), and the
    first times (``time``, evaluated on every row of ``transitions``: it may add a per-row
    clock shift) it became ready and executing there; only on ``workers`` where given."""
    # (the worker cast after the filter: the engine's worker column is Categorical, and a
    # run's transitions are its largest table)
    # (lazily: the filter copies the columns read only)
    t = (transitions.lazy().with_columns(t=time).filter(
        (pl.col("side") == "worker") & pl.col("finish").is_in(["ready", "executing"]))
        .select("key", pl.col("worker").cast(pl.String), "finish", "t").collect())
    if workers is not None:
        t = t.filter(pl.col("worker").is_in(workers.implode()))
    return t.group_by("key").agg(
        pl.col("worker").filter(pl.col("finish") == "ready").first(),
        t_ready=pl.col("t").filter(pl.col("finish") == "ready").min(),
        t_exec=pl.col("t").filter(pl.col("finish") == "executing").min()).drop_nulls()


def pause_rows(transitions: pl.DataFrame, pauses: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``transitions`` that ``paused_waits`` measures against ``pauses``: taken
    from each part of the transitions before the workers' clocks are known (none without
    pauses, the usual case)."""
    rows = transitions.lazy().select("key", "worker", "finish", "local_time_ns", "side",
                                     "host", "pid")
    if pauses.is_empty():
        return rows.clear().collect()
    return rows.filter((pl.col("side") == "worker")
                       & pl.col("finish").is_in(["ready", "executing"])).filter(
        pl.col("worker").cast(pl.String).is_in(pauses.get_column("worker").unique().implode())
    ).collect()


def paused_waits(transitions: pl.DataFrame, pauses: pl.DataFrame, shift: pl.Series
                 ) -> pl.DataFrame:
    """Per key whose wait for a thread (its first worker-side ready → executing) overlapped a
    memory pause of that worker: ``wait_paused_s``, the overlap. A paused worker starts no task
    whatever its free threads, so that part of the wait is memory's, not the threads'.
    ``pauses``: ``worker_pauses`` (run timeline); ``shift``: per row of ``transitions``, what
    turns its process's clock into the run timeline (``align.worker_shift``)."""
    empty = pl.DataFrame(schema={"key": pl.Categorical, "wait_paused_s": pl.Float64})
    if pauses.is_empty():  # (the usual case)
        return empty
    firsts = ready_to_executing(transitions, pl.col("local_time_ns") + shift,
                                pauses.get_column("worker").unique())
    if firsts.is_empty():
        return empty
    end = pl.coalesce("stop_ns", pl.lit(2**62, pl.Int64))
    return (firsts.join(pauses, on="worker")
            .with_columns(overlap=(pl.min_horizontal("t_exec", end)
                                   - pl.max_horizontal("t_ready", "start_ns")).clip(0))
            .group_by("key").agg(wait_paused_s=pl.col("overlap").sum() * 1e-9)
            .filter(pl.col("wait_paused_s") > 0)
            .select("key", "wait_paused_s"))


class ThreadUse(NamedTuple):
    """Each worker's running executions over time (``thread_use``), its workers numbered: a
    big run's starts and stops are sorted and searched by a number, not by a text each."""

    #: worker (text), w (its number), first (its first execution's start)
    workers: pl.DataFrame
    #: per start and stop of an execution, by worker in time order: w, t (worker clock), free (a
    #: thread was free after it), before (the time a thread was free before it)
    events: pl.DataFrame


def thread_use(executions: pl.DataFrame, processes: pl.DataFrame) -> ThreadUse | None:
    """Each worker's running executions over time, for ``free_thread_waits``. None: no
    worker whose thread count was recorded (``nthreads``), or no executions."""
    threads = (processes.filter(pl.col("worker").is_not_null() & pl.col("nthreads").is_not_null())
               .group_by("worker").agg(pl.col("nthreads").max())
               .sort("worker").with_row_index("w"))
    if threads.is_empty() or executions.is_empty():
        return None
    # each worker's running count after each start (+1) and stop (-1), ends before starts at
    # the same instant; the idle time (a thread free) accumulated up to each event
    ran = executions.select(pl.col("worker").cast(pl.String), "local_start_ns",
                            "local_stop_ns").join(threads.select("worker", "w"), on="worker"
                                                  ).drop("worker")
    one = pl.lit(1, pl.Int8)
    ev = (pl.concat([ran.select("w", t="local_start_ns", d=one),
                     ran.select("w", t="local_stop_ns", d=-one)])
          .drop_nulls().sort("w", "t", "d"))
    del ran
    # (each worker's rows one after another: its running sums are the run's less the sum
    # before its first row, not windows over("w"), which hold a copy of every row per group)
    starts_worker = (pl.col("w") != pl.col("w").shift(1)).fill_null(True)

    def per_worker(x: pl.Expr) -> pl.Expr:
        total = x.cum_sum()
        return total - pl.when(starts_worker).then(total - x).forward_fill()

    nthreads = pl.lit(threads.get_column("nthreads")).gather(pl.col("w"))
    ev = ev.with_columns(free=(per_worker(pl.col("d").cast(pl.Int64)) < nthreads)
                         .cast(pl.Int64),
                         dt=pl.when(pl.col("w").shift(-1) == pl.col("w"))
                         .then(pl.col("t").shift(-1) - pl.col("t")).otherwise(0)
                         ).select("w", "t", "free",
                                  before=per_worker(pl.col("dt") * pl.col("free"))
                                  - pl.col("dt") * pl.col("free"))
    firsts = ev.group_by("w").agg(first=pl.col("t").min())
    # (sorted by time within each worker: what ``_idle_until`` searches)
    return ThreadUse(threads.select("worker", "w").join(firsts, on="w"), ev)


def thread_waits(transitions: pl.DataFrame) -> pl.DataFrame:
    """Per key of ``transitions`` that waited for a thread: its worker and its first
    worker-side ready and executing times there (the worker's clock), what
    ``free_thread_waits`` measures against the worker's executions. Taken per part of the
    transitions and measured once for them all: ``thread_use`` is the whole run's executions,
    which a measure per part would go through once per part."""
    return (ready_to_executing(transitions, pl.col("local_time_ns"))
            .filter(pl.col("t_exec") > pl.col("t_ready")))


def free_thread_waits(waiting: pl.DataFrame, use: ThreadUse | None) -> pl.DataFrame:
    """Per key of ``waiting`` (``thread_waits``): the part of its wait for a thread (its first
    worker-side ready → executing) during which fewer executions ran on its worker than the
    worker has executor threads: ``wait_free_thread_s``. A thread was free, so the task
    waited for the worker's event loop to hand it over (busy with messages, transitions,
    transfers, or the host's other work), not for a thread: more threads would not start it
    sooner. Executions' windows (``thread_use``) and worker transitions are both the
    worker's ``time_ns``, so no alignment is needed. A lower bound: an ``async def``
    execution counts as a running thread. Workers whose thread count was not recorded
    (``nthreads``) have none (unknown, not zero)."""
    empty = pl.DataFrame(schema={"key": pl.Categorical, "wait_free_thread_s": pl.Float64})
    if use is None:
        return empty
    # (each key's worker as its number; workers without a thread count: none, unknown)
    numbers = waiting.get_column("worker").replace_strict(
        use.workers.get_column("worker"), use.workers.get_column("w"), default=None)
    known = numbers.is_not_null()
    if not known.any():
        return empty
    waiting = kept(waiting, known)
    w = numbers.drop_nulls().to_numpy()
    numbered = use.workers.get_column("w").to_numpy()
    first = np.zeros(int(numbered.max()) + 1, np.int64)
    first[numbered] = use.workers.get_column("first").to_numpy()
    idle = _idle_until(use.events, w, first[w])
    ready, executing = (idle(waiting.get_column(c).to_numpy()) for c in ("t_ready", "t_exec"))
    return pl.DataFrame({"key": waiting.get_column("key"),
                         "wait_free_thread_s": np.clip((executing - ready) * 1e-9, 0.0, None)})


def _idle_until(events: pl.DataFrame, w: np.ndarray, first: np.ndarray
                ) -> Callable[[np.ndarray], np.ndarray]:
    """For instants ``t`` of workers ``w`` (numbers, as ``ThreadUse``), each worker's idle
    time (a thread free) up to ``t``: after its last event at or before ``t``, that event's
    ``before`` and the time since if a thread was free; before its first (``first``: its
    first execution's start) every thread is free. Each worker's events are searched apart
    (sorted by time within it), the instants taken worker by worker."""
    ev_w, ev_t = events.get_column("w").to_numpy(), events.get_column("t").to_numpy()
    free, before = events.get_column("free").to_numpy(), events.get_column("before").to_numpy()
    workers = np.arange(int(max(ev_w.max(initial=0), w.max(initial=0))) + 2)
    at_e = np.searchsorted(ev_w, workers)
    order = np.argsort(w, kind="stable")
    at_q = np.searchsorted(w[order], workers)

    def idle(t: np.ndarray) -> np.ndarray:
        out = t - first  # (before the worker's first event)
        for k in range(len(workers) - 1):
            rows, lo, hi = order[at_q[k]:at_q[k + 1]], at_e[k], at_e[k + 1]
            if not len(rows) or hi == lo:
                continue
            # (the instants in order: each search starts where the one before ended, where
            # instants in any order cost a cache miss at each step)
            rows = rows[np.argsort(t[rows])]
            tk = t[rows]
            j = lo + np.searchsorted(ev_t[lo:hi], tk, side="right") - 1
            seen = j >= lo
            j = np.where(seen, j, lo)
            out[rows] = np.where(seen, before[j] + (tk - ev_t[j]) * free[j], out[rows])
        return out

    return idle


def external_arrivals(transitions: pl.DataFrame) -> pl.DataFrame:
    """Keys that went through a state Dask does not define (e.g. seed 003's ``deisa`` external
    tasks): key and the time (scheduler clock) they reached memory."""
    sched = transitions.lazy().filter(pl.col("side") == "scheduler")
    keys = sched.filter(~pl.col("start").is_in(list(SCHEDULER_STATES))
                        | ~pl.col("finish").is_in(list(SCHEDULER_STATES))
                        ).select("key").unique().collect()
    if keys.is_empty():  # the usual case: no arrival times to find
        return keys.with_columns(t_arrival=pl.lit(None, pl.Int64))
    arrived = (sched.filter((pl.col("finish") == "memory")
                            & pl.col("key").is_in(keys.get_column("key").implode()))
               .group_by("key").agg(t_arrival=pl.col("local_time_ns").min()).collect())
    return keys.join(arrived, on="key", how="left")


def external_waits(transitions: pl.DataFrame, dependencies: pl.DataFrame,
                   waits: pl.DataFrame) -> pl.DataFrame:
    """Per key: how long its external-state dependencies kept it waiting
    (``correlate.timeline.arrivals.external_waits``; the engine adds the scattered keys)."""
    from correlate.timeline.arrivals import external_waits as waits_on

    return waits_on(external_arrivals(transitions).drop_nulls("t_arrival"), dependencies, waits)


def transfer_inputs(startstops: pl.DataFrame, transfers: pl.DataFrame,
                    transfer_keys: pl.DataFrame, dependencies: pl.DataFrame) -> pl.DataFrame:
    """Per (key, worker): time in incoming transfers Dask attached to the task, and bytes and
    source workers of its dependencies fetched into that worker."""
    t_time = (startstops.filter(pl.col("action") == "transfer").group_by("key", "worker")
              .agg(transfer_s=((pl.col("reported_stop_ns") - pl.col("reported_start_ns"))
                               .sum() * 1e-9)))
    incoming = (transfers.filter(pl.col("direction") == "incoming")
                .select("transfer_id", "worker", "peer")
                .join(transfer_keys, on="transfer_id"))
    fetched = (dependencies.select("key", "depends_on")
               .join(incoming, left_on="depends_on", right_on="key")
               .group_by("key", "worker")
               .agg(transfer_bytes=pl.col("nbytes").sum(),
                    transfer_sources=pl.col("peer").drop_nulls().unique().sort()
                    .str.join(",")))
    return t_time.join(fetched, on=["key", "worker"], how="full", coalesce=True,
                       nulls_equal=True)
