"""The findings' rules over the critical path's waits: links that waited for their inputs to
be transferred (``waiting-for-inputs``) or read back from spill (``spill``); docs/findings.md.
Both read the ``wait_transfer_s`` and ``wait_read_back_s`` of the path's links (Dask's own
startstops: no Darshan needed)."""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.findings.context import Context, finding, wait_saved
from correlate.frames.grouping import measured_sum
from correlate.frames.scalars import number


def _path_waits(ctx: Context, column: str, *extra: str) -> pl.DataFrame:
    """The path's links that waited in ``column``, with their task figures ``extra``."""
    return (ctx.path.filter(pl.col(column) > 0)
            .join(ctx.tasks.select("execution_id", *extra), on="execution_id", how="left"))


def waiting_for_inputs(ctx: Context) -> list[dict[str, Any]]:
    """Links of the critical path that waited for their inputs to come from other workers:
    per prefix, the transfer waits on the path (what the window would save had the inputs
    been on their worker)."""
    links = _path_waits(ctx, "wait_transfer_s", "transfer_bytes", "transfer_sources")
    out = []
    for (prefix,), rows in sorted(links.partition_by("prefix", as_dict=True).items(),
                                  key=lambda kv: str(kv[0][0])):
        waited = float(rows.get_column("wait_transfer_s").sum())
        nbytes = rows.get_column("transfer_bytes").sum()
        peers = sorted({p for s in rows.get_column("transfer_sources").drop_nulls().to_list()
                        for p in s.split(",")})
        out.append(finding(
            "waiting-for-inputs", wait_saved(ctx, waited), [str(prefix)],
            rows.sort("wait_transfer_s", descending=True).get_column("key").to_list(), [],
            f"{rows.height} {prefix} link(s) of the critical path waited {waited:.3f} s for "
            f"their inputs to arrive from {len(peers) or 'unknown'} other worker(s)"
            + (f" ({nbytes:,} bytes)" if nbytes else ""),
            "keep dependent tasks on one worker (fewer workers with more threads, larger "
            "partitions, or fusing the steps), or pass less data between them"))
    return out


def spill(ctx: Context) -> list[dict[str, Any]]:
    """Links of the critical path that waited for their inputs to be read back from spill:
    per prefix, those waits (what the window would save had the inputs stayed in memory).
    The wait is Dask's disk-read, which Dask records whenever inputs take over 5 ms to come
    out of the worker's store, spilled or not: silent where the run's Darshan logs count
    every file and no result was read back from a spill file; said to be partial where
    nothing recorded whether any was."""
    links = _path_waits(ctx, "wait_read_back_s", "unspilled_bytes")
    read_back = (measured_sum(pl.col("unspilled_bytes")) if "unspilled_bytes" in ctx.tasks.columns
                 else pl.lit(None, pl.Float64))
    unspilled = number(ctx.tasks.select(read_back).item())
    if unspilled == 0:  # (every file counted, no spill file read: the store was slow)
        return []
    partial = None if unspilled is not None else (
        "Dask's disk-read, with no Darshan record of the spill files: whether the inputs came "
        "from disk, or a store slowed otherwise, is not captured")
    out = []
    for (prefix,), rows in sorted(links.partition_by("prefix", as_dict=True).items(),
                                  key=lambda kv: str(kv[0][0])):
        waited = float(rows.get_column("wait_read_back_s").sum())
        out.append(finding(
            "spill", wait_saved(ctx, waited), [str(prefix)],
            rows.sort("wait_read_back_s", descending=True).get_column("key").to_list(), [],
            f"{rows.height} {prefix} link(s) of the critical path waited {waited:.3f} s for "
            "their inputs to be read back from Dask's spill files",
            "give the workers more memory (or fewer threads each), persist less at once, or "
            "make the partitions smaller", partial))
    return out
