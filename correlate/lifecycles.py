"""The per-task lifecycle view (seed 004): one JSON object per task key with everything the
sources say about it, for every input format (``task_lifecycles.jsonl``).

Each object: ``key``, ``prefix``, ``group``, ``depends_on`` / ``dependents`` (graph),
``submitted_ns`` and ``client`` (first update_graph that carried it), ``executions`` (count) and
``events`` in time order. An event has ``time_ns``, ``kind`` (``scheduler-transition``,
``worker-transition``, ``execution``, ``startstop``, ``transfer``), ``clock`` (whose clock
``time_ns`` is on: ``scheduler``, ``worker`` or ``worker+scheduler_delay``) and the fields of
its source row that are not null — for scheduler transitions the start/finish states, stimulus,
source (scheduler) address, worker, thread, begins/ends and any unknown CSV column.

Times stay on their recording clock (this view is the raw story; the aligned timeline is
``events.parquet``), so events of different clocks may interleave by a few ms. Pure:
``lifecycles(frames)`` yields dicts; ``write_lifecycles`` writes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from correlate.sources.frames import RunFrames

_EVENT_SCHEMA = {"key": pl.String, "time_ns": pl.Int64, "kind": pl.String, "clock": pl.String,
                 "detail": pl.String}
_TRANSITION_SKIP = ("key", "side", "local_time_ns", "prefix", "group")


def _detail(df: pl.DataFrame, cols: list[str]) -> pl.Expr:
    """The non-key columns as one JSON string (nulls dropped later)."""
    exprs = [pl.col(c).cast(pl.String) if df.schema[c] == pl.Categorical
             or isinstance(df.schema[c], pl.Enum) else pl.col(c) for c in cols]
    return pl.struct(exprs).struct.json_encode().alias("detail")


def _transition_events(tr: pl.DataFrame) -> list[pl.DataFrame]:
    out = []
    for side in ("scheduler", "worker"):
        part = tr.filter(pl.col("side").cast(pl.String) == side)
        if part.is_empty():
            continue
        cols = [c for c in part.columns if c not in _TRANSITION_SKIP
                and part[c].null_count() < part.height]
        out.append(part.select("key", time_ns="local_time_ns", kind=pl.lit(f"{side}-transition"),
                               clock=pl.lit(side), detail=_detail(part, cols)))
    return out


def _events(frames: RunFrames) -> pl.DataFrame:
    parts = _transition_events(frames.transitions)
    ex = frames.executions
    if ex.height:
        cols = ["worker", "host", "pid", "thread_id", "local_start_ns", "local_stop_ns",
                "cpu_s", "status", "window_source"]
        clock = pl.when(pl.col("window_source").cast(pl.String).is_in(["startstops",
                                                                        "task-stream"]))
        parts.append(ex.select("key", time_ns="local_start_ns", kind=pl.lit("execution"),
                               clock=clock.then(pl.lit("worker+scheduler_delay"))
                               .otherwise(pl.lit("worker")),
                               detail=_detail(ex, cols)))
    ss = frames.startstops
    if ss.height:
        parts.append(ss.select("key", time_ns="reported_start_ns", kind=pl.lit("startstop"),
                               clock=pl.lit("worker+scheduler_delay"),
                               detail=_detail(ss, ["action", "worker", "source",
                                                   "reported_start_ns", "reported_stop_ns"])))
    tk = frames.transfer_keys.join(frames.transfers, on="transfer_id")
    if tk.height:
        parts.append(tk.select("key", time_ns="reported_start_ns", kind=pl.lit("transfer"),
                               clock=pl.lit("worker+scheduler_delay"),
                               detail=_detail(tk, ["transfer_id", "direction", "worker", "peer",
                                                   "nbytes", "total_bytes", "reported_start_ns",
                                                   "reported_stop_ns"])))
    if not parts:
        return pl.DataFrame(schema=_EVENT_SCHEMA)
    return pl.concat([p.cast(_EVENT_SCHEMA) for p in parts]).sort(
        "key", "time_ns", "kind", nulls_last=True, maintain_order=True)


def _graph(frames: RunFrames) -> dict[str, dict[str, Any]]:
    deps = frames.dependencies
    info: dict[str, dict[str, Any]] = {}
    if deps.is_empty():
        return info
    for key, on, client, t in (deps.group_by("key").agg(
            pl.col("depends_on").unique().sort(), pl.col("client").first(),
            pl.col("local_time_ns").min()).iter_rows()):
        info[key] = {"depends_on": on, "client": client, "submitted_ns": t}
    for key, users in deps.group_by("depends_on").agg(pl.col("key").unique().sort()).iter_rows():
        info.setdefault(key, {})["dependents"] = users
    return info


def _names(frames: RunFrames) -> dict[str, tuple[str | None, str | None]]:
    named = [df.select("key", "prefix", "group") for df in (frames.executions, frames.transitions)
             if {"prefix", "group"} <= set(df.columns) and df.height]
    out: dict[str, tuple[str | None, str | None]] = {}
    if named:
        for key, prefix, group in (pl.concat(named, how="vertical_relaxed").drop_nulls("prefix")
                                   .unique("key", keep="first", maintain_order=True)
                                   .iter_rows()):
            out[key] = (prefix, group)
    return out


def lifecycles(frames: RunFrames) -> Iterator[dict[str, Any]]:
    """One dict per key (every key seen in any table, graph-only keys included), sorted."""
    from dask.utils import key_split

    events = _events(frames)
    graph = _graph(frames)
    names = _names(frames)
    by_key: dict[str, list[dict[str, Any]]] = {}
    for key, t, kind, clock, detail in events.iter_rows():
        fields = {k: v for k, v in json.loads(detail).items() if v is not None}
        by_key.setdefault(key, []).append({"time_ns": t, "kind": kind, "clock": clock, **fields})
    for key in sorted(set(by_key) | set(graph)):
        evs = by_key.get(key, [])
        prefix, group = names.get(key, (None, None))
        g = graph.get(key, {})
        yield {"key": key, "prefix": prefix or key_split(key), "group": group,
               "depends_on": g.get("depends_on", []), "dependents": g.get("dependents", []),
               "client": g.get("client"), "submitted_ns": g.get("submitted_ns"),
               "executions": sum(e["kind"] == "execution" for e in evs), "events": evs}


def write_lifecycles(frames: RunFrames, path: Path) -> int:
    """Write ``task_lifecycles.jsonl``; returns the number of tasks written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w") as fh:
        for obj in lifecycles(frames):
            fh.write(json.dumps(obj, sort_keys=True, default=str) + "\n")
            n += 1
    return n
