"""Crash-tolerant, append-only writer of one process's tables.

The hot path is ``sink.append(table, row)``: one ``list.extend`` of the row's tuple onto the
table's flat buffer of values. That is atomic under the GIL (any thread may append), and it
keeps no container per row: a tuple that lives until the next flush would be one more object
for every garbage collection of the job's process to track and count (``take``). A background
thread takes each buffer's rows as columns every ``interval`` seconds and writes them as
``<proc_dir>/<table>/part-NNNNNN.arrow`` (the format: ``correlate.schema.run``; temp name +
``os.replace``, so every part on disk is complete). A killed process loses at most one interval.
Buffers are bounded: rows beyond ``max_rows`` per table between flushes are counted as dropped,
never silently lost. ``close()`` flushes and writes ``closed.json`` (row counts, drops, hook
errors).

Parts are Arrow IPC files written by the standard library alone (``collectors.arrow_file``):
the pyarrow Parquet writer this replaced cost each Dask process its memory, its imports and its
allocator's first-write stalls (docs/performance.md, fourth pass).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from collectors.arrow_file import holds, ipc_file
from collectors.guard import ERRORS, never_raise
from correlate.schema.run import PART_SUFFIX


def drain(buf: deque) -> Iterator[Any]:
    """Pop items until empty: safe against appends from other threads (deque ops are atomic),
    so nothing appended during a flush is lost."""
    while True:
        try:
            yield buf.popleft()
        except IndexError:
            return


def take(buf: list, width: int) -> list[list] | None:
    """The rows at the front of a flat buffer of ``width`` values per row, as columns, removed
    from it (None when there are none). Writers add whole rows with one ``extend``, so rows
    other threads add meanwhile stay behind the ones taken, for the next call."""
    n = len(buf) // width * width
    if not n:
        return None
    chunk = buf[:n]
    del buf[:n]
    return [chunk[i::width] for i in range(width)]


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
    os.replace(tmp, path)


class ProcessSink:
    def __init__(self, proc_dir: Path, tables: dict[str, Any], *, interval: float = 5.0,
                 max_rows: int = 2_000_000) -> None:
        self.proc_dir = proc_dir
        self.tables = tables  # name -> correlate.schema.Table
        self.interval = interval
        self.max_rows = max_rows
        self.widths = {name: len(t.columns) for name, t in tables.items()}
        self.buffers: dict[str, list] = {name: [] for name in tables}
        self.written: dict[str, int] = dict.fromkeys(tables, 0)
        self.dropped: dict[str, int] = dict.fromkeys(tables, 0)
        self.snapshot_rows: dict[str, int] = dict.fromkeys(tables, 0)
        self.parts = 0
        self.before_flush: list[Callable[[], None]] = []
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._thread = threading.Thread(target=self._run, name="dask-correlate-flush",
                                        daemon=True)
        proc_dir.mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        self._thread.start()

    def append(self, table: str, row: tuple) -> None:
        """Callers are guarded hooks: a row of the wrong width raises rather than shift every
        later row of the table."""
        buf, width = self.buffers[table], self.widths[table]
        if len(row) != width:
            raise ValueError(f"{table}: a row of {len(row)} values, expected {width}")
        if len(buf) < self.max_rows * width:
            buf.extend(row)
        else:
            self.dropped[table] += 1

    def write_columns(self, table: str, columns: list[list]) -> None:
        """Write rows a plugin has prepared as columns (in a ``before_flush`` hook), bounded
        like appended rows."""
        n = len(columns[0])
        if n > self.max_rows:
            self.dropped[table] += n - self.max_rows
            columns = [c[:self.max_rows] for c in columns]
        with self._lock:
            self._write(table, columns)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()

    @never_raise
    def flush(self) -> None:
        with self._lock:
            for hook in self.before_flush:
                never_raise(hook)()
            for name in self.tables:
                columns = take(self.buffers[name], self.widths[name])
                if columns:
                    self._write(name, columns)

    def _write(self, name: str, columns: list[list], *, snapshot: bool = False) -> None:
        folder = self.proc_dir / name
        folder.mkdir(exist_ok=True)
        if snapshot:
            final = folder / f"snapshot{PART_SUFFIX}"
        else:
            self.parts += 1
            final = folder / f"part-{self.parts:06d}{PART_SUFFIX}"
        tmp = folder / f".{final.name}.tmp"
        tmp.write_bytes(arrow_part(self.tables[name].columns, columns))
        os.replace(tmp, final)
        self.written[name] += len(columns[0]) if not snapshot else 0

    @never_raise
    def write_snapshot(self, name: str, rows: list[tuple]) -> None:
        """Replace the table's snapshot (for cumulative data such as profiles); an empty one
        removes it."""
        with self._lock:
            if rows:
                self._write(name, columns_of(rows, self.widths[name]), snapshot=True)
            elif self.snapshot_rows[name]:
                (self.proc_dir / name / f"snapshot{PART_SUFFIX}").unlink(missing_ok=True)
            self.snapshot_rows[name] = len(rows)

    def close(self, extra: dict[str, Any] | None = None) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self.flush()
        write_json_atomic(self.proc_dir / "closed.json", {
            "closed_ns": time.time_ns(),
            "rows": {n: w + self.snapshot_rows[n] for n, w in self.written.items()},
            "dropped": self.dropped,
            "hook_errors": dict(ERRORS), **(extra or {})})


#: the Arrow column kind of each raw-table dtype (text for the others: String and Enum)
_KINDS = {"Int64": "int64", "UInt64": "uint64", "Float64": "double"}


def columns_of(rows: Sequence[tuple], width: int) -> list[list]:
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]


def arrow_part(columns: Sequence[Any], values: list[list]) -> bytes:
    """A part's bytes: an Arrow IPC file of one record batch of ``values`` (one list per
    column). A column whose values its type cannot hold (a float in an integer column) is
    written as text, so that its rows stay on disk and ``correlate`` names the part it cannot
    use."""
    names, kinds = [c.name for c in columns], [_KINDS.get(c.dtype, "utf8") for c in columns]
    try:
        return ipc_file(names, kinds, values)
    except (TypeError, OverflowError):
        pass
    values = list(values)
    for i, kind in enumerate(kinds):
        if kind != "utf8" and not holds(kind, values[i]):
            kinds[i] = "utf8"
            values[i] = [None if v is None else str(v) for v in values[i]]
    return ipc_file(names, kinds, values)


def process_dir(run_dir: Path, role: str, host: str, pid: int) -> Path:
    return run_dir / "procs" / f"{role}-{host}-{pid}"


#: overrides the host name the collectors record (tests simulating two hosts on one machine,
#: or containers whose host name differs from the node's); Darshan still records its own
HOST_VARIABLE = "DASK_CORRELATE_HOST"


def hostname() -> str:
    """Short host name, as Darshan records it (or ``$DASK_CORRELATE_HOST``)."""
    import socket

    return os.environ.get(HOST_VARIABLE) or socket.gethostname().split(".", 1)[0]


def proc_json(path: Path, **fields: Any) -> None:
    from correlate.schema import RUN_FORMAT_VERSION

    write_json_atomic(path / "proc.json", {
        "format_version": RUN_FORMAT_VERSION, "pid": os.getpid(), "host": hostname(),
        "started_ns": time.time_ns(), "anchor_time_ns": time.time_ns(),
        "anchor_perf_counter_ns": time.perf_counter_ns(), **fields})


def env_flag(name: str, default: str = "") -> str:
    return os.environ.get(name, default)
