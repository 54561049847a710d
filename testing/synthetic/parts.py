"""Writing tables the way the collector does: Arrow IPC parts (``correlate.schema.run``) cut at
its flush times, numbered per process like ``ProcessSink``, typed by the run folder's schemas."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from correlate.schema import Table
from correlate.schema.run import PART_SUFFIX


def flush_index(times: np.ndarray, flushes: np.ndarray) -> np.ndarray:
    """Index of the flush that writes a row appended at ``times`` (len(flushes) = close)."""
    return np.searchsorted(flushes, times, side="left")


def write_table(path: Path, table: Table, arrays: list[Any]) -> None:
    schema = table.arrow_schema()
    cols = [a if isinstance(a, pa.Array | pa.ChunkedArray) else pa.array(a, type=f.type)
            for a, f in zip(arrays, schema, strict=True)]
    cols = [c.cast(f.type) if c.type != f.type else c for c, f in zip(cols, schema, strict=True)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with ipc.new_file(path, schema) as writer:
        writer.write_table(pa.Table.from_arrays(cols, schema=schema))


def nulls(n: int, type_: pa.DataType) -> pa.Array:
    return pa.nulls(n, type=type_)


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))


def float_str(ns: np.ndarray) -> pa.Array:
    """Epoch seconds as text, the way Dask's stimulus ids print ``time()``."""
    return pc.cast(pa.array(ns / 1e9), pa.string())


class PartWriter:
    """Cuts each table at the collector's flush times and numbers parts like ``ProcessSink``:
    one counter per process, incremented per non-empty table part, tables in sink order within
    each flush."""

    def __init__(self, proc_dir: Path, flushes: np.ndarray) -> None:
        self.proc_dir = proc_dir
        self.flushes = flushes
        self.tables: list[tuple[Table, np.ndarray, Callable[[int, int], list[Any]]]] = []

    def add(self, table: Table, append_times: np.ndarray,
            build: Callable[[int, int], list[Any]]) -> None:
        """``append_times`` sorted; ``build(lo, hi)`` returns the columns of rows lo..hi."""
        self.tables.append((table, append_times, build))

    def write(self) -> dict[str, int]:
        cuts = [np.searchsorted(flush_index(t, self.flushes),
                                np.arange(len(self.flushes) + 2)) for _, t, _ in self.tables]
        part, rows = 0, {}
        for k in range(len(self.flushes) + 1):
            for (table, _t, build), cut in zip(self.tables, cuts, strict=True):
                lo, hi = int(cut[k]), int(cut[k + 1])
                if hi > lo:
                    part += 1
                    write_table(self.proc_dir / table.name / f"part-{part:06d}{PART_SUFFIX}", table,
                           build(lo, hi))
        for table, t, _ in self.tables:
            rows[table.name] = len(t)
        return rows
