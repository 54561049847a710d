"""How each execution ended on its worker: ran to an end (``ok``, ``error``), or was handed
back to the scheduler before it ended (``rescheduled``, ``cancelled``).

Dask's ``Reschedule`` (raised by a P2P unpack task on a worker that does not hold its output
partition) reaches the collectors as an exception: the execution's recorded status is
``error``, although nothing failed. The worker says what happened in its own state machine: the
task leaves ``executing`` (or ``long-running``) for ``rescheduled``; a task the scheduler
released or stole while it ran leaves it for ``cancelled`` (or straight for ``released``).
Those executions are not runs of their task (it runs again elsewhere): their time is shown on
its own, never as a run, an error or a task's wall time.
"""

from __future__ import annotations

from typing import Any

import polars as pl

#: statuses of executions that did not run to an end (not runs of their task)
HANDED_BACK = ("rescheduled", "cancelled")
#: the worker-side state an execution left ``executing`` for → its status
_STATUS_OF = {"rescheduled": "rescheduled", "cancelled": "cancelled", "released": "cancelled"}
#: worker states in which a task body runs
_RUNNING = ("executing", "long-running")


def with_endings(executions: pl.DataFrame, relabelled: pl.DataFrame) -> pl.DataFrame:
    """``executions`` with ``status`` set where ``relabelled`` (``handed_back``'s rows, any
    number of parts of them) says the execution was handed back; others keep their recorded
    status."""
    if relabelled.is_empty():
        return executions
    return executions.join(relabelled, on="execution_id", how="left",
                           maintain_order="left").with_columns(
        status=pl.coalesce("ended", "status")).drop("ended")


def handed_back(executions: pl.DataFrame, transitions: pl.DataFrame) -> pl.DataFrame:
    """(execution_id, ended): the executions whose worker's first transition of the key out of
    a running state, at or after the execution's start in the same process, went to
    ``rescheduled`` / ``cancelled`` (worker clocks on both sides), and which. Taken per part
    of the transitions by key (``executions``: those of the part's keys, or all of them) and
    applied once (``with_endings``): the executions are not copied per part. The states are
    compared as they are, Categorical or text (a cast to text in a filter makes a text per
    transition)."""
    none = pl.DataFrame(schema={"execution_id": executions.schema.get("execution_id", pl.Int64),
                                "ended": pl.String})
    leaving = (transitions.lazy()
               .filter((pl.col("side") == "worker")
                       & pl.col("start").is_in(_RUNNING)
                       & pl.col("finish").is_in(list(_STATUS_OF)))
               .select(pl.col("host").cast(pl.String), "pid", "key",
                       t=pl.col("local_time_ns"), left_for=pl.col("finish").cast(pl.String))
               .collect())
    if leaving.is_empty() or executions.is_empty():
        return none
    ran = (transitions.lazy()
           .filter((pl.col("side") == "worker")
                   & pl.col("start").is_in(_RUNNING)
                   & (pl.col("finish") != "long-running"))
           .select(pl.col("host").cast(pl.String), "pid", "key",
                   t=pl.col("local_time_ns"), first_left_for=pl.col("finish").cast(pl.String))
           .filter(pl.col("key").is_in(leaving.get_column("key").unique().implode()))
           .collect().sort("t"))
    keyed = (executions.select("execution_id", "host", "pid", "key", "local_start_ns")
             .filter(pl.col("key").is_in(leaving.get_column("key").unique().implode()))
             .sort("local_start_ns"))
    ended = keyed.join_asof(ran, left_on="local_start_ns", right_on="t",
                            by=["host", "pid", "key"], strategy="forward",
                            check_sortedness=False)
    return ended.filter(pl.col("first_left_for").is_in(list(_STATUS_OF))).select(
        "execution_id", ended=pl.col("first_left_for").replace_strict(_STATUS_OF,
                                                                      return_dtype=pl.String))


def is_run() -> pl.Expr:
    """True for an execution that ran to an end (a run of its task): not handed back. A null
    status (not recorded) counts as a run."""
    return ~pl.col("status").is_in(HANDED_BACK).fill_null(False)


def summary(tasks: pl.DataFrame) -> dict[str, Any]:
    """summary.json's ``handed_back``: per status of ``HANDED_BACK``, the executions, their
    wall seconds and their count per prefix (zeros where none: the statuses are always
    known from the worker's transitions or the execution's own record)."""
    out: dict[str, Any] = {}
    for status in HANDED_BACK:
        rows = tasks.select("prefix", "duration_s", "status").filter(pl.col("status") == status)
        per = rows.group_by("prefix").agg(executions=pl.len()).sort(
            "executions", "prefix", descending=[True, False])
        out[status] = {
            "executions": rows.height,
            "wall_s": round(float(rows.get_column("duration_s").sum()), 6),
            "by_prefix": {p: n for p, n in per.iter_rows()},
        }
    return out


def sentences(handed_back: dict[str, Any] | None) -> list[str]:
    """One line per kind of execution handed back, for the terminal and the reports."""
    out = []
    for status, why in (("rescheduled", "Dask's Reschedule, as P2P does for an output "
                                        "partition held by another worker: run again "
                                        "there"),
                        ("cancelled", "released by the scheduler while running")):
        h = (handed_back or {}).get(status) or {}
        n = h.get("executions") or 0
        if n:
            prefixes = ", ".join(f"{p} {c:,}" for p, c in list(h["by_prefix"].items())[:5])
            out.append(f"{n:,} execution(s) {status} ({why}; not runs of their task, "
                       f"{h['wall_s']:.3f} s of thread time): {prefixes}")
    return out
