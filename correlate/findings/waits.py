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
    links = ctx.path.filter(pl.col(column) > 0)
    # (the links' executions first: a join hashes every execution of a big run's tasks)
    ids = links.get_column("execution_id").implode()
    return links.join(ctx.tasks.select("execution_id", *extra)
                      .filter(pl.col("execution_id").is_in(ids)), on="execution_id", how="left")


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


def stored(startstops: pl.DataFrame) -> pl.DataFrame | None:
    """key, worker → store_s: Dask's ``disk-write`` startstops (storing a task's result took
    over 5 ms: the spill buffer wrote it, or other keys to make room, to disk), summed; None
    where there are no startstops at all (a source without them)."""
    if startstops.is_empty():
        return None
    return (startstops.filter(pl.col("action") == "disk-write")
            .group_by("key", "worker")
            .agg(store_s=(pl.col("reported_stop_ns") - pl.col("reported_start_ns")).sum() / 1e9))


def _stored_waits(ctx: Context) -> pl.DataFrame:
    """The path's links released by their dependency whose predecessor's result was stored
    with a disk-write (``wait_store_s``): Dask stores a result before it tells the scheduler the
    task ended, so the write delayed the link's assignment; at most the link's scheduler wait
    (not recorded: none counted)."""
    path = ctx.path
    if ctx.evidence.stored is None or ctx.evidence.stored.is_empty() or path.is_empty():
        return path.clear().with_columns(wait_store_s=pl.lit(None, pl.Float64))
    before = path.select(position=pl.col("position") + 1, pred_key="key", pred_worker="worker")
    return (path.filter(pl.col("gate") == "dependency")
            .join(before, on="position")
            .join(ctx.evidence.stored, left_on=["pred_key", "pred_worker"],
                  right_on=["key", "worker"])
            .with_columns(wait_store_s=pl.min_horizontal(
                "store_s", pl.col("wait_scheduler_s").fill_null(0.0)))
            .filter(pl.col("wait_store_s") > 0)
            .drop("pred_key", "pred_worker", "store_s"))


def _disk_evidence(ctx: Context, column: str) -> tuple[bool, bool]:
    """(silent, partial) for Dask's disk-read or disk-write waits, from the spill files' bytes
    read back or written (``column``): silent where the run's Darshan logs count every file
    and none was (the store was slow, not the disk); partial where nothing recorded it."""
    total = (measured_sum(pl.col(column)) if column in ctx.tasks.columns
             else pl.lit(None, pl.Float64))
    got = number(ctx.tasks.select(total).item())
    return got == 0, got is None


def spill(ctx: Context) -> list[dict[str, Any]]:
    """Links of the critical path that waited for spill: for their inputs to be read back from
    disk (Dask's disk-read before they ran), or for their predecessor's result to be stored
    (Dask's disk-write, before the scheduler heard the predecessor had ended); per prefix, those
    waits (what the window would save had the data stayed in memory). Dask records either
    whenever the store takes over 5 ms, spilled or not: each part is silent where the run's
    Darshan logs count every file and no spill file was read (written), and said to be partial
    where nothing recorded whether any was."""
    read_silent, read_partial = _disk_evidence(ctx, "unspilled_bytes")
    write_silent, write_partial = _disk_evidence(ctx, "spilled_bytes")
    parts = [] if read_silent else [_path_waits(ctx, "wait_read_back_s").select(
        "position", "prefix", "key", read_s="wait_read_back_s", store_s=pl.lit(0.0))]
    parts += [] if write_silent else [_stored_waits(ctx).select(
        "position", "prefix", "key", read_s=pl.lit(0.0), store_s="wait_store_s")]
    parts = [f.with_columns(pl.col("prefix").cast(pl.String)) for f in parts
             if not f.is_empty()]
    if not parts:
        return []
    links = (pl.concat(parts).group_by("position", "prefix", "key")
             .agg(pl.col("read_s").sum(), pl.col("store_s").sum()))
    out = []
    for (prefix,), rows in sorted(links.partition_by("prefix", as_dict=True).items(),
                                  key=lambda kv: str(kv[0][0])):
        read = float(rows.get_column("read_s").sum())
        store = float(rows.get_column("store_s").sum())
        said = []
        if read > 0:
            said.append(f"{read:.3f} s for their inputs to be read back from Dask's spill files")
        if store > 0:
            said.append(f"{store:.3f} s for their inputs to be written to Dask's spill files "
                        "before the scheduler heard they were done")
        missing = (read > 0 and read_partial) or (store > 0 and write_partial)
        partial = None if not missing else (
            "Dask's disk-read or disk-write, with no Darshan record of the spill files: whether "
            "the data went to disk, or a store slowed otherwise, is not captured")
        out.append(finding(
            "spill", wait_saved(ctx, read + store), [str(prefix)],
            rows.sort(pl.col("read_s") + pl.col("store_s"), descending=True)
            .get_column("key").to_list(), [],
            f"{rows.height} {prefix} link(s) of the critical path waited " + " and ".join(said),
            "give the workers more memory (or fewer threads each), persist less at once, or "
            "make the partitions smaller", partial))
    return out
