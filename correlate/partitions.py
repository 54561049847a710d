"""Per-process partitions of the I/O attribution, run one after another or as Dask tasks.

A DXT segment can only belong to an execution of its own (host, pid), so attribution never needs
data from two processes at once: the run is cut into one partition per process that issued I/O
(its aligned segments + its executions), each partition is attributed on its own, and the
partial tables are concatenated. ``seg_id`` and ``execution_id`` are numbered before the cut, and
every output table is sorted afterwards, so the result is identical row for row whichever way the
partitions run.

A *mapper* runs a function over a list of items and returns the results in order:
``local_map`` in this process (partitions one at a time, so the intermediates of only one are
alive), or ``correlate.cluster.dask_map`` on a Dask cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import polars as pl

from correlate import attribute

Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]
PARTIAL_TABLES = ("task_files", "unattributed", "segments", "methods")


def local_map(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    return [fn(item) for item in items]


@dataclass(frozen=True)
class Partition:
    """One process's aligned segments (with ``seg_id``) and executions."""

    host: str | None
    pid: int | None
    segments: pl.DataFrame
    executions: pl.DataFrame


def split(segments: pl.DataFrame, executions: pl.DataFrame) -> list[Partition]:
    """One partition per (host, pid) that has segments, largest first (better packing on a
    cluster), with the executions of that process."""
    ex_by_proc = executions.partition_by("host", "pid", as_dict=True)
    parts = [Partition(host, pid, seg, ex_by_proc.get((host, pid), executions.clear()))
             for (host, pid), seg in segments.partition_by("host", "pid", as_dict=True).items()]
    return sorted(parts, key=lambda p: (-p.segments.height, str(p.host), p.pid or -1))


def _segments_table(att: attribute.IOAttribution) -> pl.DataFrame:
    """Every segment with the execution holding its largest share."""
    main = (att.shares.sort("weight", "execution_id", descending=[True, False])
            .unique("seg_id", keep="first").select("seg_id", "execution_id"))
    return att.segments.join(main, on="seg_id", how="left")


def _process_method(att: attribute.IOAttribution) -> pl.DataFrame:
    """(host, pid) → the best attribution method its segments allowed."""
    return att.segments.group_by("host", "pid").agg(
        attribution=pl.when((pl.col("attribution") == "exact-thread").any())
        .then(pl.lit("exact-thread"))
        .when((pl.col("attribution") == "window-split").any())
        .then(pl.lit("window-split")).otherwise(pl.lit("none")))


def attribute_partition(part: Partition, *, processes: pl.DataFrame,
                        marker_paths: list[str]) -> dict[str, pl.DataFrame]:
    """The partial output tables of one process."""
    att = attribute.io_to_executions(part.segments, part.executions)
    return {
        "task_files": attribute.task_files(att, part.executions),
        "unattributed": attribute.unattributed_io(att, part.executions, processes, marker_paths),
        "segments": _segments_table(att),
        "methods": _process_method(att),
    }


def attribute_all(segments: pl.DataFrame, executions: pl.DataFrame, processes: pl.DataFrame,
                  marker_paths: list[str], mapper: Mapper = local_map) -> dict[str, pl.DataFrame]:
    """Attribute every partition through ``mapper`` and concatenate the partial tables (empty
    frames of the right columns when there is no I/O at all)."""
    parts = split(segments, executions)
    if not parts:
        parts = [Partition(None, None, segments, executions)]
    fn = partial(attribute_partition, processes=processes, marker_paths=marker_paths)
    results = mapper(fn, parts)
    return {name: pl.concat([r[name] for r in results], how="diagonal_relaxed")
            for name in PARTIAL_TABLES}
