"""How the job ended: its exit code, the tasks that erred and the executions still in flight
when the records end (a killed job's), for ``summary.json`` (``job_outcome``) and one line in
the terminal summary and report.md (``outcome_line``).

A task erred when the scheduler moved it to ``erred`` and it did not reach ``memory`` later
(a retry that succeeded is no failure). Dask errs a task whose own function raised and, with
it, every task that depends on it; the first are the executions whose status is ``error``,
so each prefix says how many raised and how many erred because a dependency did. Sources
without scheduler transitions (MiniApp, Dask's task stream) only know the executions that
raised: ``source`` says which evidence the counts come from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

#: erred keys listed in summary.json (the count is always complete)
KEYS_LISTED = 20


def erred_tasks(transitions: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """``key`` of each task whose last ``erred`` on the scheduler is not followed by
    ``memory`` (scheduler transitions share the scheduler's clock)."""
    last = (transitions.lazy().filter(pl.col("side") == "scheduler")
            .filter(pl.col("finish").is_in(["erred", "memory"]))
            .group_by("key")
            .agg(erred=pl.col("local_time_ns").filter(pl.col("finish") == "erred").max(),
                 memory=pl.col("local_time_ns").filter(pl.col("finish") == "memory").max())
            .filter(pl.col("erred").is_not_null()
                    & (pl.col("memory").is_null() | (pl.col("memory") < pl.col("erred"))))
            .select(pl.col("key").cast(pl.String)).collect())
    return last


def _has_scheduler_transitions(transitions: pl.DataFrame | pl.LazyFrame) -> bool:
    return transitions.lazy().filter(pl.col("side") == "scheduler").head(1).collect().height > 0


@dataclass(frozen=True)
class Seen:
    """What the transitions say of how the job ended (``seen_in``)."""

    in_flight: pl.DataFrame | None  # None: no worker-side transitions
    erred: pl.DataFrame | None  # None: no scheduler transitions


@dataclass(frozen=True)
class SeenPart:
    """What one part of the transitions by key says of how the job ended (``seen_part``),
    combined with the other parts' by ``seen_of``."""

    running: pl.DataFrame | None  # worker, key, host, pid, started; None: no worker side
    ends: pl.DataFrame | None  # host, pid, end: each process's last worker-side transition
    erred: pl.DataFrame | None  # None: no scheduler transitions


def seen_in(transitions: pl.DataFrame | pl.LazyFrame, samples: pl.DataFrame | None = None
            ) -> Seen:
    """The executions in flight and the erred tasks of ``transitions`` (key, worker, host
    and finish as strings or Categorical): taken while a caller holds them, the whole
    transitions are not read again."""
    return seen_of([seen_part(transitions)], samples)


def seen_part(transitions: pl.DataFrame | pl.LazyFrame) -> SeenPart:
    """``seen_in``'s part of a part of the transitions by key (every row of a key in it)."""
    running, ends = _running(transitions)
    return SeenPart(running, ends, erred_tasks(transitions)
                    if _has_scheduler_transitions(transitions) else None)


def seen_of(parts: list[SeenPart], samples: pl.DataFrame | None = None) -> Seen:
    """What the parts of the transitions say together (``samples``: the clock samples, one
    per flush, which end a worker's records too)."""
    running = [p.running for p in parts if p.running is not None]
    erred = [p.erred for p in parts if p.erred is not None]
    flight = (_in_flight(pl.concat(running), pl.concat([p.ends for p in parts
                                                        if p.ends is not None]), samples)
              if running else None)
    return Seen(flight, pl.concat(erred) if erred else None)


def _running(transitions: pl.DataFrame | pl.LazyFrame
             ) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """The executions still running where their key's worker-side transitions end (worker,
    key, host, pid, started: their last entry into ``executing``), and each process's last
    worker-side transition; None for both without worker-side transitions."""
    w = transitions.lazy().filter(pl.col("side") == "worker")
    if w.head(1).collect().height == 0:
        return None, None
    w = w.select("worker", "host", "pid", "key", "finish", "local_time_ns")
    last = (w.sort("local_time_ns", maintain_order=True).group_by("worker", "key")
            .agg(pl.col("host", "pid").last(), finish=pl.col("finish").last(),
                 started=pl.col("local_time_ns").filter(pl.col("finish") == "executing").max()))
    running = (last.filter(pl.col("finish").is_in(RUNNING))
               .select(pl.col("worker", "key", "host").cast(pl.String), "pid", "started")
               .collect())
    ends = (w.group_by("host", "pid").agg(end=pl.col("local_time_ns").max())
            .select(pl.col("host").cast(pl.String), "pid", "end").collect())
    return running, ends


def _in_flight(running: pl.DataFrame, ends: pl.DataFrame, samples: pl.DataFrame | None
               ) -> pl.DataFrame:
    """``worker, key, prefix, running_s`` of each execution still running when its worker's
    records end: a killed job's, or one its client left running; ``running_s`` from its
    start to the worker's last record (a transition, or a clock sample of ``samples``),
    worker clock."""
    from correlate.frames.prefixes import key_splits

    if samples is not None and not samples.is_empty():
        ends = pl.concat([ends, samples.select(pl.col("host").cast(pl.String), "pid",
                                               end=pl.col("local_time_ns").cast(pl.Int64))])
    end = ends.group_by("host", "pid").agg(pl.col("end").max())
    out = (running.join(end, on=["host", "pid"], how="left", nulls_equal=True)
           .select("worker", "key", running_s=(pl.col("end") - pl.col("started")) / 1e9)
           .sort("running_s", "worker", "key", descending=[True, False, False],
                 nulls_last=True))
    return out.with_columns(prefix=key_splits(out["key"])).select(
        "worker", "key", "prefix", "running_s")


def job_outcome(facts: dict[str, Any], transitions: pl.DataFrame | pl.LazyFrame | Seen,
                tasks: pl.DataFrame, samples: pl.DataFrame | None = None) -> dict[str, Any]:
    """Exit code (None: not recorded) and erred tasks, per prefix and key, from the
    transitions or what ``seen_in`` took of them."""
    from correlate.frames.prefixes import key_splits

    raised = (tasks.select("key", "status").filter(pl.col("status") == "error")
              .select(pl.col("key").cast(pl.String)).unique()  # (as the transitions' names)
              if "status" in tasks.columns else pl.DataFrame({"key": []}, schema={"key": pl.String}))
    code = facts.get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    seen = transitions if isinstance(transitions, Seen) else seen_in(transitions, samples)
    flight = _in_flight_summary(seen.in_flight)
    if seen.erred is not None:
        erred, source = seen.erred, "scheduler transitions"
        # an execution that raised and was then retried to success is not an erred task
        raised = raised.join(erred, on="key")
    elif "status" in tasks.columns and tasks["status"].null_count() < tasks.height:
        erred, source = raised, "executions that raised (no scheduler transitions)"
    else:  # neither transitions nor execution statuses: unknown, not none
        return {"exit_code": code, "erred_tasks": None, "raised": None, "erred_by_prefix": [],
                "erred_keys": [], "source": "not recorded (no scheduler transitions and no "
                                            "execution status)", **flight}
    keys = erred["key"]
    rows = (pl.DataFrame({"key": keys, "prefix": key_splits(keys)})
            .with_columns(raised=pl.col("key").is_in(raised["key"].implode()))
            .sort(["raised", "key"], descending=[True, False]))  # the causes first
    keys = rows["key"]
    per = (rows.group_by("prefix").agg(tasks=pl.len(), raised=pl.col("raised").sum())
           .sort(["raised", "tasks", "prefix"], descending=[True, True, False]))
    return {
        "exit_code": code,
        "erred_tasks": keys.len(),
        "raised": raised.height,
        "erred_by_prefix": per.to_dicts(),
        "erred_keys": keys.head(KEYS_LISTED).to_list(),
        "source": source,
        **flight,
    }


#: worker states an execution is in (a task that seceded is ``long-running``, still running)
RUNNING = ("executing", "long-running")


def _in_flight_summary(flight: pl.DataFrame | None) -> dict[str, Any]:
    if flight is None:  # unknown, not none
        return {"in_flight": None, "in_flight_by_prefix": [], "in_flight_executions": []}
    per = (flight.group_by("prefix").agg(executions=pl.len())
           .sort(["executions", "prefix"], descending=[True, False]))
    return {"in_flight": flight.height, "in_flight_by_prefix": per.to_dicts(),
            "in_flight_executions": [
                {**r, "running_s": None if r["running_s"] is None else round(r["running_s"], 3)}
                for r in flight.head(KEYS_LISTED).to_dicts()]}


def failed(outcome: dict[str, Any] | None) -> bool:
    """Whether the job ended with a non-zero exit code or erred tasks."""
    if not outcome:
        return False
    return bool(outcome.get("exit_code")) or bool(outcome.get("erred_tasks"))


def outcome_line(outcome: dict[str, Any] | None, keys_shown: int = 5) -> str | None:
    """``job failed: exit code 1; 6 tasks erred (3 raised): bad 3 (3 raised), after 3
    (a dependency erred); keys: after-0, …`` — None when the job did not fail (or a summary
    from before this field)."""
    flying = (outcome or {}).get("in_flight") or 0
    if not failed(outcome) and not flying:
        return None
    assert outcome is not None
    code = outcome.get("exit_code")
    parts = [f"exit code {code}" if code is not None else "exit code not recorded"]
    n = outcome.get("erred_tasks") or 0
    if n:
        groups = []
        for g in outcome.get("erred_by_prefix") or []:
            deps = g["tasks"] - g["raised"]
            why = ([f"{g['raised']:,} raised"] if g["raised"] else []) + (
                [f"{deps:,} because a dependency erred"] if deps else [])
            groups.append(f"{g['prefix']} {g['tasks']:,} ({', '.join(why)})")
        keys = outcome.get("erred_keys") or []
        more = ", …" if n > min(len(keys), keys_shown) else ""
        parts.append(f"{n:,} task(s) erred: {'; '.join(groups)}; keys: "
                     f"{', '.join(keys[:keys_shown])}{more}")
    elif code:
        parts.append("no task erred")
    if flying:
        parts.append(_in_flight_text(outcome, keys_shown))
    return ("job failed: " if failed(outcome) else "job ended with executions in flight: "
            ) + "; ".join(parts)


def _in_flight_text(outcome: dict[str, Any], keys_shown: int) -> str:
    """``2 execution(s) in flight when the records end: sleepy 2; sleepy-0 on tcp://…
    (running 3.2 s), …``."""
    n = outcome.get("in_flight") or 0
    groups = "; ".join(f"{g['prefix']} {g['executions']:,}"
                       for g in outcome.get("in_flight_by_prefix") or [])
    shown = []
    for e in (outcome.get("in_flight_executions") or [])[:keys_shown]:
        running = ("" if e.get("running_s") is None
                   else f", running {e['running_s']:.1f} s")
        shown.append(f"{e['key']} (on {e['worker']}{running})")
    more = ", …" if n > len(shown) else ""
    return (f"{n:,} execution(s) in flight when the records end: {groups}; "
            f"{', '.join(shown)}{more}")
