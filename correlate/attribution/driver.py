"""Partitions of the I/O attribution, each one or more whole processes, run in this process or
as Dask tasks.

A DXT segment can only belong to an execution of its own (host, pid), and Darshan's clock is
corrected per process, so neither alignment of the I/O nor attribution needs data from two
processes at once: every step keys its joins and group-bys by (host, pid), and the run is cut
into partitions of whole processes that issued I/O (their segments, or the Darshan logs to
read them from, their executions and clock markers), each aligned and attributed on its own;
the partial tables are concatenated in (host, pid) order. Small processes share a partition
up to ``PARTITION_ROWS`` rows (a thousand workers with a few hundred segments each are a few
partitions, not a thousand: each partition costs a few dozen polars operations whatever its
size), a process with more rows than that has one of its own, so that a partition's memory
is bounded by the budget or by one process. ``seg_id`` (the segment's row in the run's segment
table, in log order) and ``execution_id`` do not depend on the cut, and every output table is
sorted afterwards, so the result is identical row for row however the processes are grouped
and whichever way the partitions run.

Partitions run through a *mapper* (``correlate.frames.mappers``): in this process two at a time, so
that at most three partitions' data are alive at once, or as tasks on a Dask cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import polars as pl

from correlate.attribution import exact, p2p, passes, spill, threads
from correlate.attribution.shares import METHOD, IOAttribution
from correlate.frames.mappers import Mapper, local_map, runs_up_to
from correlate.frames.per_process import by_process, process_order
from correlate.frames.sorting import sorted_for_output
from correlate.frames.spill import Spool
from correlate.schema import conform
from correlate.schema.darshan import IO_SEGMENTS as SEGMENTS_IN
from correlate.schema.methods import LABELS, PROCESS, RANK
from correlate.schema.outputs import SEGMENTS, TASK_FILES
from correlate.sinks import PartWriter, TableSink
from correlate.sources import darshan_logs
from correlate.timeline import align

#: what attribution and the output tables use of a segment once its clock is known (every
#: column is copied at each step of the attribution, so the others are left behind)
SEGMENT_COLUMNS = ["seg_id", "host", "pid", "thread_id", "path", "op", "offset", "length",
                   "local_start_ns", "local_stop_ns"]
#: rows (DXT segments and executions) of the processes sharing one partition, at most: a
#: process with more is a partition alone (the runs of a few big workers keep one partition per
#: process, and their memory)
PARTITION_ROWS = 500_000
PARTIAL_TABLES = ("darshan_clocks", "task_files", "io_totals", "unattributed", "methods",
                  "segment_totals", "spill", "inferred_threads", "shuffle_io")
#: the partial tables ``attribute_all`` gives back as LazyFrames, spooled (``Spool``)
SPOOLED = ("task_files",)


Process = tuple[Any, Any]
#: a process's logs with segments, each with the ``seg_id`` of its first segment
Logs = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Partition:
    """Whole processes (``processes``, in ``process_order``): their raw DXT segments (with
    ``seg_id``) one process after another, or the Darshan logs to read them from (each with the
    ``seg_id`` of its first segment, in the same order), their executions (with
    ``execution_id``, on each process's local clock), clock markers and the files their
    executions opened."""

    processes: tuple[Process, ...]
    segments: pl.DataFrame | None
    executions: pl.DataFrame
    markers: pl.DataFrame
    opens: pl.DataFrame
    logs: Logs = ()

    def raw_segments(self) -> pl.DataFrame:
        # logs are inflated here a second time (the first read only counted their segments,
        # in a run too big to keep them): the price of never holding every process's
        # segments at once, and of reading them where the partition runs (a cluster worker)
        if self.segments is not None:
            return self.segments
        return darshan_logs.read_numbered(self.logs)


def _numbered(segments: pl.DataFrame, first: int = 0) -> pl.DataFrame:
    return segments.with_row_index("seg_id", offset=first).with_columns(
        pl.col("seg_id").cast(pl.Int64))


def split(segments: pl.DataFrame | pl.LazyFrame, logs: pl.DataFrame, executions: pl.DataFrame,
          markers: pl.DataFrame, opens: pl.DataFrame, rows: int = PARTITION_ROWS
          ) -> list[Partition]:
    """The processes that have segments, in (host, pid) order, cut into partitions of at most
    ``rows`` segments and executions (``runs_up_to``), each with the executions, clock markers
    and file opens of its processes. Segments still in their Darshan logs (a LazyFrame) are
    read inside each partition, from its processes' logs."""
    per_log = _logs_by_process(logs) if isinstance(segments, pl.LazyFrame) else None
    held: dict[Process, pl.DataFrame] | None = None  # segments read up front, per process
    if per_log is not None:
        sizes = {process: n for process, (_own, n) in per_log.items()}
    else:
        if isinstance(segments, pl.LazyFrame):
            segments = segments.collect()
        held = by_process(_numbered(segments))
        sizes = {process: seg.height for process, seg in held.items()}
    order = sorted(sizes, key=process_order)
    ran = {(host, pid): n for host, pid, n
           in executions.select("host", "pid").group_by("host", "pid").len().rows()}
    groups = runs_up_to(order, [sizes[p] + ran.get(p, 0) for p in order], rows)
    ex, mk, op = (_per_group(df, groups) for df in (executions, markers, opens))
    return [Partition(
        tuple(group), None if held is None else pl.concat([held[p] for p in group]),
        ex.get(g, executions.clear()), mk.get(g, markers.clear()), op.get(g, opens.clear()),
        logs=() if per_log is None else tuple(log for p in group for log in per_log[p][0]))
        for g, group in enumerate(groups)]


def _per_group(df: pl.DataFrame, groups: list[list[Process]]) -> dict[int, pl.DataFrame]:
    """``df``'s rows of each group of processes, one process after another in the group's
    order (each process's rows in their order); rows of other processes are left out. Slices
    of ``df`` where its processes' rows are contiguous (``by_process``): a join and sort
    copied a big run's executions three times over."""
    per = by_process(df)
    out = {}
    for g, group in enumerate(groups):
        if rows := [per[p] for p in group if p in per]:
            out[g] = pl.concat(rows) if len(rows) > 1 else rows[0]
    return out


def _logs_by_process(logs: pl.DataFrame) -> dict[Process, tuple[Logs, int]] | None:
    """(host, pid) → its logs with segments, each with the ``seg_id`` of its first segment
    (segments are numbered in log order, as ``darshan_logs.load`` reads them), and its segment
    count; None when a log with segments has no single host (its segments must be split by
    their own host column)."""
    first = pl.col("segment_count").cum_sum() - pl.col("segment_count")
    rows = (logs.with_columns(first=first).filter(pl.col("segment_count") > 0)
            .select(pl.col("log").cast(pl.String), "host", "pid", "first", "segment_count"))
    if rows.get_column("host").null_count():
        return None
    out: dict[Process, tuple[Logs, int]] = {}
    for log, host, pid, at, n in rows.iter_rows():
        own, count = out.get((host, pid), ((), 0))
        out[(host, pid)] = ((*own, (log, at)), count + n)
    return out


def _segments_table(att: IOAttribution, spill_key: pl.Series) -> pl.DataFrame:
    """Every segment with the execution holding its largest share (already in output order);
    a segment given to no execution says ``spill`` (a spill file's) or ``none`` (its reason is
    in ``unattributed``) instead of the method its process allowed."""
    given = att.segments.get_column("attributed_weight") > 0
    label = (pl.when(given).then(pl.col("attribution"))
             .when(spill_key.is_not_null()).then(pl.lit("spill", METHOD))
             .otherwise(pl.lit("none", METHOD)))
    return conform(att.segments.with_columns(attribution=label), SEGMENTS, path="segments")


def _segment_totals(segments: pl.DataFrame) -> pl.DataFrame:
    """Per (host, pid, attribution): segments, bytes and I/O time (ns, exact) of the output
    ``segments`` rows — what the summary needs of them, without the table itself."""
    # (the columns it reads first: a group-by copies every column of its frame)
    return segments.select("host", "pid", "attribution", "length", "start_ns", "stop_ns"
                           ).group_by("host", "pid", "attribution").agg(
        segments=pl.len(), bytes=pl.col("length").sum(),
        io_time_ns=(pl.col("stop_ns") - pl.col("start_ns")).sum()
    ).with_columns(pl.col("attribution").cast(pl.String))


def _process_method(segments: pl.DataFrame) -> pl.DataFrame:
    """(host, pid) → the best attribution method its segments allowed (counted per method
    first: the rules below then look at a few rows per process)."""
    one = segments.select(pl.col("host", "pid").n_unique()).row(0) == (1, 1)
    methods = (segments.select(pl.col("host", "pid").first(), pl.col("attribution").unique())
               if one else segments.group_by("host", "pid", "attribution").len())
    # each label's process method by its rank; the best of the process's labels, else none
    ranks = {label: RANK[process] for label, process in PROCESS.items()}
    best = pl.col("attribution").cast(pl.String).replace_strict(ranks, default=None,
                                                                return_dtype=pl.Int64).min()
    return methods.group_by("host", "pid").agg(attribution=best).with_columns(
        pl.col("attribution").replace_strict({r: LABELS[r] for r in ranks.values()},
                                             default="none", return_dtype=pl.String))


def attribute_partition(part: Partition, *, worker_clocks: pl.DataFrame,
                        processes: pl.DataFrame, marker_paths: list[str],
                        shuffle_owners: pl.DataFrame | None = None) -> dict[str, pl.DataFrame]:
    """Align each process's Darshan clock (markers, else containment) and attribute the
    partition's segments; the partial output tables of its processes. ``shuffle_owners``
    (shuffle_id → owner execution, ``local_dir.barrier_owners`` of the whole run) takes the
    P2P shard writes (``attribution.p2p``)."""
    raw = part.raw_segments()
    darshan = align.darshan_offsets(raw, part.markers)
    without = set(part.processes) - set(darshan.select("host", "pid").iter_rows())
    if without:  # processes without markers found in DXT
        alone = len(without) == len(part.processes)
        darshan = pl.concat([darshan, align.containment_offsets(
            raw if alone else _of(raw, without),
            part.executions if alone else _of(part.executions, without), darshan)])
    segments = align.align_segments(raw.select(SEGMENT_COLUMNS), pl.concat(
        [worker_clocks, darshan])).drop("local_start_ns", "local_stop_ns")  # not gathered
    del raw
    ex = align.align_executions(part.executions, worker_clocks)
    # executions without recorded thread ids (imported runs): threads inferred from the DXT
    # pthread ids (threads.py); a no-op when threads are known
    ex, inferred = threads.infer_processes(segments, ex, processes)
    att = exact.io_to_executions(segments, ex)
    given = passes.Partition(ex, part.opens, processes, marker_paths, shuffle_owners)
    for step in passes.segment_passes():  # (the methods table's order of steps)
        att = step(att, given)
    owners = p2p.owners_of(given)
    shuffles = None if owners is None else p2p.shuffle_ids(att.segments, processes, owners)
    spill_key = spill.spill_keys(att.segments, processes)
    out = _segments_table(att, spill_key)
    totals = _segment_totals(out)
    files = sorted_for_output(exact.task_files(att), TASK_FILES)
    return {
        "darshan_clocks": darshan,
        "task_files": files,
        "io_totals": exact.task_io_totals(files),
        "unattributed": exact.unattributed_io(att, ex, processes, marker_paths),
        "segments": out,
        "segment_totals": totals,
        "methods": _process_method(att.segments),
        "spill": spill.spill_io(att.segments, spill_key),
        "inferred_threads": inferred,
        "shuffle_io": p2p.shuffle_io(att.segments, shuffles),
    }


def _of(df: pl.DataFrame, processes: set[Process]) -> pl.DataFrame:
    """``df``'s rows of ``processes``, in their order."""
    keys = pl.DataFrame(list(processes), schema={"host": df.schema["host"],
                                                 "pid": df.schema["pid"]}, orient="row")
    return df.join(keys, on=["host", "pid"], how="semi", nulls_equal=True, maintain_order="left")


def _segments_written(fn: Callable[[Partition], dict[str, Any]], writer: PartWriter,
                      part: Partition) -> dict[str, Any]:
    """``fn``'s tables of ``part``, its segments written by ``writer`` (``Written``)."""
    result = fn(part)
    result["segments"] = writer(result.pop("segments"))
    return result


def _without_thread_ids(segments: pl.DataFrame | pl.LazyFrame, logs: pl.DataFrame) -> bool:
    """Whether some segments have no thread id: read from a DXT v1 log (Darshan before 3.5
    recorded none), or in a table with null ``thread_id``s."""
    if isinstance(segments, pl.LazyFrame):
        return bool(logs.filter(pl.col("segment_count") > 0)
                    .select((pl.col("dxt_layout") == "v1-32").any()).item())
    return segments.height > 0 and segments.get_column("thread_id").null_count() > 0


def attribute_all(segments: pl.DataFrame | pl.LazyFrame, logs: pl.DataFrame,
                  executions: pl.DataFrame, markers: pl.DataFrame, opens: pl.DataFrame,
                  worker_clocks: pl.DataFrame, processes: pl.DataFrame, sink: TableSink,
                  mapper: Mapper = local_map, shuffle_owners: pl.DataFrame | None = None
                  ) -> dict[str, Any]:
    """Attribute every partition through ``mapper``: each partition's ``segments`` goes to
    ``sink`` in (host, pid) order (so the whole stays sorted), written where the partition
    runs when the sink gives a ``part_writer``, else handed to it as it arrives; the other partial
    tables are concatenated and returned (those ``SPOOLED`` as LazyFrames). ``logs``
    (``darshan_logs``) says where segments still in their logs (a LazyFrame) are read from."""
    parts = split(segments, logs, executions, markers, opens, rows=PARTITION_ROWS)
    if not parts:
        parts = [Partition((), _numbered(SEGMENTS_IN.empty()), executions, markers, opens)]
    marker_paths = markers.get_column("path").unique().to_list()
    fn = partial(attribute_partition, worker_clocks=worker_clocks, processes=processes,
                 marker_paths=marker_paths, shuffle_owners=shuffle_owners)
    # (where the sink takes them, each partition's segments are written where it runs: on
    # a cluster, the run's segments never pass through this process)
    writer = sink.part_writer("segments")
    if writer is not None:
        fn = partial(_segments_written, fn, writer)
    pieces: dict[str, list[pl.DataFrame]] = {name: [] for name in PARTIAL_TABLES
                                             if name not in SPOOLED}
    # (a row per execution and file: a big run's gigabyte, held from here to its stage)
    spools = {name: Spool() for name in SPOOLED}

    # segments without thread ids are split over the windows they overlap: several shares
    # per segment, a few times the memory of a partition attributed by thread, so one such
    # partition is attributed at a time (while the one before is written)
    at_once = 1 if _without_thread_ids(segments, logs) else 2

    def segments_of_each() -> Iterator[Any]:
        for result in mapper(fn, parts, at_once=at_once):
            for name, dfs in pieces.items():
                dfs.append(result[name])
            for name, spool in spools.items():
                spool.add(result[name])
            yield result["segments"]

    if writer is None:
        sink.write_parts("segments", segments_of_each())
    else:
        sink.write_written("segments", segments_of_each())
    return {**{name: pl.concat(dfs, how="diagonal_relaxed") for name, dfs in pieces.items()},
            **{name: spool.lazy() for name, spool in spools.items()}}
