"""The critical path of a run: the chain of executions that set its task window.

An execution could start only once its inputs existed (each dependency's end, then its transfer
or read-back), the scheduler had assigned it, and a thread of its worker was free (the execution
before it on its thread had ended). Of the two *links* that can release it, the dependency that
ended last and the execution before it on its thread, the later one is its predecessor — the
thread only if the task was ready on its worker before the thread freed (``wait_thread_s``,
where recorded: else it did not wait for the thread, whatever the order of the ends); walking
back from the execution that ended last, predecessor by predecessor, gives the chain. A task
that reached the scheduler only after its inputs ended (a graph submitted after an earlier
one's results came back) waited for its client: the execution that ended last before its
submission is then its predecessor, if it ended after the others; a task the scheduler
queued (root-task queuing) waited for a thread anywhere in the cluster: the execution that
ended last before its assignment. The time between a
link's end and the next one's start is a wait, split by cause: the submission, the scheduler
(the assignment came after the predecessor ended), incoming transfers, inputs read back from
spill, a memory pause of its worker, a thread of its worker free while it waited (the worker's
event loop had not handed it over), and the rest (the clocks' alignment, the worker's
dispatch where its thread count is unknown). Each link's own time is
split into CPU, I/O and the rest.

Pure functions over the output ``tasks`` table, the canonical ``dependencies`` and each key's
submission and assignment times (``waits.scheduler_waits``' ``t_wait`` and ``t_proc``:
scheduler clock, the run timeline).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from correlate.frames.beside import with_beside
from correlate.frames.scalars import integer, rounded
from correlate.frames.texts import per_text

#: what released a link: the first link of the chain, the dependency that ended last, the
#: execution before it on its thread, (a task the scheduler queued) the execution that ended
#: last before its assignment, or (a task submitted late) the execution that ended last
#: before it reached the scheduler
GATES = ("first", "dependency", "thread", "queue", "submission")
#: (as the critical path table's Enum from the start: a text per execution is a big run's
#: hundreds of megabytes)
_GATE = pl.Enum(GATES)
#: the causes a wait before a link is split into (columns ``wait_<cause>_s``)
WAIT_CAUSES = ("submission", "scheduler", "transfer", "read_back", "paused", "free_thread",
               "other")
#: statuses of an execution whose result a dependent could use (null: not recorded)
_PRODUCED = ("ok", "memory")
#: the join column of the gates' per-execution tables
_BY_ID = ["execution_id"]


def timed(tasks: pl.DataFrame) -> pl.DataFrame:
    """The executions with a start and a stop: ``tasks`` itself when all have both (a filter
    copies every column, the whole tasks table of a big run, even when it keeps every row)."""
    if not (tasks.get_column("start_ns").has_nulls() or tasks.get_column("stop_ns").has_nulls()):
        return tasks
    return tasks.filter(pl.col("start_ns").is_not_null() & pl.col("stop_ns").is_not_null())


def _as_codes(*keys: pl.Series) -> bool:
    """Whether every key column is Categorical (the engine's tables; one set of codes)."""
    return all(k.dtype == pl.Categorical for k in keys)


def _key_ids(df: pl.DataFrame, col: str, codes: bool) -> pl.Series:
    """A key as an integer: joins, sorts and groups on it are several times faster than on
    the strings. Its Categorical code where every key table holds codes (``codes``: exact,
    and no text is made: a big run's are gigabytes), else a 64-bit hash of its text (two of
    a run's million keys share a hash with a chance of about 1 in 10^7; a Categorical
    column's distinct keys each hashed once: ``per_text``)."""
    keys = df.get_column(col)
    return keys.to_physical() if codes else per_text(keys, lambda texts: texts.hash(seed=0))


def _inputs(ex: pl.DataFrame, k: pl.Series, dependencies: pl.DataFrame, codes: bool
            ) -> pl.DataFrame:
    """execution_id → the execution of its dependency that ended last (input_id, input_stop):
    of each dependency key, its executions that produced a result (the last to end wins).
    ``k``: each execution's key, ``_key_ids``."""
    made = ex.select(pl.col("status"), d=k, input_id="execution_id", input_stop="stop_ns"
                     ).filter(pl.col("status").is_null() | pl.col("status").is_in(_PRODUCED)
                              ).drop("status")
    # (one row per edge and execution of its dependency: a repeated edge or a key that ran
    # twice only adds rows that the maximum passes over)
    per_key = (dependencies.select(k=_key_ids(dependencies, "key", codes),
                                   d=_key_ids(dependencies, "depends_on", codes))
               .join(made, on="d").group_by("k")
               .agg(pl.col("input_id").get(pl.col("input_stop").arg_max()),
                    pl.col("input_stop").max()))
    return ex.select("execution_id", k=k).join(per_key, on="k").drop("k")


def _thread_before(ex: pl.DataFrame) -> pl.DataFrame:
    """execution_id → the execution before it on its thread (thread_id, thread_stop). ``ex``
    in execution_id order: the engine numbers a process's executions in the order they
    started, so a stable sort by process and thread leaves each thread's in start order."""
    if not ex.get_column("execution_id").is_sorted():
        ex = ex.sort("execution_id")
    # each thread of each process as one 64-bit hash: one column to sort, stably
    threaded = (ex.lazy().filter(pl.col("thread_id").is_not_null())
                .select("execution_id", "stop_ns",
                        thread=pl.struct("host", "pid", "thread_id").hash(seed=0))
                .collect().sort("thread", maintain_order=True))
    # the row before, when it is the same thread's (cheaper than a shift over groups)
    same = pl.col("thread") == pl.col("thread").shift(1)
    return threaded.select(
        "execution_id",
        thread_prev=pl.when(same).then(pl.col("execution_id").shift(1)),
        thread_stop=pl.when(same).then(pl.col("stop_ns").shift(1)))


def _ended_before(ex: pl.DataFrame, times: pl.DataFrame, at: str, name: str
                  ) -> pl.DataFrame:
    """execution_id → the execution that ended last before its time ``at`` (``<name>_prev``,
    ``<name>_stop``)."""
    ends = ex.select(pl.col("execution_id").alias(f"{name}_prev"),
                     pl.col("stop_ns").alias(f"{name}_stop")).sort(f"{name}_stop")
    return (times.select("execution_id", at).drop_nulls(at).sort(at)
            .join_asof(ends, left_on=at, right_on=f"{name}_stop", strategy="backward")
            .select("execution_id", f"{name}_prev", f"{name}_stop"))


def _thread_and_inputs(ex: pl.DataFrame, dependencies: pl.DataFrame, times: pl.DataFrame,
                       codes: bool) -> pl.DataFrame:
    """Per execution: the thread's previous execution where it gated it (``thread_prev``,
    ``thread_gate``), the input that ended last (``input_id``, ``input_stop``), and its
    task's ``times`` (submitted_ns, assigned_ns by ``k``: ``_key_ids``), with ``stop_ns`` and
    ``wait_queued_s``."""
    # (the whole of its wait on the worker: a memory pause of the worker is part of it)
    on_worker = pl.col("wait_thread_s")
    for part in ("wait_paused_s", "wait_free_thread_s"):
        if part in ex.columns:  # (null stays null: not recorded)
            on_worker = on_worker + pl.col(part).fill_null(0.0)
    # a thread's previous execution is a predecessor only if it ended before this one started,
    # after its inputs, and after the task was ready on its worker (its inputs there, its
    # assignment received): had the task been ready later, it did not wait for the thread
    ready = pl.col("start_ns") - (pl.col("wait_thread_s") * 1e9).cast(pl.Int64)
    thread = (pl.when(pl.col("thread_stop").is_not_null()
                      & (pl.col("thread_stop") <= pl.col("start_ns"))
                      & (pl.col("wait_thread_s").is_null() | (pl.col("thread_stop") > ready)))
              .then("thread_stop"))
    # (the candidates' own tables first, the largest transients, before the executions')
    k = _key_ids(ex, "key", codes)
    inputs, before = _inputs(ex, k, dependencies, codes), _thread_before(ex)
    g = with_beside(ex.select("execution_id", "start_ns", "stop_ns", "wait_queued_s",
                              on_worker.alias("wait_thread_s"), k=k), before, _BY_ID)
    del before
    g = with_beside(g.select("execution_id", "stop_ns", "wait_queued_s", "k", "thread_prev",
                             thread_gate=thread), inputs, _BY_ID)
    del inputs, k
    return g.join(times, on="k", how="left").drop("k")



def gates(tasks: pl.DataFrame, dependencies: pl.DataFrame, assigned: pl.DataFrame
          ) -> pl.DataFrame:
    """Per timed execution: its predecessor (``pred_id``, ``pred_stop``), through which
    ``gate``, and its task's submission and assignment times (``submitted_ns``,
    ``assigned_ns``; null: not recorded). (Each candidate's columns are dropped once its
    gate is known: a big run's executions are many, and every join copies what is left.)"""
    ex = timed(tasks)
    # (one row per key, as waits.scheduler_waits groups them: a key given twice is taken
    # once, each execution in one row)
    codes = _as_codes(*(df.get_column(c) for df, c in ((ex, "key"), (dependencies, "key"),
                                                        (dependencies, "depends_on"),
                                                        (assigned, "key"))))
    times = assigned.select(k=_key_ids(assigned, "key", codes), submitted_ns="submitted_ns",
                            assigned_ns="assigned_ns")
    if times.height != times.get_column("k").n_unique():
        times = times.unique("k", keep="first", maintain_order=True)
    g = _thread_and_inputs(ex, dependencies, times, codes)
    # a task that reached the scheduler after its inputs ended waited for its client: the
    # execution that ended last before that (a graph submitted after an earlier one's results
    # came back) is its predecessor, if it ended after the rest
    client = (pl.when(pl.col("input_stop").is_null()
                      | (pl.col("submitted_ns") > pl.col("input_stop")))
              .then("client_stop"))
    g = (with_beside(g, _ended_before(ex, g, "submitted_ns", "client"), _BY_ID)
         .with_columns(client_gate=client).drop("client_stop"))
    # a task queued by the scheduler: the execution whose end freed the thread it was then
    # assigned to
    queued = _ended_before(ex, g.select("execution_id", "assigned_ns", "wait_queued_s")
                           .filter(pl.col("wait_queued_s") > 0), "assigned_ns", "queue")
    g = with_beside(g.drop("wait_queued_s"), queued, _BY_ID)
    del queued
    latest = pl.max_horizontal("input_stop", "thread_gate", "client_gate", "queue_stop")
    # (each candidate a column of its own: one expression nesting them all is evaluated once
    # per use, several times over)
    gate = (pl.when(pl.col("input_stop") == pl.col("latest")).then(pl.lit("dependency", _GATE))
            .when(pl.col("thread_gate") == pl.col("latest")).then(pl.lit("thread", _GATE))
            .when(pl.col("queue_stop") == pl.col("latest")).then(pl.lit("queue", _GATE))
            .when(pl.col("client_gate") == pl.col("latest")).then(pl.lit("submission", _GATE))
            .otherwise(pl.lit("first", _GATE)))
    return g.with_columns(latest=latest).with_columns(gate=gate).select(
        "execution_id", "stop_ns", "submitted_ns", "assigned_ns", "gate",
        pred_id=pl.when(pl.col("gate") == "dependency").then("input_id")
        .when(pl.col("gate") == "thread").then("thread_prev")
        .when(pl.col("gate") == "queue").then("queue_prev")
        .when(pl.col("gate") == "submission").then("client_prev"),
        pred_stop=pl.when(pl.col("gate") != "first").then("latest"))


def walk(execution_ids: np.ndarray, pred_ids: np.ndarray, stops: np.ndarray) -> list[int]:
    """The chain ending at the execution that ended last (ties: the highest id), first link
    first. ``pred_ids`` holds -1 where an execution has no predecessor; a predecessor that did
    not end before its successor (clocks misaligned beyond the gap), or that is not among
    ``execution_ids``, ends the walk, so that it always terminates."""
    if not len(execution_ids):
        return []
    # arrays indexed by execution id (ids are 0..n-1 in the engine: no dictionary of them)
    size = int(max(execution_ids.max(), pred_ids.max())) + 1
    pred_of = np.full(size, -1, dtype=np.int64)
    pred_of[execution_ids] = pred_ids
    stop_of = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
    stop_of[execution_ids] = stops
    at = int(execution_ids[np.lexsort((execution_ids, stops))[-1]])
    chain = [at]
    seen = {at}
    while (nxt := int(pred_of[at])) >= 0:
        if nxt in seen or stop_of[nxt] > stop_of[at]:
            break
        seen.add(nxt)
        chain.append(nxt)
        at = nxt
    chain.reverse()
    return chain


#: the part of a link's wait before its worker had the task: its submission and assignment
_before_worker = (pl.col("wait_submission_s").fill_null(0.0)
                  + pl.col("wait_scheduler_s").fill_null(0.0))


#: a link's wait once on its worker, by cause in the order each takes what is left of it:
#: (output column, the tasks column it comes from) — transfers of its inputs, inputs read back
#: from spill, a memory pause of the worker, a thread of the worker free (its event loop)
_ON_WORKER = (("wait_transfer_s", "transfer_s"), ("wait_read_back_s", "input_read_back_s"),
              ("wait_paused_s", "wait_paused_s"), ("wait_free_thread_s", "wait_free_thread_s"))


def _worker_parts(links: pl.DataFrame) -> tuple[pl.DataFrame, pl.Expr]:
    """``links`` with the parts of ``_ON_WORKER``, and the expression of the wait they and
    the parts before the worker (``_before_worker``) take."""
    taken = _before_worker
    for out, source in _ON_WORKER:
        have = pl.col(source) if source in links.columns else pl.lit(None, pl.Float64)
        links = links.with_columns(pl.min_horizontal(have.fill_null(0.0), pl.col("wait_s")
                                                     - taken).clip(lower_bound=0.0).alias(out))
        taken = taken + pl.col(out)
    return links, taken


def critical_path(tasks: pl.DataFrame, dependencies: pl.DataFrame, assigned: pl.DataFrame
                  ) -> pl.DataFrame:
    """The ``critical_path`` output table: one row per link, first link first."""
    ex = timed(tasks)
    g = gates(ex, dependencies, assigned)
    chain = walk(g.get_column("execution_id").to_numpy(),
                 g.get_column("pred_id").fill_null(-1).to_numpy(),
                 g.get_column("stop_ns").to_numpy())
    if not chain:
        return pl.DataFrame()
    window_start = ex.get_column("start_ns").min()
    links = (pl.DataFrame({"execution_id": chain}, schema={"execution_id": pl.Int64})
             .with_row_index("position").with_columns(pl.col("position").cast(pl.Int64))
             .join(ex, on="execution_id", how="left", maintain_order="left")
             .join(g.drop("stop_ns"), on="execution_id", how="left", maintain_order="left"))
    # the first link waited from the start of the task window
    after = pl.coalesce(pl.col("pred_stop"), pl.lit(window_start))
    wait = (pl.col("start_ns") - after).clip(lower_bound=0) * 1e-9
    submitted = pl.max_horizontal(after, "submitted_ns")
    sched = ((pl.col("assigned_ns") - submitted) * 1e-9).clip(lower_bound=0)
    links = links.with_columns(
        # (an I/O call's own CPU is in both: at least what neither took, never below 0)
        other_s=(pl.col("duration_s") - pl.col("cpu_s") - pl.col("io_time_s"))
        .clip(lower_bound=0.0),
        wait_s=wait,
        wait_submission_s=pl.min_horizontal(
            ((pl.col("submitted_ns") - after) * 1e-9).clip(lower_bound=0), wait),
    ).with_columns(
        wait_scheduler_s=pl.min_horizontal(sched, pl.col("wait_s")
                                           - pl.col("wait_submission_s").fill_null(0.0)),
    )
    links, taken = _worker_parts(links)
    return links.with_columns(
        # a submission or assignment not recorded leaves the scheduler's parts unknown, not 0
        wait_other_s=pl.when(pl.col("assigned_ns").is_not_null()
                             & pl.col("submitted_ns").is_not_null()).then(
            pl.col("wait_s") - taken),
        wait_scheduler_s=pl.when(pl.col("assigned_ns").is_not_null()).then(
            "wait_scheduler_s"),
        wait_submission_s=pl.when(pl.col("submitted_ns").is_not_null()).then(
            "wait_submission_s"),
    )



def summary(path: pl.DataFrame, tasks: pl.DataFrame, top: int = 10) -> dict[str, Any] | None:
    """``summary.json`` ``critical_path``: the window it spans, its links' time split, its
    waits by cause, per prefix, and its ``top`` longest links (null: no timed execution)."""
    if path.is_empty():
        return None
    ex = timed(tasks)
    window = ((integer(ex.get_column("stop_ns").max()) or 0)
              - (integer(ex.get_column("start_ns").min()) or 0)) * 1e-9

    def measured(col: str) -> float | None:
        c = path.get_column(col)
        return None if c.null_count() == c.len() else rounded(c.sum())

    by_prefix = (path.group_by("prefix").agg(links=pl.len(), duration_s=pl.col("duration_s")
                                            .sum(), wait_s=pl.col("wait_s").sum())
                 .sort("duration_s", "prefix", descending=[True, False], nulls_last=True))
    longest = path.sort("duration_s", "position", descending=[True, False]).head(top)
    return {
        "window_s": rounded(window),
        "links": path.height,
        "executions_s": measured("duration_s"),
        "cpu_s": measured("cpu_s"),
        "io_time_s": measured("io_time_s"),
        "other_s": measured("other_s"),
        "wait_s": measured("wait_s"),
        "waits": {cause: measured(f"wait_{cause}_s") for cause in WAIT_CAUSES},
        "by_prefix": [{"prefix": p, "links": n, "duration_s": rounded(d),
                       "wait_s": rounded(w)} for p, n, d, w in by_prefix.rows()],
        "longest": [{"position": r["position"], "key": r["key"], "prefix": r["prefix"],
                     "worker": r["worker"], "duration_s": rounded(r["duration_s"]),
                     "cpu_s": rounded(r["cpu_s"]), "io_time_s": rounded(r["io_time_s"]),
                     "wait_s": rounded(r["wait_s"]), "gate": r["gate"]}
                    for r in longest.iter_rows(named=True)],
        "keys": path.get_column("key").to_list()[:50],
    }
