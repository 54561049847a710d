"""Answers grouped the way Dask users label their work: by span and by annotation.

``distributed.span("load")`` nests (a task of ``span("etl")`` › ``span("load")`` has the span
``etl / load``), and Dask keeps its fine performance metrics per span (thread-cpu,
thread-noncpu, disk-read, …). A span's figures here cover its subtree, as Dask's
``Span.cumulative_worker_metrics`` do, so the two can be set side by side: our per-execution
thread CPU summed over the span against Dask's ``execute`` thread-cpu for it (the same clock,
read at the same task boundaries; Dask's reaches the scheduler with the workers' heartbeats, so
the last second of a run may be missing from it).

``dask.annotate(stage="fit")`` annotations are grouped by any key the user names
(``correlate RUN --group-by stage``). Pure functions over the ``tasks`` table.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from correlate.frames.grouping import measured_sum
from correlate.timeline import endings

#: Dask's span for tasks submitted outside any ``span(...)``
DEFAULT_SPAN = "default"
SEP = " / "


def has_spans(tasks: pl.DataFrame) -> bool:
    """Whether any task ran in a span the user named (not only Dask's default one)."""
    span = tasks.get_column("span")
    return bool(((span != DEFAULT_SPAN) & span.is_not_null()).any())


def _figures() -> dict[str, pl.Expr]:
    """What every group reports: executions, time, CPU, I/O, waits, transfers, spill (each
    null where no execution of the group had it measured)."""
    return {
        "executions": endings.is_run().sum(), "tasks": pl.col("key").n_unique(),
        "wall_s": pl.col("duration_s").sum(), "cpu_s": measured_sum("cpu_s"),
        "io_time_s": measured_sum("io_time_s"), "read_bytes": measured_sum("read_bytes"),
        "write_bytes": measured_sum("write_bytes"),
        # Dask-reported waits: no row is none (as in the reports' worker table)
        **{c: pl.col(c).fill_null(0.0).sum() for c in ("wait_thread_s", "transfer_s",
                                                        "input_read_back_s")},
        "spilled_bytes": measured_sum("spilled_bytes"),
    }


def span_totals(tasks: pl.DataFrame, span_tree: pl.DataFrame,
                dask_metrics: pl.DataFrame) -> pl.DataFrame:
    """One row per span path (every span the tasks ran in, and their ancestors): ``depth``
    (0 for a root) and the figures of the executions of its subtree, with Dask's own
    ``execute`` thread-cpu and thread-noncpu seconds for the same spans beside them
    (``dask_thread_cpu_s``, null where Dask reported none)."""
    spans = tasks.get_column("span").drop_nulls().unique().to_list()
    paths = sorted({p for s in spans for p in _ancestors(s)})
    if not paths:
        return pl.DataFrame()
    # an execution counts for its span and every span above it (ancestors found once per
    # distinct span, not once per execution)
    above = pl.DataFrame({"span": spans, "_paths": [_ancestors(s) for s in spans]},
                         schema={"span": pl.String, "_paths": pl.List(pl.String)})
    member = tasks.join(above, on="span", how="inner").explode("_paths")
    ours = member.group_by(span="_paths").agg(**_figures())
    dask = _dask_per_path(span_tree, dask_metrics)
    rows = pl.DataFrame({"span": paths}).join(ours, on="span", how="left")
    if not dask.is_empty():
        rows = rows.join(dask, on="span", how="left")
    else:
        rows = rows.with_columns(dask_thread_cpu_s=pl.lit(None, pl.Float64),
                                 dask_thread_noncpu_s=pl.lit(None, pl.Float64))
    return rows.with_columns(depth=pl.col("span").str.count_matches(SEP, literal=True)
                             ).sort("span")


def _ancestors(path: str | None) -> list[str]:
    """``a / b / c`` → ``a``, ``a / b``, ``a / b / c``."""
    if path is None:
        return []
    tags = path.split(SEP)
    return [SEP.join(tags[:i]) for i in range(1, len(tags) + 1)]


def _dask_per_path(span_tree: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    """span path → Dask's execute thread-cpu and thread-noncpu seconds (summed over the spans
    of one path: Dask makes a new ``default`` span once the previous one is done)."""
    execute = metrics.filter((pl.col("context") == "execute") & (pl.col("unit") == "seconds"))
    if execute.is_empty():
        return pl.DataFrame()
    per_id = execute.group_by("span_id").agg(
        dask_thread_cpu_s=pl.col("value").filter(pl.col("activity") == "thread-cpu").sum(),
        dask_thread_noncpu_s=pl.col("value").filter(pl.col("activity") == "thread-noncpu")
        .sum())
    return (span_tree.join(per_id, on="span_id", how="inner").group_by("span")
            .agg(pl.col("dask_thread_cpu_s").sum(), pl.col("dask_thread_noncpu_s").sum()))


def annotation_groups(tasks: pl.DataFrame, key: str) -> pl.DataFrame:
    """One row per value of annotation ``key`` (``value`` as JSON text; null: tasks without
    it), with the figures of its executions; heaviest wall time first."""
    # parsed once per distinct annotation text, not once per execution
    texts = tasks.get_column("annotations").drop_nulls().unique().to_list()
    values = pl.DataFrame({"annotations": texts, "value": [_annotation(t, key) for t in texts]},
                          schema={"annotations": pl.String, "value": pl.String})
    return (tasks.join(values, on="annotations", how="left").group_by("value").agg(**_figures())
            .sort("wall_s", "value", descending=[True, False], nulls_last=True))


def annotation_keys(annotations: pl.Series) -> list[str]:
    """The annotation keys any task carries (``annotations``: JSON texts, one per task)."""
    return sorted({k for t in annotations.drop_nulls().unique().to_list()
                   for k in json.loads(t)})


def unknown_group_keys(annotations: pl.Series, keys: tuple[str, ...]) -> str | None:
    """``None`` when every key of ``keys`` is carried by some task; else one line naming the
    keys no task carries and the keys present (a typo would group every task under "(not
    annotated)")."""
    present = annotation_keys(annotations)
    missing = [k for k in keys if k not in present]
    if not missing:
        return None
    have = (f"keys present: {', '.join(present)}" if present
            else "no task carries any annotation (dask.annotate)")
    return (f"--group-by {', '.join(missing)}: no task carries "
            f"{'this annotation key' if len(missing) == 1 else 'these annotation keys'}; {have}")


def _annotation(text: str, key: str) -> str | None:
    value = json.loads(text).get(key)
    return None if value is None else json.dumps(value, sort_keys=True)


def rows(df: pl.DataFrame) -> list[dict[str, Any]]:
    """JSON-able rows (floats rounded to the nanosecond/byte, as summary.json's others)."""
    return [{k: (round(v, 9) if isinstance(v, float) else v) for k, v in r.items()}
            for r in df.iter_rows(named=True)]
