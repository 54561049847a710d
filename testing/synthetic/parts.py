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

from collectors.sink import HELD_LIMIT, KEY_COLUMNS, STRINGS_LIMIT
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

#: a process folder whose tables cover more than this many task executions is written flush by
#: flush (``PartWriter(chunk_rows=...)``); at or below it, the layout of the runs made before
STREAM_EXECUTIONS = 200_000

#: rows built at a time when streaming
CHUNK_ROWS = 1 << 20


def chunk_rows(executions: int) -> int | None:
    """``PartWriter``'s ``chunk_rows`` for a process whose tables cover ``executions``."""
    return CHUNK_ROWS if executions > STREAM_EXECUTIONS else None


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


def _text(table: Table, t: pa.Table, name: str) -> pa.ChunkedArray:
    """The text an id column of format 3 stores: the column, or a pair (``PAIRS``) joined."""
    pair = PAIRS.get(table.name, {}).get(name)
    if pair is None:
        return t.column(name).cast(pa.string())
    a, b = (pc.fill_null(t.column(c).cast(pa.string()), PAIR_NULL) for c in pair)
    both_null = pc.and_(pc.is_null(t.column(pair[0])), pc.is_null(t.column(pair[1])))
    return pc.if_else(both_null, pa.scalar(None, pa.string()),
                      pc.binary_join_element_wise(a, b, PAIR_SEP))


