"""The per-task lifecycle view (seed 004): one JSON object per task key with its scheduler and
worker events, executions and transfers in time order (``task_lifecycles.jsonl``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from correlate.sources.frames import RunFrames


def _events(frames: RunFrames) -> pl.DataFrame:
    tr = frames.transitions.select(
        "key", time_ns="local_time_ns", kind=pl.concat_str(pl.col("side").cast(pl.String),
                                                           pl.lit("-transition")),
        detail=pl.struct("start", "finish", "stimulus_id", "worker", "thread_id", "nbytes"))
    ex = frames.executions.select(
        "key", time_ns="local_start_ns", kind=pl.lit("execution"),
        detail=pl.struct("worker", "host", "pid", "thread_id", "local_start_ns",
                         "local_stop_ns", "cpu_s", "status"))
    tk = frames.transfer_keys.join(frames.transfers, on="transfer_id").select(
        "key", time_ns="reported_start_ns", kind=pl.lit("transfer"),
        detail=pl.struct(pl.col("direction").cast(pl.String), "worker", "peer", "nbytes",
                         "reported_start_ns", "reported_stop_ns"))
    parts = [p.with_columns(detail=pl.col("detail").struct.json_encode())
             for p in (tr, ex, tk) if p.height]
    if not parts:
        return pl.DataFrame(schema={"key": pl.String, "time_ns": pl.Int64, "kind": pl.String,
                                    "detail": pl.String})
    return pl.concat(parts).sort("key", "time_ns", "kind", nulls_last=True)


def lifecycles(frames: RunFrames) -> Iterator[dict[str, Any]]:
    """One dict per key: ``{"key", "prefix", "events": [{"time_ns", "kind", ...}, ...]}``."""
    events = _events(frames)
    prefix = dict(frames.executions.select("key", "prefix").unique("key").iter_rows())
    for (key,), group in events.group_by("key", maintain_order=True):
        yield {"key": key, "prefix": prefix.get(key),
               "events": [{"time_ns": t, "kind": k, **json.loads(d)}
                          for _key, t, k, d in group.iter_rows()]}


def write_lifecycles(frames: RunFrames, path: Path) -> int:
    n = 0
    with path.open("w") as fh:
        for obj in lifecycles(frames):
            fh.write(json.dumps(obj, sort_keys=True, default=str) + "\n")
            n += 1
    return n
