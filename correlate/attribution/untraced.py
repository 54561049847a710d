"""I/O that DXT did not trace, added after the per-process pass over the segments by the
untraced passes (``passes.untraced_passes``: C stdio, ``stdio``; the POSIX counters of logs
without DXT, ``counters``); and the totals of an execution whose I/O came from several
processes' partitions."""

from __future__ import annotations

import polars as pl

from correlate.attribution import passes
from correlate.attribution.exact import task_io_totals
from correlate.frames.sorting import has_repeats, sorted_for_output
from correlate.schema import TABLES


def with_untraced(task_files: pl.LazyFrame, io_totals: pl.DataFrame,
                  unattributed: pl.DataFrame, spilled: pl.DataFrame, given: passes.Run
                  ) -> tuple[pl.LazyFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """task_files, per-execution I/O totals, unattributed rows and spill per key
    (``spilled``: the segments' ``spill.spill_io``) with what the untraced passes give (the
    run's C stdio I/O, counted per file by Darshan and untraced by DXT; the POSIX counters of
    the logs without DXT) added to what the segments gave. task_files is read only when the
    passes add to it (a big run's, spooled: ``driver.SPOOLED``)."""
    parts = [part for step in passes.untraced_passes() if (part := step(given)) is not None]
    spilled = pl.concat([spilled, *(p.spilled.cast(spilled.schema) for p in parts
                                    if p.spilled is not None)])
    if all(p.files.is_empty() and p.unattributed.is_empty() for p in parts):
        return task_files, io_totals, unattributed, spilled
    files = sorted_for_output(pl.concat([task_files.collect(), *(p.files for p in parts)],
                                        how="diagonal_relaxed"), TABLES["task_files"])
    return (files.lazy(), task_io_totals(files),
            pl.concat([unattributed, *(p.unattributed for p in parts)], how="diagonal_relaxed"),
            spilled)


def counted_processes(methods: pl.DataFrame, ex: pl.DataFrame, counted: pl.DataFrame
                       ) -> pl.DataFrame:
    """``methods`` with ``none`` for the executions of processes whose log has POSIX counters
    but no DXT (``counted``, ``untraced_counters``): Darshan counted every file such a process
    touched, so an execution the counters gave nothing moved none of it (0 B, not unknown)."""
    if counted.is_empty():
        return methods
    pids = counted.get_column("pid").unique()
    more = ex.filter(pl.col("pid").is_in(pids.implode())).select(
        "execution_id", attribution=pl.lit("none", methods.schema["attribution"]))
    return pl.concat([methods, more.join(methods, on="execution_id", how="anti")])


def across_processes(task_files: pl.LazyFrame, io_totals: pl.DataFrame
                      ) -> tuple[pl.LazyFrame, pl.DataFrame]:
    """task_files and per-execution totals once an execution has I/O from several processes'
    partitions (a P2P shuffle's barrier holds the shard writes of every worker): its totals
    summed again over all its rows, one row per execution."""
    if not has_repeats(io_totals.get_column("execution_id")):
        return task_files, io_totals
    files = sorted_for_output(task_files.collect(), TABLES["task_files"])
    return files.lazy(), task_io_totals(files)
