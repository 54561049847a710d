"""``correlate RUN --memory-limit SIZE``: how much memory loading and correlating a run needs,
told from its row counts, against how much this process may use. For a run folder of ours the
rows are counted before the load, without decoding them (``correlate.sources.row_counts``),
so that a run too big for the machine is refused before the load's own peak, not killed
during it; an imported format's rows are counted once it is loaded.

The need is the larger of two peaks. The load's: a run folder of format 3 is read a table at a
time (a big one a chunk of batches at a time), but what it keeps grows with its streams' and
snapshots' bytes (each process's distinct strings, the tables held whole, what is taken from
the transitions), the lower of two lines in those bytes (``LOAD_LINES``; formats 1 and 2's
parts are scanned, not held). The correlation's, the largest of its stages' (the
timeline's, the attribution's, the tasks table's and the findings'), linear in what they hold
at once: a fixed part (the interpreter, polars, the small tables); per execution, the tables
kept per execution (the executions, each key's waits, the tasks table: ``EXECUTION_COST``);
the transitions of one part by key (a big run's are read a part at a time,
``correlate.frames.spill``); the profile rows where they are read whole (a big run folder's are
read a process at a time); and the DXT segments of the attribution partitions alive at once
(two being computed and one waiting, ``correlate.frames.mappers.local_map``); and, for a run
small enough that ``correlate RUN`` writes task_lifecycles.jsonl, what the chunk of tasks it
builds at once adds. The constants are fitted to the peak RSS of the load and of the later
stages of the synthetic runs (docs/performance.md, "Memory limit"), and both terms told
``MARGIN`` above the fit.
With ``--cluster`` the partitions run on the cluster's workers, which write their attributed
segments into the output folder themselves: this process holds none of them (but a run of one
partition, which runs here: ``PARTITIONS_HERE_WITH_CLUSTER``); the load and the stages after
the attribution stay here.

The limit (``SIZE`` like ``4GB``, ``500MB``; ``none``: no check) defaults to the memory this
process may use: its cgroup's limit or the memory the system has available, whichever is
smaller.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from correlate.errors import CorrelateError
from correlate.frames import spill
from correlate.frames.spill import parts_for
from correlate.reports.lifecycles import MAX_TASKS as LIFECYCLES_MAX_TASKS
from correlate.sources.frames import RunFrames
from correlate.sources.row_counts import RowCounts
from correlate.sources.run_folder import CHUNK_ROWS
from correlate.timeline.lifecycles import KEYS_PER_CHUNK

#: in-memory bytes of a row, as read (polars ``estimated_size`` of the decoded tables)
PROFILE_ROW_BYTES = 134
SEGMENT_BYTES = 114
#: partitions' segments alive at once in this process (``local_map``: two computed, one
#: waiting)
PARTITIONS_AT_ONCE = 3
#: with ``--cluster``: the partitions' segments this process holds (a run of one partition runs
#: it here; the others are written by the workers)
PARTITIONS_HERE_WITH_CLUSTER = 1
#: fitted to the largest peak RSS of the stages after the load in the 200k, 1M, 2M and 10M
#: synthetic runs (see the module's docstring): bytes for the process, per execution, per
#: transition of the part read at once
FIXED_BYTES = 840_000_000
EXECUTION_COST = 620
TRANSITION_COST = 135
#: what writing task_lifecycles.jsonl adds per task of the chunk it builds at once
#: (``correlate RUN`` writes it up to ``LIFECYCLES_MAX_TASKS`` tasks), with the rows held by then
LIFECYCLE_BYTES = 13_000
#: the load of a run folder of format 3, per byte of its streams and snapshots: the lower of
#: two lines, each fitted to the load's peak RSS in the 200k, 1M, 2M and 10M runs (the first
#: through the smaller runs, the second through the 2M and 10M runs): it grows less than the
#: bytes as a run grows, a big scheduler's strings being written again past the collectors'
#: bound and kept once each
LOAD_LINES = ((800_000_000, 0.86), (1_730_000_000, 0.463))
#: both terms are told this much above the fit: one run's peak differs from the next one's
#: (when the allocator gives freed memory back; docs/performance.md, "Memory limit")
MARGIN = 1.05

UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


class MemoryLimitError(CorrelateError):
    """A run that needs more memory than the process may use."""


def add_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--memory-limit SIZE`` of a command that loads a run (``what``: what is checked)."""
    p.add_argument("--memory-limit", metavar="SIZE", default=None,
                   help="memory this process may use, e.g. 4GB (default: its cgroup's limit or "
                        "the memory available, the smaller; `none`: no check): a run that needs "
                        f"more, {what}, is refused with the figure it needs")


def limit_of(args: argparse.Namespace) -> int | None:
    """The limit ``--memory-limit`` gives (its default: ``available()``)."""
    return available() if args.memory_limit is None else parse_size(args.memory_limit)


def parse_size(text: str) -> int | None:
    """Bytes of ``4GB``, ``500 MB``, ``2GiB``, ``123456``; ``None`` for ``none``."""
    if text.strip().lower() in ("none", "off", "unlimited"):
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if m is None or m.group(2).upper() not in UNITS:
        raise CorrelateError(None, f"--memory-limit {text}: not a size (say e.g. 4GB, 500MB, "
                                   "or none)")
    return int(float(m.group(1)) * UNITS[m.group(2).upper()])


def available() -> int | None:
    """The memory this process may use: its cgroup's limit (v2 or v1) or the system's
    available memory, the smaller; None where neither can be read (not Linux)."""
    found = [b for b in (_cgroup_limit(), _meminfo("MemAvailable")) if b is not None]
    return min(found) if found else None


