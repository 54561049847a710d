"""The correlation pipeline: canonical ``RunFrames`` in, output tables + summary out.

``correlate_frames`` returns every table in memory (a pure function; ``write_outputs`` persists
its result); ``correlate_to`` runs the same pipeline into an output folder, writing each table as
soon as it is final so that the large ones (segments, events, task_functions) are never held
together. Order: conform → execution ids → worker clocks → events and waits (the transitions
read, used and let go) → I/O attribution per process (segments streamed out) → functions →
tasks → summary (from the small tables and the per-process segment totals).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from correlate import attribution, findings, timeline
from correlate.attribution import spill
from correlate.attribution.shares import METHOD
from correlate.console import Progress
from correlate.frames import allocator
from correlate.frames.beside import beside
from correlate.frames.mappers import Mapper, local_map
from correlate.frames.prefixes import key_split_groups, key_splits
from correlate.functions import functions_by_process
from correlate.outcome import Seen
from correlate.schema import OUTPUT_FORMAT_VERSION, outputs
from correlate.sinks import (
    MemorySink,
    ParquetSink,
    TableSink,
    put,
    put_in_parts,
    put_kept,
    read_back,
)
from correlate.sources.frames import RunFrames
from correlate.summary import (
    build_summary,
    dxt_captured,
    io_captured,
    profile_coverage,
    profile_warnings,
)
from correlate.timeline import arrivals, coroutines, lost, task_threads, waits
from correlate.timeline.spans import DEFAULT_SPAN

OUTPUT_TABLES = outputs.NAMES
#: written only when the run has such data (a run without keeps today's outputs exactly)
OPTIONAL_TABLES = outputs.OPTIONAL_NAMES


@dataclass(frozen=True)
class Correlated:
    tables: dict[str, pl.DataFrame]
    summary: dict[str, Any]


def number_executions(executions: pl.DataFrame) -> pl.DataFrame:
    """Deterministic ``execution_id`` (0..n−1) and prefix/group filled from the key as Dask
    names them (a task forgotten before the scheduler's flush has no names logged), as
    Categorical."""
    ex = executions.sort("host", "pid", "local_start_ns", "key", "thread_id", nulls_last=True,
                         maintain_order=True)
    ex = ex.with_row_index("execution_id").with_columns(pl.col("execution_id").cast(pl.Int64))
    if ex.get_column("prefix").has_nulls():
        ex = ex.with_columns(prefix=pl.coalesce("prefix", key_splits(ex.get_column("key"))))
    if ex.get_column("group").has_nulls():
        ex = ex.with_columns(group=pl.coalesce("group", key_split_groups(
            ex.get_column("key"), ex.get_column("prefix"))))
    # (as codes until the tasks table is written: a big run's executions would hold a text
    # per row of each, and a tuple key's group is as long as the key)
    return ex.with_columns(pl.col("prefix", "group").cast(pl.Categorical))


#: a table whose columns the tasks table puts beside the executions: (table, the columns it is
#: joined on, whether a null joins a null, the value of an execution it has no row for)
Side = tuple[pl.DataFrame, list[str], bool, int | None]


def _task_sides(att: attribution.Attribution, key_waits: pl.DataFrame, frames: RunFrames
                ) -> list[Side]:
    """The tables whose columns the tasks table puts beside the executions."""
    by_id = ["execution_id"]
    inputs = waits.transfer_inputs(frames.startstops, frames.transfers, frames.transfer_keys,
                                   frames.dependencies)
    return [(att.io_totals, by_id, False, None),
            (att.spill_columns, by_id, False, att.spill_absent),
            (att.read_back, ["key", "worker"], True, None), (att.methods, by_id, False, None),
            (key_waits, ["key"], False, None), (inputs, ["key", "worker"], True, None),
            (_spans_of_keys(frames), ["key"], False, None)]


def _tasks_table(executions: pl.DataFrame, sides: list[Side], frames: RunFrames
                 ) -> pl.DataFrame:
    """The tasks table: the executions with the columns of ``sides`` (``_task_sides``; a list
    handed over, each table let go once its columns are made: a big run's are gigabytes)."""
    ex = coroutines.with_awaiting(executions, frames.execution_slices)
    # each side table's columns in the executions' row order, put beside them at once (a join
    # of the executions with each would copy all their columns once per side table)
    columns: list[pl.Series] = []
    while sides:
        side, on, nulls, absent = sides.pop(0)
        columns += [c if absent is None else c.fill_null(absent)
                    for c in beside(ex, side, on, nulls)]
        del side
    t = ex.hstack(columns)
    io_cols = ["read_bytes", "write_bytes", "read_ops", "write_ops", "io_time_s"]
    measured = [pl.when(pl.col("attribution").is_not_null()).then(pl.col(c).fill_null(0.0))
                .otherwise(pl.col(c)).alias(c) for c in io_cols]
    return _in_default_span(t, frames).with_columns(
        *measured,
        duration_s=(pl.col("local_stop_ns") - pl.col("local_start_ns")) * 1e-9,
        # (as the table's Enum: a text per execution, conformed back, is a big run's copy)
        attribution=pl.coalesce(pl.col("io_method").cast(METHOD, strict=False),
                                pl.col("attribution").cast(METHOD, strict=False),
                                pl.lit("none", METHOD)),
        # (as codes: the tasks table's texts are made a part at a time as it is written)
        window_source=pl.col("window_source").cast(pl.Categorical),
    )


def _spans_of_keys(frames: RunFrames) -> pl.DataFrame:
    """key → span_id, span (name path), annotations. A run that recorded spans puts a task
    submitted outside any span in Dask's default span (Dask removes the span annotation of
    those)."""
    return frames.task_labels.join(frames.span_tree.select("span_id", "span"), on="span_id",
                                   how="left").select("key", "span_id", "span", "annotations")


def _in_default_span(tasks: pl.DataFrame, frames: RunFrames) -> pl.DataFrame:
    if frames.span_tree.is_empty():
        return tasks
    return tasks.with_columns(pl.col("span").fill_null(DEFAULT_SPAN))


def _correlate(frames: RunFrames | list[RunFrames], mapper: Mapper, sink: TableSink,
               group_by: tuple[str, ...] = (), progress: Progress | None = None
               ) -> Correlated:
    """The pipeline; every output table goes to ``sink`` once final (the big ones as early as
    possible, so that a sink that writes them lets them go). Returns the summary and the tables
    it was built from. ``progress`` is told each stage as it begins."""
    progress = progress or Progress()
    progress.begin("executions")
    frames, stored = _startstops_read(_taken(frames).conformed())
    frames, numbered, elsewhere = _numbered(frames)
    line = timeline.build(frames, numbered, sink, progress)
    del numbered
    ex = line.executions
    progress.begin("attribution")
    att = attribution.attribute(frames, ex, coroutines.io_windows(ex, frames.execution_slices),
                                line.worker_clocks, sink,
                                progress.mapped(mapper, "attribution partitions",
                                                lambda r: r["segments"].height))
    allocator.release_freed_c_memory()  # the partitions' Darshan logs, inflated
    ex = att.executions
    line = replace(line, executions=line.executions.clear())  # (att's hold them, aligned)
    progress.begin("task_functions")
    profiled = _functions(frames, ex, sink)
    progress.begin("task_files")
    # (in parts: conformed and made one chunk whole, a big run's gigabyte was held thrice)
    put_in_parts(sink, "task_files", att.task_files.collect().join(  # sorted by partition
        ex.select("execution_id", "key"), on="execution_id", how="left", maintain_order="left"))
    att = replace(att, task_files=att.task_files.clear())  # (read back for the summary)
    put(sink, "slices", coroutines.timeline_slices(ex, frames.execution_slices))
    progress.begin("tasks", rows=ex.height)
    executed, on_other_threads = ex.height, task_threads.summary(elsewhere, ex)  # (summary's)
    # each table the tasks table is made of let go once its columns are made; executions of
    # workers that died: the rows they never wrote, and the results lost
    sides = _task_sides(att, line.key_waits, frames)
    att, line = _tasks_made(att), replace(line, key_waits=line.key_waits.clear())
    tasks = _tasks_kept(sink, ex, sides, frames, line.released)
    del ex, elsewhere
    # (task_files read back, key and paths as codes: held until now, it was a big run's
    # gigabyte beside the tasks table as that was made; no rule needs a text per row)
    kept = {"tasks": tasks, "task_files": read_back(sink, "task_files", ("key", "path")),
            "unattributed": put(sink, "unattributed", att.unattributed),
            "clocks": put(sink, "clocks", att.clocks)}
    if not line.arrived.is_empty():
        kept["arrivals"] = put(sink, "arrivals", line.arrived)
        kept["arrival_steps"] = put(sink, "arrival_steps", arrivals.steps_table(
            line.arrived, frames.dependencies, kept["tasks"]))
    progress.begin("summary")
    summary = _summary(frames, kept, att, group_by, line.seen, sink)
    summary["task_code_on_other_threads"] = on_other_threads
    summary["profile"] = profile_coverage(frames.facts, executed, profiled)
    summary["warnings"] += profile_warnings(summary["profile"])
    # (last: the rules read the tables above, and the segments back from the sink)
    progress.begin("findings")
    evidence, frames = _evidence(frames, sink, stored)
    found = _findings(kept, frames.dependencies, line.assigned, evidence, sink)
    summary.update(found.summary)
    if summary["lost"]["executions"]:  # what recomputing the lost results cost the span
        summary["lost"]["span_s"] = lost.span_lost(kept["tasks"], found.critical_path)
    progress.end()
    return Correlated(tables=kept, summary=summary)


def _taken(frames: RunFrames | list[RunFrames]) -> RunFrames:
    """The frames, taken out of a list that hands them over (the caller keeps no reference,
    so each table is let go once the engine is done with it)."""
    return frames.pop() if isinstance(frames, list) else frames


def _startstops_read(frames: RunFrames) -> tuple[RunFrames, pl.DataFrame | None]:
    """``frames`` with only the startstops a stage reads (``lost.startstops_read``), and the
    results stored to disk the findings read (``findings.stored``: taken of them all, since a
    run with no startstops at all has none measured, not none stored)."""
    return (replace(frames, startstops=lost.startstops_read(frames.startstops, frames.processes)),
            findings.stored(frames.startstops))


def _numbered(frames: RunFrames) -> tuple[RunFrames, pl.DataFrame, pl.DataFrame]:
    """``frames`` without the executions as loaded (each stage's tables are let go once the
    next is made: a big run's peak; the caller's frames may still hold them), the executions
    numbered, and the records of task code a task started on another thread (not
    executions)."""
    own, elsewhere = task_threads.split(frames.executions)
    return replace(frames, executions=frames.executions.clear()), number_executions(own), elsewhere


#: the tasks table's texts kept as codes once the table is written, for the summary and the
#: findings (the key joins the other tables' keys, Categorical too)
_TASK_TEXTS = ("key", "prefix", "status", "window_source", "transfer_sources")
#: the tasks table's columns no stage after it reads (nor the terminal's summary): written,
#: not kept (the reports and compare read the written table)
_NOT_KEPT = ("group", "span_id", "thread_inferred", "attribution", "wait_dependencies_s")


def _tasks_kept(sink: TableSink, ex: pl.DataFrame, sides: list[Side], frames: RunFrames,
                released: pl.Series) -> pl.DataFrame:
    """The tasks table written (``_tasks_table`` with the results lost, ``lost.with_lost``),
    and as the later stages read it: its texts as codes, without the columns none reads."""
    tasks = lost.with_lost(_tasks_table(ex, sides, frames), frames.startstops,
                           frames.processes, released)
    return put_kept(sink, "tasks", tasks, _TASK_TEXTS).drop(_NOT_KEPT)


def _tasks_made(att: attribution.Attribution) -> attribution.Attribution:
    """``att`` without the per-execution tables the tasks table was made of."""
    return replace(att, executions=att.executions.clear(), methods=att.methods.clear(),
                   io_totals=att.io_totals.clear(), spill_columns=att.spill_columns.clear(),
                   read_back=att.read_back.clear())


def _summary(frames: RunFrames, kept: dict[str, pl.DataFrame], att: attribution.Attribution,
             group_by: tuple[str, ...], seen: Seen, sink: TableSink) -> dict[str, Any]:
    """summary.json from the tables of ``kept`` and the attribution's totals, with the
    arrivals, Dask's disk-read beside what Darshan saw inside it (the segments back from the
    sink) and how the thread ids were inferred."""
    summary = build_summary(frames, kept, att.segment_totals, att.stdio_totals,
                            att.counter_totals, att.shuffle_io, group_by, att.spilled, seen)
    if "arrivals" in kept:  # (absent without: today's summary exactly)
        summary["arrivals"] = arrivals.summary(kept["arrivals"], kept["arrival_steps"],
                                               frames.senders)
    summary["spill"]["read_back"] = spill.read_back(frames.startstops, kept["tasks"],
                                                    sink.scan("segments"), dxt_captured(frames))
    if att.thread_inference:
        summary["thread_inference"] = att.thread_inference
    return summary


def _functions(frames: RunFrames, ex: pl.DataFrame, sink: TableSink) -> int:
    """Write ``task_functions`` (the profile rows of each execution, a process at a time);
    return how many executions have function rows."""
    profiled: list[int] = []  # executions with function rows, per process
    sink.write_parts("task_functions", _counted(
        functions_by_process(frames.func_stats_per_process(), ex), profiled))
    return sum(profiled)


def _evidence(frames: RunFrames, sink: TableSink, stored: pl.DataFrame | None
              ) -> tuple[findings.Evidence, RunFrames]:
    """What the rules read besides the tables (the segments back from the sink, the
    processes' CPU, the files' counters and ``stored``, the results stored to disk), and
    ``frames`` without the tables no rule reads."""
    evidence = findings.Evidence(io_captured=io_captured(frames), dxt=dxt_captured(frames),
                                 segments=sink.scan("segments"),
                                 process_cpu=frames.clock_samples,
                                 file_counters=frames.io_file_counters, stored=stored)
    return evidence, replace(frames, startstops=frames.startstops.clear(),
                             transfer_keys=frames.transfer_keys.clear())


def _findings(kept: dict[str, pl.DataFrame], dependencies: pl.DataFrame,
              assigned: pl.DataFrame, evidence: findings.Evidence, sink: TableSink
              ) -> findings.Analysis:
    """Write the critical path and the findings (the rules read the tables of ``kept``);
    return them, with their part of the summary."""
    found = findings.analyse(kept["tasks"], kept["task_files"], dependencies, assigned,
                             evidence)
    put(sink, "critical_path", found.critical_path)
    put(sink, "findings", found.findings)
    return found


def _counted(parts: Iterator[pl.DataFrame], counts: list[int]) -> Iterator[pl.DataFrame]:
    """``parts`` as they are, the executions each holds appended to ``counts``."""
    for part in parts:
        counts.append(part.get_column("execution_id").n_unique())
        yield part


def correlate_frames(frames: RunFrames, mapper: Mapper = local_map,
                     group_by: tuple[str, ...] = ()) -> Correlated:
    """Correlate one run in memory: every output table in ``tables``. ``mapper`` runs the
    per-process attribution partitions (in this process by default, or on a Dask cluster —
    the result is the same); ``group_by``: annotation keys the summary groups tasks by."""
    sink = MemorySink()
    result = _correlate(frames, mapper, sink, group_by)
    return Correlated(tables={name: sink.tables[name] for name in (*OUTPUT_TABLES,
                                                                   *OPTIONAL_TABLES)
                              if name in sink.tables},
                      summary=result.summary)


def correlate_to(frames: RunFrames | list[RunFrames], out_dir: Path,
                 mapper: Mapper = local_map, group_by: tuple[str, ...] = (),
                 inputs: dict[str, Any] | None = None, progress: Progress | None = None
                 ) -> Correlated:
    """Correlate one run into ``out_dir`` (every output table and summary.json), writing each
    table as soon as it is final so that the large ones are never all in memory at once.
    ``tables`` of the result holds only the small ones: tasks, task_files, unattributed and
    clocks. ``inputs``: the run folder it was made from (``provenance.record``), recorded as
    summary.json ``input``. ``frames`` in a one-element list are handed over: taken out of
    it, so that the engine lets go of each table once done with it."""
    sink = ParquetSink(out_dir)
    result = _correlate(frames, mapper, sink, group_by, progress)
    if inputs is not None:
        result = Correlated(result.tables, {**result.summary, "input": inputs})
    _write_summary(result.summary, out_dir)
    return result


def write_outputs(result: Correlated, out_dir: Path) -> list[Path]:
    """Write the tables of an in-memory result as parquet and summary.json; return the
    written paths."""
    sink = ParquetSink(out_dir)
    for name, df in result.tables.items():
        sink.write(name, df)
    return [*sink.paths, _write_summary(result.summary, out_dir)]


def _write_summary(summary: dict[str, Any], out_dir: Path) -> Path:
    path = out_dir / "summary.json"
    tmp = path.with_name(f".{path.name}.tmp")  # renamed into place: never read half-written
    tmp.write_text(json.dumps({"output_format_version": OUTPUT_FORMAT_VERSION, **summary},
                              indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)
    return path
