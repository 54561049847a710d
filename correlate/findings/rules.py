"""The findings' rules, listed once (``RULES``: each a pure function of a ``Context``
returning rows of the ``findings`` table), and the table they make: every rule's findings above
the threshold, the costliest first (docs/findings.md says each rule's evidence, threshold, cost
and advice).

A finding's ``cost_s`` is what removing the problem would shorten the task window by, bounded
by what it contributes to the span (``context.span_saved``). A finding whose cost is below
``MIN_COST_SHARE`` of the window (or ``MIN_COST_S``) is not reported: a job without problems has
none above that. A rule whose evidence is missing (no I/O captured, no CPU measured) stays
silent; one whose evidence is partial says so in ``partial``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from correlate.findings import critical_path
from correlate.findings.context import MIN_COST_S, MIN_COST_SHARE, Context, Evidence
from correlate.findings.io_rules import (
    metadata,
    repeated_reads,
    shared_file,
    small_requests,
)
from correlate.findings.memory import memory_pressure
from correlate.findings.overhead import cpu_outside_tasks, tiny_tasks
from correlate.findings.timing import (
    idle_threads,
    serial_section,
    straggler,
    thread_contention,
)
from correlate.findings.waits import spill, waiting_for_inputs
from correlate.frames.scalars import integer, number, rounded
from correlate.schema import TABLES, conform

__all__ = ["MIN_COST_S", "MIN_COST_SHARE", "RULES", "Evidence", "as_json", "findings"]

RULES: tuple[Callable[[Context], list[dict[str, Any]]], ...] = (
    serial_section, straggler, thread_contention, idle_threads, small_requests,
    repeated_reads, shared_file, metadata, waiting_for_inputs, spill, tiny_tasks, cpu_outside_tasks,
    memory_pressure)


def findings(tasks: pl.DataFrame, task_files: pl.DataFrame, path: pl.DataFrame,
             evidence: Evidence) -> pl.DataFrame:
    """The ``findings`` table: every rule's findings above the threshold, costliest first."""
    timed = critical_path.timed(tasks)
    if timed.is_empty() or path.is_empty():
        return TABLES["findings"].empty()
    start = integer(timed.get_column("start_ns").min()) or 0
    window = ((integer(timed.get_column("stop_ns").max()) or 0) - start) * 1e-9
    threads = timed.select("host", "pid", "thread_id").unique().height
    busy = number(timed.get_column("duration_s").sum()) or 0.0
    ctx = Context(timed, task_files, path, evidence, window, threads, busy)
    floor = ctx.floor_s
    rows = [f for rule in RULES for f in rule(ctx)
            if f["cost_s"] is not None and f["cost_s"] >= floor]
    rows.sort(key=lambda f: (-f["cost_s"], f["kind"], f["prefixes"]))
    if not rows:
        return TABLES["findings"].empty()
    df = pl.DataFrame(rows).with_row_index("rank", offset=1)
    return conform(df, TABLES["findings"], path="findings")


def as_json(found: pl.DataFrame) -> list[dict[str, Any]]:
    """``summary.json`` ``findings``: the table's rows, costliest first."""
    return [{**r, "cost_s": rounded(r["cost_s"])} for r in found.iter_rows(named=True)]
