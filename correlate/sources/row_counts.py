"""The rows a run folder (ours) holds in the tables its correlation's memory depends on, counted
without decoding them, so that ``correlate RUN --memory-limit`` can refuse a run too big for
the machine before the load, whose own peak is the largest at 1M executions.

- Run format 3's streams (``procs/<proc>/<table>.arrows``, uncompressed Arrow IPC): each record
  batch's length is read from its message metadata as the loader's framing walks it
  (``run_streams.framing``), over a memory map (no copy, no body read); a torn or damaged tail
  ends the count where it ends the loader's read. Snapshots (Arrow IPC files) and formats 1
  and 2's parts: their footers (Parquet metadata, Arrow IPC file blocks).
- Darshan logs: a log's DXT segment counts are in its DXT record headers, which lie inside the
  compressed DXT regions between the segments, so they cannot be had without inflating the
  regions. They are read here as the load reads them (``run_folder.load`` is handed what was
  read, not reading them twice): each region inflated a chunk at a time (``dxt_stream``:
  memory that does not grow with the log), the record headers walked and the counters
  decoded, the segments left in the logs; only a run of at most ``KEEP_SEGMENTS`` segments
  has them decoded in the same pass and kept (about 100 MB at most). Through ``mapper``: on
  the cluster's workers with ``--cluster``. A log that does not read counts nothing and is
  reported by the load as before.

A file that cannot be read counts nothing here: the loader rejects it as before.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from correlate.frames.mappers import Mapper, local_map
from correlate.schema.run import SNAPSHOT_SUFFIX, STREAM_SUFFIX
from correlate.sources import darshan_logs, run_folder, run_parts, run_streams

#: the tables counted, by what the memory need calls them (format 3 writes coroutine slices in
#: the executions' streams: counted with them, an upper bound by the few a run has)
COUNTED = {"executions": ("task_executions",),
           "transitions": ("scheduler_transitions", "worker_transitions"),
           "profile rows": ("worker_func_stats",)}


@dataclass
class RowCounts:
    """Rows per counted table (``COUNTED``), DXT segments per process (host, pid), the bytes
    of format 3's streams and snapshots (which the load holds in memory while it decodes them), and the run's
    Darshan logs as the load reads them (None: it has none)."""

    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED, 0))
    segments: dict[tuple[str | None, int], int] = field(default_factory=dict)
    stream_bytes: int = 0
    darshan: darshan_logs.DarshanFrames | None = None
    #: whether the Darshan logs were read (``add_darshan``): else ``segments`` is not counted
    darshan_read: bool = False


def count(run_dir: Path, mapper: Mapper = local_map) -> RowCounts:
    """The counts of ``run_dir``, a run folder (``run_folder.looks_like``), its Darshan logs
    read for the load through ``mapper``."""
    out = count_tables(run_dir)
    add_darshan(out, run_dir, mapper)
    return out


def add_darshan(counts: RowCounts, run_dir: Path, mapper: Mapper = local_map) -> None:
    """``counts`` with the run's Darshan logs read for the load through ``mapper``, and their
    DXT segments per process."""
    counts.darshan = run_folder.read_darshan(run_dir, mapper)
    counts.darshan_read = True
    if counts.darshan is not None:
        logs = counts.darshan.darshan_logs.filter(pl.col("segment_count") > 0)
        for host, pid, n in (logs.group_by("host", "pid").agg(pl.col("segment_count").sum())
                             .iter_rows()):
            counts.segments[(host, pid)] = int(n)


def count_tables(run_dir: Path) -> RowCounts:
    """The rows of the process folders' tables (no Darshan logs read)."""
    out = RowCounts()
    tables = {t: what for what, names in COUNTED.items() for t in names}
    for proc_dir, names in _process_folders(run_dir / "procs"):
        for name in names:
            table, n = _file_rows(proc_dir, name, tables, out)
            if table is not None:
                out.rows[tables[table]] += n
    return out


def _process_folders(procs: Path) -> list[tuple[Path, list[str]]]:
    """Each process folder with a proc.json (those the loader reads), and its entries."""
    out = []
    try:
        entries = sorted(os.scandir(procs), key=lambda e: e.name)
    except OSError:
        return []
    for e in entries:
        try:
            names = sorted(n.name for n in os.scandir(e.path)) if e.is_dir() else []
        except OSError:
            continue
        if "proc.json" in names:
            out.append((Path(e.path), names))
    return out


def _file_rows(proc_dir: Path, name: str, tables: dict[str, str], out: RowCounts
               ) -> tuple[str | None, int]:
    """(table, rows) of one entry of a process folder: a format 3 stream or snapshot, or
    formats 1 and 2's folder of parts; (None, 0) for anything not counted."""
    path = proc_dir / name
    if name.endswith(STREAM_SUFFIX):
        rows, size = stream_rows(path)
        out.stream_bytes += size
        table = name[:-len(STREAM_SUFFIX)]
        return (table, rows) if table in tables else (None, 0)
    if name.endswith(SNAPSHOT_SUFFIX):
        out.stream_bytes += _size(path)
        table = name[:-len(SNAPSHOT_SUFFIX)]
        return (table, run_parts.footer_rows(path)) if table in tables else (None, 0)
    if name in tables:
        return name, sum(run_parts.footer_rows(p) for p in run_parts.part_files(path))
    return None, 0


def stream_rows(path: Path) -> tuple[int, int]:
    """(rows of the complete record batches, bytes) of a format 3 stream, from its messages'
    metadata over a memory map; (0, 0) where it cannot be read."""
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if not size:
                return 0, 0
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                framing = run_streams.framing(data)
    except (OSError, ValueError):
        return 0, 0
    return sum(rows for _s, _e, rows in framing.batches), size


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


__all__ = ["COUNTED", "RowCounts", "count", "count_tables", "stream_rows"]
