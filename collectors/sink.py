"""Crash-tolerant, append-only writer of one process's tables.

The hot path is ``sink.append(table, row)``: a ``list.append`` of a tuple. A background thread
swaps each buffer out every ``interval`` seconds and writes it as
``<proc_dir>/<table>/part-NNNNNN.parquet`` (temp name + ``os.replace``, so every part on disk is
complete). A killed process loses at most one interval. Buffers are bounded: rows beyond
``max_rows`` per table between flushes are counted as dropped, never silently lost.
``close()`` flushes and writes ``closed.json`` (row counts, drops, hook errors).
"""

from __future__ import annotations

import json
import os
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from itertools import repeat
from operator import is_not
from pathlib import Path
from typing import Any

from collectors.guard import ERRORS, never_raise


def drain(buf: deque) -> Iterator[Any]:
    """Pop items until empty: safe against appends from other threads (deque ops are atomic),
    so nothing appended during a flush is lost."""
    while True:
        try:
            yield buf.popleft()
        except IndexError:
            return


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
        self.buffers: dict[str, deque[tuple]] = {name: deque() for name in tables}
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
        buf = self.buffers[table]
        if len(buf) < self.max_rows:
            buf.append(row)
        else:
            self.dropped[table] += 1

    def _run(self) -> None:
        self._warm()
        while not self._stop.wait(self.interval):
            self.flush()

    @never_raise
    def _warm(self) -> None:
        """Import the writer on this thread while the job runs, not at shutdown."""
        import pyarrow.parquet  # noqa: F401

    @never_raise
    def flush(self) -> None:
        with self._lock:
            for hook in self.before_flush:
                never_raise(hook)()
            for name in self.tables:
                rows = list(drain(self.buffers[name]))
                if rows:
                    self._write(name, rows)

    def _write(self, name: str, rows: list[tuple], *, snapshot: bool = False) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = self.tables[name]
        columns = list(zip(*rows, strict=True))
        arrays = [arrow_column(col, c) for col, c in zip(columns, table.columns, strict=True)]
        data = pa.Table.from_arrays(arrays, schema=table.arrow_schema())
        folder = self.proc_dir / name
        folder.mkdir(exist_ok=True)
        if snapshot:
            final = folder / "snapshot.parquet"
        else:
            self.parts += 1
            final = folder / f"part-{self.parts:06d}.parquet"
        tmp = folder / f".{final.name}.tmp"
        # no dictionary pages: most strings here (keys, stimulus ids) are distinct, and zstd
        # takes the repeats; writing is quicker and the parts smaller
        pq.write_table(data, tmp, compression="zstd", use_dictionary=False)
        os.replace(tmp, final)
        self.written[name] += len(rows) if not snapshot else 0

    @never_raise
    def write_snapshot(self, name: str, rows: list[tuple]) -> None:
        """Replace the table's snapshot (for cumulative data such as profiles); an empty one
        removes it."""
        with self._lock:
            if rows:
                self._write(name, rows, snapshot=True)
            elif self.snapshot_rows[name]:
                (self.proc_dir / name / "snapshot.parquet").unlink(missing_ok=True)
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


_CODES = {"int64": "q", "uint64": "Q", "double": "d"}
_NONE = type(None)


def arrow_column(values: tuple, column: Any) -> Any:
    """One column of rows as an Arrow array, the same as ``pa.array(values, type)``, built
    from buffers (``array``/``bytes``) for the column types of the raw tables: ``pa.array`` on
    a Python sequence first asks whether it is a pandas object, which imports pandas (a
    quarter-second per process, at the first flush). Each step runs over the column in C
    (``map``, ``str.join``, ``array``): a Python loop per value would cost more than the
    parquet writer. Other types, and values these buffers do not take, go through
    ``pa.array``."""
    import numpy as np  # pyarrow imports it
    import pyarrow as pa

    typ = column.arrow_type()
    kind = str(typ)
    try:
        n = len(values)
        nulls = values.count(None)
        types = set(map(type, values))
        types.discard(_NONE)
        validity = None
        if nulls:
            valid = np.fromiter(map(is_not, values, repeat(None)), dtype=bool, count=n)
            validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
        if kind in _CODES:
            if bool in types:
                raise TypeError("bool")  # pa.array refuses bools in integer columns
            data = array(_CODES[kind], values if not nulls else
                         [0 if v is None else v for v in values])
            return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(data)], nulls)
        if kind == "string":
            if not types <= {str}:
                raise TypeError("not str")
            text = values if not nulls else ["" if v is None else v for v in values]
            joined = "".join(text)
            if joined.isascii():  # one byte per character: lengths are the str lengths
                data, lengths = joined.encode("ascii"), map(len, text)
            else:
                encoded = list(map(str.encode, text))
                data, lengths = b"".join(encoded), map(len, encoded)
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.fromiter(lengths, dtype=np.int64, count=n), out=offsets[1:])
            if offsets[-1] >= 2**31:
                raise OverflowError("string column over 2 GiB")
            return pa.Array.from_buffers(typ, n, [validity,
                                                  pa.py_buffer(offsets.astype(np.int32)),
                                                  pa.py_buffer(data)], nulls)
    except (TypeError, ValueError, OverflowError, UnicodeError):
        pass
    return pa.array(values, type=typ)


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
