"""The findings' rule over memory: workers paused at their memory limit, and work recomputed
after a worker died (``memory-pressure``); docs/findings.md. Spill's read-back waits are the
``spill`` rule's (``waits.py``): this one names the spill beside it without counting it."""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.findings.context import Context, finding
from correlate.frames.scalars import number
from correlate.timeline.lost import LOST


def recomputed(tasks: pl.DataFrame) -> pl.DataFrame:
    """The executions that ran a task again after its result died with a worker
    (execution_id, excess_s = its duration): the work the death added."""
    # (the columns used, taken before filtering: a filter copies every column it keeps)
    t = tasks.select("execution_id", "key", "prefix", "status", "start_ns", "stop_ns",
                     "duration_s")
    lost = t.filter(pl.col("status") == LOST).group_by("key").agg(
        died_ns=pl.col("stop_ns").min())
    if lost.is_empty():
        return t.clear().select("execution_id", "key", "prefix", excess_s="duration_s")
    return (t.filter(pl.col("status").ne_missing(LOST)).join(lost, on="key")
            .filter(pl.col("start_ns") >= pl.col("died_ns"))
            .select("execution_id", "key", "prefix", excess_s="duration_s"))


def memory_pressure(ctx: Context) -> list[dict[str, Any]]:
    """Waits of the critical path's links while their worker was paused at its memory limit
    (``wait_paused_s``), and the recomputations of results that died with a worker. The
    shorter window is at least the window less the paused waits and the recomputations on the
    path, and at least the busy time less every recomputation, shared evenly by the threads;
    the cost is the window less the larger."""
    t = ctx.tasks
    paused = (t.select("key", "prefix", "worker", "wait_paused_s").filter(
        pl.col("wait_paused_s") > 0) if "wait_paused_s" in t.columns else t.clear())
    again = recomputed(t)
    path_paused = number(ctx.path.get_column("wait_paused_s").sum()) or 0.0
    if paused.is_empty() and again.is_empty():
        return []
    on_path = again.join(ctx.path.select("execution_id"), on="execution_id", how="semi")
    path_again = number(on_path.get_column("excess_s").sum()) or 0.0
    all_again = number(again.get_column("excess_s").sum()) or 0.0
    shorter = max(ctx.window_s - path_paused - path_again,
                  (ctx.busy_s - all_again) / max(ctx.threads, 1))
    cost = max(0.0, ctx.window_s - shorter)
    said = []
    if not paused.is_empty():
        waited = number(paused.get_column("wait_paused_s").sum()) or 0.0
        workers = paused.get_column("worker").drop_nulls().n_unique()
        said.append(f"{paused.height} execution(s) ready on {workers} paused worker(s) waited "
                    f"{waited:.3f} s for the worker to resume ({path_paused:.3f} s of it on "
                    "the critical path)")
    if not again.is_empty():
        said.append(f"{again.height} execution(s) recomputed results that died with a worker "
                    f"({all_again:.3f} s of compute, {path_again:.3f} s on the critical path)")
    spilled = number(t.get_column("spilled_bytes").sum()) if "spilled_bytes" in t.columns \
        else None
    if spilled:
        said.append(f"{spilled:,.0f} bytes of results spilled to disk beside it (the spill "
                    "finding counts its waits)")
    weighed = pl.concat([paused.select("prefix", w=pl.col("wait_paused_s")),
                         again.select("prefix", w="excess_s")])
    prefixes = (weighed.group_by("prefix").agg(pl.col("w").sum())
                .sort("w", "prefix", descending=[True, False]).get_column("prefix")
                .drop_nulls().to_list())
    keys = pl.concat([paused.select("key", w=pl.col("wait_paused_s")),
                      again.select("key", w="excess_s")]).sort("w", "key", descending=[True, False])
    return [finding(
        "memory-pressure", cost, prefixes, keys.get_column("key").unique(maintain_order=True)
        .to_list(), [], "; ".join(said),
        "give the workers more memory (or fewer threads each, so fewer results are held at "
        "once), make the partitions smaller, or release results sooner (fewer persisted "
        "collections); a worker that dies loses its results and their compute")]
