"""What every rule of the findings shares: the evidence a run captured, the context a rule
reads (the timed executions, their files, the critical path, the window and the threads), the
threshold below which a finding is not reported, how a problem's cost is bounded by the span
(``span_saved``), and a finding's row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from correlate.frames.scalars import number

#: findings below this share of the task window, or below MIN_COST_S, are not reported
MIN_COST_SHARE = 0.05
MIN_COST_S = 0.01
#: how many keys and files a finding names
SHOWN = 5


@dataclass(frozen=True)
class Evidence:
    """What the run captured, beyond the tables: whether its Darshan logs were read at all
    (``io_captured``) and whether they traced operations (``dxt``); ``segments``: the
    ``segments`` output table, read lazily (the byte ranges of each read), or None;
    ``process_cpu``: the worker processes' CPU samples (``clock_samples``: host, pid,
    local_time_ns, process_cpu_s), or None; ``file_counters``: Darshan's per-file counters
    (``io_file_counters``: host, pid, path, opens, meta_time_s, …), or None; ``stored``: Dask's
    ``disk-write`` startstops per key and worker (key, worker, store_s: the time storing the
    task's result took where it wrote that result, or other keys to make room, to disk), or
    None where the source has no startstops."""

    io_captured: bool
    dxt: bool
    segments: pl.LazyFrame | None = None
    process_cpu: pl.DataFrame | None = None
    file_counters: pl.DataFrame | None = None
    stored: pl.DataFrame | None = None


@dataclass(frozen=True)
class Context:
    tasks: pl.DataFrame  # timed executions only
    task_files: pl.DataFrame
    path: pl.DataFrame
    evidence: Evidence
    window_s: float
    #: threads that ran a task, and the seconds they were busy with tasks
    threads: int
    busy_s: float

    @property
    def floor_s(self) -> float:
        """The least cost reported: a finding below it is dropped (``rules.findings``), so a
        rule may skip evidence whose cost cannot reach it (``span_saved`` is at most the sum
        of the excesses it is given)."""
        return max(MIN_COST_S, MIN_COST_SHARE * self.window_s)


def span_saved(ctx: Context, excess: pl.DataFrame) -> float:
    """What removing ``excess`` (execution_id → excess_s, the seconds the problem added to
    each execution) would shorten the window by. The shorter window is at least the critical
    path less the excess on its links, and at least the busy time left, shared evenly by the
    threads (the bound of a perfectly balanced schedule); the saving is the window less the
    larger of the two, so work off the path saves only what the threads' load lets it."""
    if excess.is_empty():
        return 0.0
    on_path = excess.join(ctx.path.select("execution_id"), on="execution_id", how="semi")
    path_x = number(on_path.get_column("excess_s").sum()) or 0.0
    all_x = number(excess.get_column("excess_s").sum()) or 0.0
    shorter = max(ctx.window_s - path_x, (ctx.busy_s - all_x) / max(ctx.threads, 1))
    return max(0.0, ctx.window_s - shorter)


def wait_saved(ctx: Context, path_wait_s: float) -> float:
    """What removing ``path_wait_s`` of waits between the critical path's links would shorten
    the window by: waits are no thread's work, so the shorter window is at least the path less
    them, and at least the busy time shared evenly by the threads."""
    shorter = max(ctx.window_s - path_wait_s, ctx.busy_s / max(ctx.threads, 1))
    return max(0.0, ctx.window_s - shorter)


def finding(kind: str, cost_s: float | None, prefixes: list[str], keys: list[str],
             files: list[str], evidence: str, advice: str, partial: str | None = None
             ) -> dict[str, Any]:
    return {"kind": kind, "cost_s": cost_s, "prefixes": sorted(set(prefixes)),
            "keys": keys[:SHOWN], "files": files[:SHOWN], "evidence": evidence,
            "advice": advice, "partial": partial}
