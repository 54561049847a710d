"""I/O that DXT did not trace, added after the per-process pass over the segments: C stdio
(``stdio``) and the POSIX counters of logs without DXT (``counters``); and the totals of an
execution whose I/O came from several processes' partitions."""

from __future__ import annotations

import polars as pl

from correlate.attribution.counters import attribute_counters
from correlate.attribution.exact import task_io_totals
from correlate.attribution.stdio import attribute_stdio
from correlate.frames.sorting import sorted_for_output
from correlate.schema import TABLES
from correlate.sources import darshan_logs
from correlate.sources.frames import RunFrames


def with_untraced(task_files: pl.DataFrame, io_totals: pl.DataFrame, unattributed: pl.DataFrame,
                  spilled: pl.DataFrame, frames: RunFrames, ex: pl.DataFrame,
                  windows: pl.DataFrame, clocks: pl.DataFrame, untraced: pl.DataFrame
                  ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """task_files, per-execution I/O totals, unattributed rows and spill per key
    (``spilled``: the segments' ``spill.spill_io``) with the run's C stdio I/O (counted per
    file by Darshan, untraced by DXT) and the POSIX counters of the logs without DXT added to
    what the segments gave; ``windows`` the executions as the segments' attribution saw
    them; ``untraced`` the POSIX counters of the logs without DXT (``untraced_counters``)."""
    files, stdio_unattributed = attribute_stdio(
        frames.io_file_counters, frames.file_opens, ex, frames.processes, clocks, windows)
    if not untraced.is_empty():
        heat = _heatmaps(frames.darshan_logs, untraced)
        more, more_unattributed, more_spilled = attribute_counters(
            untraced, heat, frames.file_opens, ex, frames.processes, clocks, windows,
            frames.clock_markers)
        files = pl.concat([files, more], how="diagonal_relaxed")
        stdio_unattributed = pl.concat([stdio_unattributed, more_unattributed],
                                       how="diagonal_relaxed")
        spilled = pl.concat([spilled, more_spilled.cast(spilled.schema)])
    if files.is_empty() and stdio_unattributed.is_empty():
        return task_files, io_totals, unattributed, spilled
    files = pl.concat([task_files, files], how="diagonal_relaxed")
    files = sorted_for_output(files, TABLES["task_files"])
    return (files, task_io_totals(files),
            pl.concat([unattributed, stdio_unattributed], how="diagonal_relaxed"), spilled)


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


def _heatmaps(logs: pl.DataFrame, untraced: pl.DataFrame) -> pl.DataFrame:
    """The HEATMAP bins of the logs whose POSIX counters are attributed without DXT."""
    wanted = set(untraced.get_column("log").cast(pl.String).unique().to_list())
    paths = logs.filter(pl.col("modules").list.contains("HEATMAP")).get_column("log").cast(
        pl.String).to_list()
    got = [darshan_logs.read_heatmap(p) for p in paths if p in wanted]
    return (pl.concat(got) if got
            else pl.DataFrame(schema=darshan_logs.HEATMAP_SCHEMA))


def across_processes(task_files: pl.DataFrame, io_totals: pl.DataFrame
                      ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """task_files and per-execution totals once an execution has I/O from several processes'
    partitions (a P2P shuffle's barrier holds the shard writes of every worker): its totals
    summed again over all its rows, one row per execution."""
    if not io_totals.get_column("execution_id").is_duplicated().any():
        return task_files, io_totals
    files = sorted_for_output(task_files, TABLES["task_files"])
    return files, task_io_totals(files)
