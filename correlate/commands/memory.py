"""``correlate RUN --memory-limit SIZE``: how much memory the correlation of a run needs, told
from its row counts once the run folder is read (large tables still on disk or in their logs)
and before the correlation's stages, against how much this process may use. Reading a run
folder of format 3 decodes its streams and has a peak of its own (the largest at 1M
executions), counted in the need but passed before it is checked.

The need is linear in the rows a stage holds at once: a fixed part (the interpreter, polars,
the small tables) and, per row, the in-memory bytes of the run's executions, transitions,
profile rows, and the DXT segments of the attribution partitions alive at once (two being
computed and one waiting, ``correlate.frames.mappers.local_map``), times ``OVERHEAD``: the copies the
stages make of what they hold (a join, a sort, a gather); and, for a run small enough that
``correlate RUN`` writes task_lifecycles.jsonl, what that adds per task. ``FIXED_BYTES`` and
``OVERHEAD`` are fitted to the peak RSS of the synthetic runs (docs/performance.md, "correlate at scale").
With ``--cluster`` the partitions run on the cluster's workers: the segments leave this
process's share (an estimate not yet checked against a measured ``--cluster`` run).

The limit (``SIZE`` like ``4GB``, ``500MB``; ``none``: no check) defaults to the memory this
process may use: its cgroup's limit or the memory the system has available, whichever is
smaller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from correlate.commands.lifecycles import LIFECYCLES_MAX_TASKS
from correlate.errors import CorrelateError
from correlate.sources.frames import RunFrames

#: in-memory bytes of a row, as read (polars ``estimated_size`` of the decoded tables)
TRANSITION_BYTES = 133
PROFILE_ROW_BYTES = 134
SEGMENT_BYTES = 114
#: partitions' segments alive at once in this process (``local_map``: two computed, one
#: waiting)
PARTITIONS_AT_ONCE = 3
#: fitted to the peak RSS of the 200k and 1M synthetic runs (see the module's docstring)
FIXED_BYTES = 450_000_000
OVERHEAD = 1.3
#: what writing task_lifecycles.jsonl adds per task (``correlate RUN`` writes it up to
#: ``LIFECYCLES_MAX_TASKS`` tasks), with the rows held by then
LIFECYCLE_BYTES = 13_000

UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


class MemoryLimitError(CorrelateError):
    """A run that needs more memory than the process may use."""


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


def need(frames: RunFrames) -> Need:
    """What correlating ``frames`` (as loaded, large tables lazy) needs."""
    transitions = _rows(frames.transitions)
    profile = _rows(frames.func_stats)
    logs = frames.darshan_logs
    per_process = (logs.group_by("host", "pid").agg(pl.col("segment_count").sum())
                   .get_column("segment_count").sort(descending=True)
                   if logs.height else pl.Series([], dtype=pl.Int64))
    segments = int(per_process.sum() or 0)
    in_flight = int(per_process.head(PARTITIONS_AT_ONCE).sum() or 0)
    held = (frames.executions.estimated_size() + transitions * TRANSITION_BYTES
            + profile * PROFILE_ROW_BYTES)
    partitions = in_flight * SEGMENT_BYTES
    lifecycles = (LIFECYCLE_BYTES * frames.executions.height
                  if frames.executions.height <= LIFECYCLES_MAX_TASKS else 0)
    return Need(alone=int(FIXED_BYTES + OVERHEAD * (held + partitions) + lifecycles),
                with_cluster=int(FIXED_BYTES + OVERHEAD * held + lifecycles),
                rows={"executions": frames.executions.height, "transitions": transitions,
                      "profile rows": profile, "DXT segments": segments})


def _rows(table: pl.DataFrame | pl.LazyFrame) -> int:
    if isinstance(table, pl.DataFrame):
        return table.height
    return int(table.select(pl.len()).collect().item())


def check(run: Path, needed: Need, limit: int | None, cluster: str | None) -> None:
    """Raise ``MemoryLimitError`` (one line: the figure needed, and how to run it) when the
    run needs more than ``limit`` in this process."""
    mine = needed.with_cluster if cluster else needed.alone
    if limit is None or mine <= limit:
        return
    rows = ", ".join(f"{n:,} {what}" for what, n in needed.rows.items())
    how = ("run it where more memory is free, or pass --memory-limit none to try anyway"
           if cluster else
           f"with --cluster this process still needs {_gb(needed.with_cluster)}: run it "
           "where more memory is free, or pass --memory-limit none to try anyway"
           if needed.with_cluster > limit else
           f"--cluster local:2 (or a scheduler's address) needs "
           f"{_gb(needed.with_cluster)} here, the rest on the cluster's workers")
    raise MemoryLimitError(run, f"needs about {_gb(mine)} of memory ({rows}), more than the "
                                f"{_gb(limit)} it may use (--memory-limit): {how}")


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"