def with_string_ids(tables: list[tuple[Table, pa.Table]]) -> tuple[list[pa.Table], pa.Array]:
    """``tables`` as run format 3 stores them (``stored_columns``: text columns as int32 ids
    into the returned strings, one process's, each distinct text once; pairs as one id)."""
    stored = [(table, t, [(name, dtype, _text(table, t, name) if dtype == "id" else None)
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


class Strings:
    """A process's strings handed out as the collectors do (``collectors.sink.Strings``): ids in
    order, the texts not written yet appended to ``strings.arrows`` before the batch that uses
    them, two maps (task keys', ``KEY_COLUMNS``, and the other texts'), each bounded (past
    ``limit`` values it starts again, the keys' keeping only the keys held; a text seen again
    gets a new id). The scheduler's keys are held as its plugin holds them: from their
    transitions' batch, before it is encoded, to the flush after the one that says they were
    forgotten (``hold``, ``flushed``). A batch's distinct values are looked up in dicts (a
    scheduler's map holds a million keys: rebuilt per batch as a pyarrow value set, it cost the
    generator more than the rest of its work)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = STRINGS_LIMIT if limit is None else limit
        self.ids: dict[str, int] = {}
        self.keys: dict[str, int] = {}
        self.next = 0
        self.new: list[pa.Array] = []
        self.start = 0  # the first id in ``new``
        self.held: set[str] = set()
        self.recent: list[str] = []  # keys given an id since the keys' map started again
        #: keys said forgotten in this flush (let go at the next: ``flushed``), and in the last
        self.forgotten: list[str] = []
        self.releasing: list[str] = []

    def hold(self, values: pa.Array | pa.ChunkedArray) -> None:
        """As the collectors hold keys: past ``HELD_LIMIT``, the first until it is reached."""
        held = self.held
        for value in pc.unique(values).drop_null().to_pylist():
            if len(held) >= HELD_LIMIT:
                break
            held.add(value)

    def flushed(self) -> None:
        """A flush has been written: the keys forgotten in the one before are let go."""
        self.held.difference_update(self.releasing)
        for key in self.releasing:
            self.keys.pop(key, None)
        self.releasing, self.forgotten = self.forgotten, []

    def encode(self, values: pa.ChunkedArray | pa.Array, keys: bool = False
               ) -> pa.ChunkedArray | pa.Array:
        distinct = pc.unique(values).drop_null()  # in the order they first appear
        texts = distinct.to_pylist()
        ids = self.keys if keys else self.ids
        missing = [v for v in texts if v not in ids]
        if missing:
            if (len(self.recent) if keys else len(ids)) + len(missing) > self.limit:
                self._start_again(keys)
                missing = [v for v in texts if v not in ids]
            ids.update(zip(missing, range(self.next, self.next + len(missing)), strict=True))
            if keys:
                self.recent += missing
            self.next += len(missing)
            self.new.append(pa.array(missing, pa.string()))
        known = pa.array([ids[v] for v in texts], pa.int32())
        return pc.take(known, pc.index_in(values, value_set=distinct))

    def _start_again(self, keys: bool) -> None:
        if not keys:
            self.ids.clear()
            return
        for key in set(self.recent).difference(self.held):
            self.keys.pop(key, None)
        self.recent = []

    def encoded(self, table: Table, t: pa.Table) -> pa.Table:
        if table.name == "scheduler_transitions":
            self.hold(t.column("key"))
            finish = t.column("finish").cast(pa.string())
            self.forgotten += pc.filter(t.column("key"),
                                        pc.equal(finish, "forgotten")).to_pylist()
        return pa.table({name: self.encode(_text(table, t, name), name in KEY_COLUMNS)
                         if dtype == "id" else t.column(name)
                         for name, dtype in stored_columns(table)})

    def take_new(self) -> pa.Table | None:
        """The (id, text) rows handed out since the last call, or None."""
        if not self.new:
            return None
        texts = pa.concat_arrays(self.new)
        rows = pa.table({"id": pa.array(np.arange(self.start, self.start + len(texts),
                                                  dtype=np.int32)), "text": texts})
        self.new, self.start = [], self.next
        return rows


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


#: the rows appended during one flush: their number and ``build(lo, hi)`` of rows lo..hi of them
Window = tuple[int, Callable[[int, int], list[Any]]]


class PartWriter:
    """Cuts each table at the collector's flush times: in run format 3 a record batch per flush
    in each table's stream (``ProcessSink``), in format 2 a part numbered like the collectors
    did (one counter per process, incremented per non-empty table part, tables in sink order
    within each flush).

    Format 3 is written one of two ways. By default every batch is built, then the process's
    distinct strings written once, first (the runs made before streaming; small). With
    ``chunk_rows``, flush by flush as the collectors write: each batch built ``chunk_rows``
    rows at a time and encoded as it is built, the strings it adds appended to ``strings.arrows``
    before it (``Strings``), so only one flush's batch of one table is in memory. The tables
    read back the same; the strings stream holds them in another order (and a text again after
    the map's bound, as the collectors' do)."""

    def __init__(self, proc_dir: Path, flushes: np.ndarray, run_format: int = 3,
                 chunk_rows: int | None = None) -> None:
        self.proc_dir = proc_dir
        self.flushes = flushes
        self.run_format = run_format
        self.chunk_rows = chunk_rows
        self.tables: list[tuple[Table, Callable[[int], Window]]] = []
        self.snapshots: list[tuple[Table, list[Any]]] = []
        #: rows of tables written on another's rows (``CARRIED``), counted under their own name
        self.carried: dict[str, int] = {}

    def add(self, table: Table, append_times: np.ndarray,
            build: Callable[[int, int], list[Any]]) -> None:
        """``append_times`` sorted; ``build(lo, hi)`` returns the columns of rows lo..hi."""
        cut = np.searchsorted(flush_index(append_times, self.flushes),
                              np.arange(len(self.flushes) + 2))

        def window(k: int) -> Window:
            lo, hi = int(cut[k]), int(cut[k + 1])
            return hi - lo, lambda a, b: build(lo + a, lo + b)

        self.tables.append((table, window))

    def add_windows(self, table: Table, window: Callable[[int], Window]) -> None:
        """``window(k)``: the rows appended during flush ``k`` (after ``flushes[k - 1]``, up to
        ``flushes[k]``; the last, after the last flush, at close), in order. Asked for flush
        by flush, the tables in the order they were added."""
        self.tables.append((table, window))

    def counted(self, table: Table, rows: int) -> None:
        """``rows`` of ``table`` written on another table's rows (``CARRIED``)."""
        self.carried[table.name] = rows

    def snapshot(self, table: Table, arrays: list[Any]) -> None:
        """A snapshot table (the last one a process wrote), written with the others."""
        self.snapshots.append((table, arrays))

    def _windows(self, flushed: Callable[[], None] | None = None) -> Any:
        """(table, rows, build) of every non-empty batch, flush by flush; ``flushed()`` called
        after each flush, empty ones too."""
        for k in range(len(self.flushes) + 1):
            for table, window in self.tables:
                n, build = window(k)
                if n > 0:
                    yield table, n, build
            if flushed is not None:
                flushed()

    def write(self) -> dict[str, int]:
        rows = {table.name: 0 for table, _ in self.tables}
        if self.run_format == 3 and self.chunk_rows:
            self._write_flushes(rows)
            return {**rows, **self.carried}
        batches: list[tuple[Table, pa.Table]] = []
        part = 0
        for table, n, build in self._windows():
            rows[table.name] += n
            if self.run_format == 2:
                part += 1
                write_table(self.proc_dir / table.name / f"part-{part:06d}{PART_SUFFIX}",
                            table, build(0, n))
            else:
                batches.append((table, arrow_table(table, build(0, n))))
        if self.run_format == 2:
            for table, arrays in self.snapshots:
                write_table(self.proc_dir / table.name / f"snapshot{PART_SUFFIX}", table, arrays)
        else:
            self._write_streams(batches)
        return {**rows, **self.carried}

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

    def _write_flushes(self, rows: dict[str, int]) -> None:
        self.proc_dir.mkdir(parents=True, exist_ok=True)
        strings = Strings()
        streams: dict[str, Any] = {}

        def append(name: str, data: pa.Table) -> None:
            if name not in streams:
                streams[name] = ipc.new_stream(self.proc_dir / f"{name}{STREAM_SUFFIX}",
                                               data.schema)
            streams[name].write_table(data)

        def new_strings() -> None:
            new = strings.take_new()
            if new is not None:
                append(STRINGS.name, new)

        step = self.chunk_rows or 1
        for table, n, build in self._windows(strings.flushed):
            rows[table.name] += n
            data = pa.concat_tables([
                strings.encoded(table, arrow_table(table, build(lo, min(n, lo + step))))
                for lo in range(0, n, step)]).combine_chunks()
            new_strings()
            append(table.name, data)
        snaps = [(t, strings.encoded(t, arrow_table(t, a))) for t, a in self.snapshots]
        new_strings()
        for writer in streams.values():
            writer.close()
        for table, data in snaps:
            with ipc.new_file(self.proc_dir / f"{table.name}{SNAPSHOT_SUFFIX}",
                              data.schema) as writer:
                writer.write_table(data)