def _cgroup_limit() -> int | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        for file in (("/sys/fs/cgroup" + path.rstrip("/") + "/memory.max")
                     if controllers == "" else None,
                     ("/sys/fs/cgroup/memory" + path.rstrip("/") + "/memory.limit_in_bytes")
                     if "memory" in controllers.split(",") else None):
            if file is None:
                continue
            try:
                value = Path(file).read_text().strip()
            except OSError:
                continue
            if value.isdigit() and int(value) < 2**62:  # (v1 says "no limit" as a huge one)
                return int(value)
    return None


def _meminfo(field: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@dataclass(frozen=True)
class Need:
    """Bytes a correlation needs in this process, alone and with ``--cluster``, and the rows
    it was told from."""

    alone: int
    with_cluster: int
    rows: dict[str, int]
    #: told before the Darshan logs were read: their segments not counted, a lower bound
    without_darshan: bool = False


def need_before_load(counts: RowCounts) -> Need:
    """What loading and correlating a run folder of these counts (``row_counts.count``, read
    before the load) needs."""
    profile = counts.rows["profile rows"]
    told = _need(counts.rows["executions"], counts.rows["transitions"], profile,
                 profile if profile <= CHUNK_ROWS else 0,  # (else read a process at a time)
                 pl.Series(list(counts.segments.values()), dtype=pl.Int64), _load_peak(counts))
    if counts.darshan_read:
        return told
    rows = {k: v for k, v in told.rows.items() if k != "DXT segments"}
    return Need(told.alone, told.with_cluster, rows, without_darshan=True)


def need_to_load(counts: RowCounts) -> Need:
    """What loading a run folder of these counts needs, the load's own peak alone (``correlate
    story`` and ``lifecycles`` load it and attribute no I/O)."""
    load = int(_load_peak(counts))
    return Need(alone=load, with_cluster=load, rows={
        "bytes of streams": counts.stream_bytes, **counts.rows})


def _load_peak(counts: RowCounts) -> float:
    """The load's own peak, from the bytes of format 3's streams and snapshots."""
    return MARGIN * min(fixed + factor * counts.stream_bytes for fixed, factor in LOAD_LINES)


def check_load(run_dir: Path, limit: int | None) -> None:
    """Before ``correlate story`` or ``lifecycles`` loads ``run_dir``: refuse a run folder of
    ours whose load alone needs more than ``limit`` (imported formats are not counted)."""
    from correlate.sources import row_counts, run_folder

    if limit is not None and run_folder.looks_like(run_dir):
        check(run_dir, need_to_load(row_counts.count_tables(run_dir)), limit, None,
              command_has_cluster=False)


def need(frames: RunFrames) -> Need:
    """What correlating ``frames`` (as loaded, large tables lazy) needs: for an imported
    format, whose rows are counted once it is loaded."""
    logs = frames.darshan_logs
    per_process = (logs.group_by("host", "pid").agg(pl.col("segment_count").sum())
                   .get_column("segment_count") if logs.height else pl.Series([], dtype=pl.Int64))
    profile = _rows(frames.func_stats)
    return _need(frames.executions.height, _rows(frames.transitions), profile,
                 0 if frames.func_stats_by_process else profile, per_process, 0)


def _need(executions: int, transitions: int, profile: int, profile_whole: int,
          per_process: pl.Series, load: float) -> Need:
    """The need of these rows (DXT segments per process; ``profile_whole``: the profile rows
    read at once); ``load``: the load's own peak, the larger of it and the correlation's
    being what the run needs."""
    per_process = per_process.sort(descending=True)
    segments = int(per_process.sum() or 0)
    part = -(-transitions // parts_for(transitions, spill.KEYED_ROWS_PER_PART))
    held = (FIXED_BYTES + executions * EXECUTION_COST + part * TRANSITION_COST
            + profile_whole * PROFILE_ROW_BYTES)
    lifecycles = (LIFECYCLE_BYTES * min(executions, KEYS_PER_CHUNK)
                  if executions <= LIFECYCLES_MAX_TASKS else 0)

    def with_partitions(n: int) -> int:
        partitions = int(per_process.head(n).sum() or 0) * SEGMENT_BYTES
        return int(max(load, MARGIN * (held + partitions + lifecycles)))

    return Need(alone=with_partitions(PARTITIONS_AT_ONCE),
                with_cluster=with_partitions(PARTITIONS_HERE_WITH_CLUSTER),
                rows={"executions": executions, "transitions": transitions,
                      "profile rows": profile, "DXT segments": segments})


def _rows(table: pl.DataFrame | pl.LazyFrame) -> int:
    if isinstance(table, pl.DataFrame):
        return table.height
    return int(table.select(pl.len()).collect().item())


def check(run: Path, needed: Need, limit: int | None, cluster: str | None,
          command_has_cluster: bool = True) -> None:
    """Raise ``MemoryLimitError`` (one line: the figure needed, and how to run it) when the
    run needs more than ``limit`` in this process."""
    mine = needed.with_cluster if cluster else needed.alone
    if limit is None or mine <= limit:
        return
    rows = ", ".join(f"{n:,} {what}" for what, n in needed.rows.items())
    if needed.without_darshan:
        rows += "; at least: its Darshan logs not read yet"
    how = "run it where more memory is free, or pass --memory-limit none to try anyway"
    if not cluster and command_has_cluster:
        how += (f" (with --cluster this process needs about {_gb(needed.with_cluster)}: the "
                "I/O attribution runs on the cluster's workers, the load and the other stages "
                "here)")
    raise MemoryLimitError(run, f"needs about {_gb(mine)} of memory ({rows}), more than the "
                                f"{_gb(limit)} it may use (--memory-limit): {how}")


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"
