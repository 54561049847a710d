"""The attribution of one run, the package's door (``correlate.attribution.attribute``): the
per-process pass over the DXT segments (``driver``), the clocks it found, the executions on
them, then what DXT does not trace (``untraced``), the doubtful file names (``doubtful``) and
each execution's spill (``spill``). The engine reads the result, never the parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from correlate.attribution import doubtful, helper_commands, passes, spill, threads, untraced
from correlate.attribution.counters import counter_totals, untraced_counters
from correlate.attribution.driver import attribute_all
from correlate.attribution.local_dir import barrier_owners
from correlate.attribution.stdio import stdio_totals
from correlate.frames.mappers import Mapper, local_map
from correlate.schema.methods import BY_THREAD
from correlate.sinks import TableSink
from correlate.sources.frames import RunFrames
from correlate.timeline import align


@dataclass(frozen=True)
class Attribution:
    """Every Darshan record of a run given to the executions that made it, or left
    unattributed with its reason; the ``segments`` table went to the sink as it was made."""

    #: the executions with the threads the partitions inferred (``thread_inferred``), aligned
    #: to the run timeline
    executions: pl.DataFrame
    #: every process's clock: the workers', Darshan's (markers or containment) and those of
    #: logs without DXT (their counters' markers)
    clocks: pl.DataFrame
    #: execution_id, attribution: the method its process allowed (``window-split`` for an
    #: execution recorded without the thread that method needs)
    methods: pl.DataFrame
    #: the output task_files rows without their key (spooled: read at their stage), and
    #: each execution's I/O totals
    task_files: pl.LazyFrame
    io_totals: pl.DataFrame
    unattributed: pl.DataFrame
    #: spill per key and process (``spill.spill_io``, with the counters' spill)
    spilled: pl.DataFrame
    #: execution_id, its key's spill figures (on the key's last execution), and the figure of
    #: an execution it has no row for (``spill.per_execution``)
    spill_columns: pl.DataFrame
    spill_absent: int | None
    #: key, worker, the inputs' read-back from spill (Dask's own ``disk-read``)
    read_back: pl.DataFrame
    #: what the summary takes: the segments' totals per (host, pid, attribution), the C stdio
    #: and the counters' totals, the P2P shuffles' I/O, the threads inferred
    segment_totals: pl.DataFrame
    stdio_totals: dict[str, float]
    counter_totals: dict[str, float]
    shuffle_io: pl.DataFrame
    thread_inference: dict[str, Any]


def attribute(frames: RunFrames, executions: pl.DataFrame, windows: pl.DataFrame,
              worker_clocks: pl.DataFrame, sink: TableSink, mapper: Mapper = local_map
              ) -> Attribution:
    """Attribute the run's I/O to ``executions`` (numbered, not yet aligned; ``windows``:
    their I/O windows, a coroutine's slices); ``mapper`` runs the per-process partitions."""
    parts = attribute_all(frames.io_segments, frames.darshan_logs, windows,
                          frames.clock_markers, frames.file_opens, worker_clocks,
                          frames.processes, sink, mapper,
                          shuffle_owners=barrier_owners(executions))
    # the stdio pass needs only the windows (a coroutine's slices), not a copy of everything
    windows = windows.select("execution_id", "local_start_ns", "local_stop_ns")
    counted = untraced_counters(frames.io_file_counters, frames.darshan_logs)
    by_counters = align.counter_offsets(counted, frames.clock_markers).join(
        parts["darshan_clocks"], on=["host", "pid"], how="anti")
    clocks = pl.concat([worker_clocks, parts["darshan_clocks"], by_counters]).sort(
        "host", "pid", "domain", nulls_last=True)
    ex = align.align_executions(_with_inferred_threads(executions, parts["inferred_threads"]),
                                clocks)
    methods = untraced.counted_processes(_methods(ex, parts["methods"]), ex, counted)
    # taken out of ``parts``: the partitions' task_files (a row per execution and file, and
    # per share of a split segment) is let go once the untraced I/O is added
    files, io_totals, unattributed, spilled = untraced.with_untraced(
        *untraced.across_processes(*(parts.pop(n) for n in ("task_files", "io_totals"))),
        parts.pop("unattributed"), parts["spill"],
        passes.Run(frames, ex, clocks, windows, counted))
    spill_columns, spill_absent = spill.per_execution(ex, spilled,
                                                      _counts_every_file(frames, counted))
    return Attribution(
        executions=ex, clocks=clocks, methods=methods, task_files=files, io_totals=io_totals,
        unattributed=helper_commands.relabel(doubtful.relabel(unattributed, frames.file_opens),
                                             frames.darshan_logs), spilled=spilled,
        spill_columns=spill_columns, spill_absent=spill_absent,
        read_back=spill.input_read_back(frames.startstops),
        segment_totals=parts["segment_totals"],
        stdio_totals=stdio_totals(frames.io_file_counters),
        counter_totals=counter_totals(counted), shuffle_io=parts["shuffle_io"],
        thread_inference=threads.counts_of(parts["inferred_threads"]))


def _methods(ex: pl.DataFrame, per_process: pl.DataFrame) -> pl.DataFrame:
    """execution_id → the method its process allowed; an execution recorded without the
    thread that method ties bytes by gets ``window-split``."""
    methods = ex.select("execution_id", "host", "pid", "thread_id").join(
        per_process, on=["host", "pid"], how="inner", nulls_equal=True)
    return methods.select("execution_id", attribution=pl.when(
        pl.col("attribution").is_in(BY_THREAD) & pl.col("thread_id").is_null())
        .then(pl.lit("window-split")).otherwise(pl.col("attribution")))


def _counts_every_file(frames: RunFrames, counted: pl.DataFrame) -> bool:
    """Whether the run's Darshan logs count every file a process touched: DXT traced its
    operations, or POSIX counters of logs without DXT (``counted``)."""
    modules = frames.darshan_logs.get_column("modules").explode()
    return bool(modules.str.starts_with("DXT_").any()) or not counted.is_empty()


def _with_inferred_threads(ex: pl.DataFrame, inferred: pl.DataFrame) -> pl.DataFrame:
    """Executions with the thread ids the partitions inferred (``thread_inferred`` says
    which)."""
    found = inferred.drop_nulls("execution_id").select("execution_id",
                                                       inferred_thread="thread_id")
    return ex.join(found, on="execution_id", how="left", maintain_order="left").with_columns(
        thread_id=pl.coalesce("thread_id", "inferred_thread"),
        thread_inferred=pl.col("inferred_thread").is_not_null()).drop("inferred_thread")
