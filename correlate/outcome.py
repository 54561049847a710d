"""How the job ended: its exit code and the tasks that erred, for ``summary.json``
(``job_outcome``) and one line in the terminal summary and report.md (``outcome_line``).

A task erred when the scheduler moved it to ``erred`` and it did not reach ``memory`` later
(a retry that succeeded is no failure). Dask errs a task whose own function raised and, with
it, every task that depends on it; the first are the executions whose status is ``error``,
so each prefix says how many raised and how many erred because a dependency did. Sources
without scheduler transitions (MiniApp, Dask's task stream) only know the executions that
raised: ``source`` says which evidence the counts come from.
"""

from __future__ import annotations

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
            .select("key").collect())
    return last


def _has_scheduler_transitions(transitions: pl.DataFrame | pl.LazyFrame) -> bool:
    return transitions.lazy().filter(pl.col("side") == "scheduler").head(1).collect().height > 0


def job_outcome(facts: dict[str, Any], transitions: pl.DataFrame | pl.LazyFrame,
                tasks: pl.DataFrame) -> dict[str, Any]:
    """Exit code (None: not recorded) and erred tasks, per prefix and key."""
    from correlate.prefixes import key_splits

    raised = (tasks.filter(pl.col("status") == "error").select("key").unique()
              if "status" in tasks.columns else pl.DataFrame({"key": []}, schema={"key": pl.String}))
    code = facts.get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if _has_scheduler_transitions(transitions):
        erred, source = erred_tasks(transitions), "scheduler transitions"
        # an execution that raised and was then retried to success is not an erred task
        raised = raised.join(erred, on="key")
    elif "status" in tasks.columns and tasks["status"].null_count() < tasks.height:
        erred, source = raised, "executions that raised (no scheduler transitions)"
    else:  # neither transitions nor execution statuses: unknown, not none
        return {"exit_code": code, "erred_tasks": None, "raised": None, "erred_by_prefix": [],
                "erred_keys": [], "source": "not recorded (no scheduler transitions and no "
                                            "execution status)"}
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
    }


def failed(outcome: dict[str, Any] | None) -> bool:
    """Whether the job ended with a non-zero exit code or erred tasks."""
    if not outcome:
        return False
    return bool(outcome.get("exit_code")) or bool(outcome.get("erred_tasks"))


def outcome_line(outcome: dict[str, Any] | None, keys_shown: int = 5) -> str | None:
    """``job failed: exit code 1; 6 tasks erred (3 raised): bad 3 (3 raised), after 3
    (a dependency erred); keys: after-0, …`` — None when the job did not fail (or a summary
    from before this field)."""
    if not failed(outcome):
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
    return "job failed: " + "; ".join(parts)
