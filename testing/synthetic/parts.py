"""Writing tables the way the collector does (``correlate.schema.run``), cut at its flush times:
run format 3, one Arrow IPC stream per table with a record batch per flush and text as ids into
the process's ``strings.arrows``; or run format 2, Arrow IPC parts numbered per process like the
collectors numbered them then; typed by the run folder's schemas."""

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
from correlate.schema.run import (
    PAIR_NULL,
    PAIR_SEP,
    PAIRS,
    PART_SUFFIX,
    SNAPSHOT_SUFFIX,
    STREAM_SUFFIX,
    STRINGS,
    stored_columns,
)


def flush_index(times: np.ndarray, flushes: np.ndarray) -> np.ndarray:
    """Index of the flush that writes a row appended at ``times`` (len(flushes) = close)."""
    return np.searchsorted(flushes, times, side="left")


def arrow_table(table: Table, arrays: list[Any]) -> pa.Table:
    schema = table.arrow_schema()
    cols = [a if isinstance(a, pa.Array | pa.ChunkedArray) else pa.array(a, type=f.type)
            for a, f in zip(arrays, schema, strict=True)]
    cols = [c.cast(f.type) if c.type != f.type else c for c, f in zip(cols, schema, strict=True)]
    return pa.Table.from_arrays(cols, schema=schema)


def write_table(path: Path, table: Table, arrays: list[Any]) -> None:
    data = arrow_table(table, arrays)
    path.parent.mkdir(parents=True, exist_ok=True)
    with ipc.new_file(path, data.schema) as writer:
        writer.write_table(data)


def with_string_ids(tables: list[tuple[Table, pa.Table]]) -> tuple[list[pa.Table], pa.Array]:
    """``tables`` as run format 3 stores them (``stored_columns``: text columns as int32 ids
    into the returned strings, one process's, each distinct text once; pairs as one id)."""
    def text(table: Table, t: pa.Table, name: str) -> pa.Array:
        pair = PAIRS.get(table.name, {}).get(name)
        if pair is None:
            return t.column(name).cast(pa.string())
        a, b = (pc.fill_null(t.column(c).cast(pa.string()), PAIR_NULL) for c in pair)
        both_null = pc.and_(pc.is_null(t.column(pair[0])), pc.is_null(t.column(pair[1])))
        return pc.if_else(both_null, pa.scalar(None, pa.string()),
                          pc.binary_join_element_wise(a, b, PAIR_SEP))

    stored = [(table, t, [(name, dtype, text(table, t, name) if dtype == "id" else None)
                          for name, dtype in stored_columns(table)]) for table, t in tables]
    texts = [x for _table, _t, cols in stored for _n, _d, x in cols if x is not None]
    strings = (pa.chunked_array(texts, pa.string()).unique().drop_null() if texts
               else pa.array([], pa.string()))
    strings = strings.combine_chunks() if isinstance(strings, pa.ChunkedArray) else strings
    out = []
    for _table, t, cols in stored:
        out.append(pa.table({
            name: (pc.index_in(x, value_set=strings).cast(pa.int32()) if x is not None
                   else t.column(name)) for name, _d, x in cols}))
    return out, strings


def nulls(n: int, type_: pa.DataType) -> pa.Array:
    return pa.nulls(n, type=type_)


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))


def write_proc(pdir: Path, info: dict[str, Any], closing: dict[str, Any], run_format: int
               ) -> None:
    """proc.json with its closing record as the collectors write it: in run format 3 its
    ``closed`` field (``collectors.sink.close_proc_json``), in format 2 closed.json."""
    if run_format == 2:
        write_json(pdir / "proc.json", info)
        write_json(pdir / "closed.json", closing)
    else:
        write_json(pdir / "proc.json", {**info, "closed": closing})


def float_str(ns: np.ndarray) -> pa.Array:
    """Epoch seconds as text, the way Dask's stimulus ids print ``time()``."""
    return pc.cast(pa.array(ns / 1e9), pa.string())


class PartWriter:
    """Cuts each table at the collector's flush times: in run format 3 a record batch per flush
    in each table's stream (``ProcessSink``), in format 2 a part numbered like the collectors
    did (one counter per process, incremented per non-empty table part, tables in sink order
    within each flush)."""

    def __init__(self, proc_dir: Path, flushes: np.ndarray, run_format: int = 3) -> None:
        self.proc_dir = proc_dir
        self.flushes = flushes
        self.run_format = run_format
        self.tables: list[tuple[Table, np.ndarray, Callable[[int, int], list[Any]]]] = []
        self.snapshots: list[tuple[Table, list[Any]]] = []
        #: rows of tables written on another's rows (``CARRIED``), counted under their own name
        self.carried: dict[str, int] = {}

    def add(self, table: Table, append_times: np.ndarray,
            build: Callable[[int, int], list[Any]]) -> None:
        """``append_times`` sorted; ``build(lo, hi)`` returns the columns of rows lo..hi."""
        self.tables.append((table, append_times, build))

    def counted(self, table: Table, rows: int) -> None:
        """``rows`` of ``table`` written on another table's rows (``CARRIED``)."""
        self.carried[table.name] = rows

    def snapshot(self, table: Table, arrays: list[Any]) -> None:
        """A snapshot table (the last one a process wrote), written with the others."""
        self.snapshots.append((table, arrays))

    def write(self) -> dict[str, int]:
        cuts = [np.searchsorted(flush_index(t, self.flushes),
                                np.arange(len(self.flushes) + 2)) for _, t, _ in self.tables]
        batches: list[tuple[Table, pa.Table]] = []
        part = 0
        for k in range(len(self.flushes) + 1):
            for (table, _t, build), cut in zip(self.tables, cuts, strict=True):
                lo, hi = int(cut[k]), int(cut[k + 1])
                if hi <= lo:
                    continue
                if self.run_format == 2:
                    part += 1
                    write_table(self.proc_dir / table.name / f"part-{part:06d}{PART_SUFFIX}",
                                table, build(lo, hi))
                else:
                    batches.append((table, arrow_table(table, build(lo, hi))))
        if self.run_format == 2:
            for table, arrays in self.snapshots:
                write_table(self.proc_dir / table.name / f"snapshot{PART_SUFFIX}", table, arrays)
        else:
            self._write_streams(batches)
        return {**{table.name: len(t) for table, t, _ in self.tables}, **self.carried}

    def _write_streams(self, batches: list[tuple[Table, pa.Table]]) -> None:
        snaps = [(t, arrow_table(t, a)) for t, a in self.snapshots]
        every = batches + snaps
        encoded, strings = with_string_ids(every)
        self.proc_dir.mkdir(parents=True, exist_ok=True)
        ids = pa.table({"id": pa.array(range(len(strings)), pa.int32()), "text": strings})
        streams: dict[str, Any] = {}
        if len(strings):
            streams[STRINGS.name] = ipc.new_stream(
                self.proc_dir / f"{STRINGS.name}{STREAM_SUFFIX}", ids.schema)
            streams[STRINGS.name].write_table(ids)
        for (table, _b), data in zip(batches, encoded[:len(batches)], strict=True):
            if table.name not in streams:
                streams[table.name] = ipc.new_stream(
                    self.proc_dir / f"{table.name}{STREAM_SUFFIX}", data.schema)
            streams[table.name].write_table(data)
        for writer in streams.values():
            writer.close()
        for (table, _s), data in zip(snaps, encoded[len(batches):], strict=True):
            with ipc.new_file(self.proc_dir / f"{table.name}{SNAPSHOT_SUFFIX}",
                              data.schema) as writer:
                writer.write_table(data)
