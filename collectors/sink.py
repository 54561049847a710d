"""Crash-tolerant, append-only writer of one process's tables.

The hot path is ``sink.append(table, row)``: one ``list.extend`` of the row's tuple onto the
table's flat buffer of values. That is atomic under the GIL (any thread may append), and it
keeps no container per row: a tuple that lives until the next flush would be one more object
for every garbage collection of the job's process to track and count (``take``). A background
thread takes each buffer's rows as columns every ``interval`` seconds and appends them as one
record batch to ``<proc_dir>/<table>.arrows``, an Arrow IPC stream per table for the whole life
of the process (run format 3: ``correlate.schema.run``), then syncs it: a process writes a
constant number of files however long the job runs. Repeated text (keys, states, addresses,
prefixes) is written once per process into ``strings.arrows`` and rows hold its integer id.
A killed process loses at most one interval; a batch cut short by the kill is the stream's torn
tail, which ``correlate`` stops at (every earlier batch stays readable).
Buffers are bounded: rows beyond ``max_rows`` per table (buffered, or kept after a failed write)
are counted as dropped with their reason, never silently lost; hooks that buffer raw rows of
their own bound them through ``raw`` the same way. A write that fails (a full or read-only run
folder: ``OSError``) cuts the stream back to its last complete batch and keeps its rows for the
next flush (the next batch is written at that length, over whatever a failed cut left). ``close()``
flushes and adds the closing record to proc.json (row counts, drops per table and reason, failed
writes, hook errors), into space proc.json reserved at start when the folder is full by then.

Streams and snapshots are Arrow IPC written by the standard library alone
(``collectors.arrow_file``): the pyarrow Parquet writer of run format 1 cost each Dask process
its memory, its imports and its allocator's first-write stalls (docs/performance.md, "Parts
and buffers"). docs/run-format-3.md describes the format.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

from collectors import watchdog
from collectors.arrow_file import batch_message, holds, ipc_file, schema_message
from collectors.guard import ERRORS, never_raise
from collectors.options import DEFAULTS
from correlate.schema.run import (
    CLOSED_FIELD,
    CLOSED_JSON,
    IN_FILE_OF,
    PAIR_NULL,
    PAIR_SEP,
    PAIRS,
    PROC_JSON,
    SNAPSHOT_SUFFIX,
    STREAM_SUFFIX,
    STRING_IDS,
    STRINGS,
    stored_columns,
)


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


def write_json_atomic(path: Path, data: dict[str, Any], *, pad: int = 0) -> None:
    """Write ``path`` whole or not at all (temp name + rename); ``pad`` trailing spaces leave
    room for a later in-place rewrite (``rewrite_in_place``) when the folder is full."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + " " * pad)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def rewrite_in_place(path: Path, data: dict[str, Any], fd: int | None = None) -> bool:
    """Overwrite an existing file's bytes with ``data`` (JSON, space-padded to the file's size):
    no new block is needed, so it works in a full folder; through ``fd``, an open descriptor of
    the file, also where its folder has been moved away. False if it does not fit or fails."""
    text = json.dumps(data, indent=1, sort_keys=True, default=str).encode()
    try:
        own = fd is None
        fd = os.open(path, os.O_WRONLY) if fd is None else fd
        try:
            size = os.fstat(fd).st_size
            if len(text) > size:
                return False
            os.pwrite(fd, text + b" " * (size - len(text)), 0)
        finally:
            if own:
                os.close(fd)
    except OSError:
        return False
    return True


#: the reason a write failed, by errno (others: the errno's name)
REASONS = {errno.ENOSPC: "no space", errno.EDQUOT: "no space (quota)",
           errno.EACCES: "permission", errno.EPERM: "permission",
           errno.EROFS: "read-only file system",
           errno.ENOENT: "folder gone (moved or deleted)"}
#: bytes proc.json reserves after its object for the closing record (``close`` in a full
#: folder)
CLOSING_RESERVE = 16384


def reason_of(err: OSError) -> str:
    return REASONS.get(err.errno or 0) or (errno.errorcode.get(err.errno or 0)
                                          or type(err).__name__)


#: the Arrow column kind of each raw-table dtype (text for the others: String and Enum); a
#: column written as string ids (``STRING_IDS``) is 32-bit integers
_KINDS = {"Int64": "int64", "UInt64": "uint64", "Int32": "int32", "Float64": "double"}
_ID_KIND = "int32"
#: why rows were left out of a batch: one of their values does not fit its column's type (a
#: stream's columns keep the types its schema message gave them)
MISTYPED = "a value not of its column's type"


#: distinct values a process's map of strings holds before it starts again (``Strings``)
STRINGS_LIMIT = 1 << 17
#: the string-id columns that hold task keys (``Strings.encode_keys``)
KEY_COLUMNS = frozenset({"key", "depends_on"})
#: task keys a process's map of strings holds at most (``Strings.hold``): a key held costs an
#: entry of the map and one of the set of held values, about 110 bytes
HELD_LIMIT = 1 << 22


class Strings:
    """The process's table of repeated text: each distinct value gets an integer id once, and
    rows hold the id (``strings.arrows``: id, text). The ids a process hands out never repeat,
    and are written in order (``correlate`` reads a text as the id-th row). Two maps, each
    bounded: the task keys' (``encode_keys``: the columns of ``KEY_COLUMNS``) and the other
    texts'; past ``limit`` distinct values a map starts again (the keys' keeping the values
    held: ``hold``), and a value seen again gets a new id (its text is written twice, rows
    stay right). Apart, the keys of a graph are not let go for the stimulus ids and states
    between their transitions, and the other texts' map stays small (its lookups cheap)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = STRINGS_LIMIT if limit is None else limit
        # a pair of values (``PAIRS``) is a key too: a tuple, never equal to a str
        self.ids: dict[Any, int | None] = {None: None, (None, None): None}
        self.keys: dict[Any, int | None] = {None: None}
        self.next = 0
        #: ids handed out and not yet written, and their texts
        self.new_ids: list[int] = []
        self.new_texts: list[str] = []
        #: keys the map keeps when it starts again, until released (``hold``)
        self.held: set[Any] = set()
        #: keys given an id since the map last started again (those not held are let go
        #: when it starts again: its bound, not the number of keys held, sets that cost)
        self.recent: list[Any] = []

    def hold(self, values: list) -> None:
        """Keep the keys ``values`` in the map (once encoded) when it starts again, until
        ``release``: a scheduler's task keys, named again at each of a task's transitions for
        as long as it lives, whatever came between (a graph of a million tasks is submitted at
        once), are then written once, not once per fill of the map. At most ``HELD_LIMIT``
        keys are held (each costs the map an entry it would have let go): past it, the first
        of ``values`` until it is reached."""
        held = self.held
        if len(held) + len(values) <= HELD_LIMIT:
            held.update(values)
            return
        room = HELD_LIMIT - len(held)
        for value in values:
            if room <= 0:
                break
            if value not in held:
                held.add(value)
                room -= 1

    def release(self, values: list) -> None:
        """Let the keys ``values`` go: a key given again gets a new id."""
        self.held.difference_update(values)
        _consume(map(self.keys.pop, values, repeat(None)))
        self.keys[None] = None  # (were it among them)

    def encode(self, values: list) -> list:
        return self._encode(self.ids, set(values), values)

    def encode_keys(self, values: list) -> list:
        return self._encode(self.keys, set(values), values)

    def encode_pairs(self, first: list, second: list) -> list:
        """The ids of the pairs ``(first[i], second[i])``, each pair an id of its own. The
        pairs are made as they are looked up, not kept: a list of them would be as many
        objects for the garbage collector to count (and trip on) as there are rows."""
        return self._encode(self.ids, set(zip(first, second, strict=True)),
                            zip(first, second, strict=True), _pair_text)

    def _encode(self, ids: dict[Any, int | None], distinct: set, values: Any,
                text: Callable[[Any], str] | None = None) -> list:
        keys = ids is self.keys
        missing = distinct.difference(ids)
        if missing:
            if (len(self.recent) if keys else len(ids)) + len(missing) > self.limit:
                self._start_again(keys)
                missing = distinct.difference(ids)
            new = list(missing)
            start = self.next
            self.next += len(new)
            ids.update(zip(new, range(start, self.next), strict=True))
            if keys:
                self.recent += new
            self.new_ids.extend(range(start, self.next))
            if text is None and set(map(type, new)) == {str}:
                self.new_texts.extend(new)  # (text is its own: no call per value)
            else:
                self.new_texts.extend(map(text or _text, new))
        return list(map(ids.__getitem__, values))

    def _start_again(self, keys: bool) -> None:
        """A map emptied: the keys' but for the held ones (a key is given once since the
        last start again: a start again costs the map's bound, not the keys held)."""
        if not keys:
            self.ids.clear()
            self.ids[None] = self.ids[(None, None)] = None
            return
        gone = set(self.recent).difference(self.held)
        _consume(map(self.keys.pop, gone, repeat(None)))  # (a released key is gone)
        self.recent = []


def _consume(calls: Iterator[Any]) -> None:
    deque(calls, maxlen=0)  # (each call made, none kept, no Python loop)


def _text(value: Any) -> str:
    return value if type(value) is str else str(value)


def _pair_text(pair: tuple) -> str:
    a, b = pair
    return ((PAIR_NULL if a is None else a if type(a) is str else str(a)) + PAIR_SEP
            + (PAIR_NULL if b is None else b if type(b) is str else str(b)))


class StreamFile:
    """One table's Arrow IPC stream: the schema message, then record batches appended whole.
    Each append is written at the end of the last complete batch and synced; one that fails is
    cut back off (``ftruncate``), and where that fails too the next append overwrites it, so
    anything after the last complete batch is only ever the file's tail. The file is open only
    during an append: an open of an existing file per flush, no create, and no descriptor held
    that would keep its file system from being remounted."""

    def __init__(self, path: Path, names: Sequence[str], kinds: Sequence[str]) -> None:
        self.path = path
        self.kinds = list(kinds)
        self.head = schema_message(names, kinds)
        self.length = 0  # bytes of complete messages

    def append(self, columns: list[list]) -> None:
        data, _meta = batch_message(self.kinds, columns)
        if not self.length:
            data = self.head + data
        flags = os.O_WRONLY | (os.O_CREAT | os.O_TRUNC if not self.length else 0)
        fd = os.open(self.path, flags, 0o644)
        at, view = self.length, memoryview(data)
        try:
            while view:
                n = os.pwrite(fd, view, at)
                at += n
                view = view[n:]
            os.fdatasync(fd)
        except OSError:
            try:
                os.ftruncate(fd, self.length)
            except OSError:
                pass
            raise
        finally:
            os.close(fd)
        self.length = at


def kinds_of(table: Any) -> list[str]:
    """The Arrow column kinds a table is written with in run format 3."""
    return [_ID_KIND if dtype == "id" else _KINDS.get(dtype, "utf8")
            for _name, dtype in stored_columns(table)]


def plan_of(table: Any, stream: Any = None) -> list[tuple[str, int, int]]:
    """How each column on disk of ``stream``'s stream (the table's own by default; another's
    for a table written in it, ``IN_FILE_OF``) comes from ``table``'s columns: ("value" |
    "id" | "key", i, -1), ("pair", i, j), or ("null", -1, -1) for one the table does not
    have ("key": a string id of ``KEY_COLUMNS``)."""
    stream = table if stream is None else stream
    index = {c.name: i for i, c in enumerate(table.columns)}
    pairs = PAIRS.get(stream.name, {})
    ids = STRING_IDS.get(stream.name, ())
    out = []
    for name, _dtype in stored_columns(stream):
        if name in pairs and all(c in index for c in pairs[name]):
            a, b = pairs[name]
            out.append(("pair", index[a], index[b]))
        elif name in index:
            out.append(("value" if name not in ids else "key" if name in KEY_COLUMNS
                        else "id", index[name], -1))
        else:
            out.append(("null", -1, -1))
    return out


def fitting(kinds: Sequence[str], columns: list[list]) -> tuple[list[list], int]:
    """``columns`` without the rows that have a value their column's kind cannot hold (a float
    in an integer column), and how many rows that left out."""
    bad: set[int] = set()
    for kind, values in zip(kinds, columns, strict=True):
        if kind != "utf8" and not holds(kind, values):
            bad.update(i for i, v in enumerate(values)
                       if v is not None and not holds(kind, [v]))
    if not bad:
        return columns, 0
    keep = [i for i in range(len(columns[0])) if i not in bad]
    return [[c[i] for i in keep] for c in columns], len(bad)


class ProcessSink:
    def __init__(self, proc_dir: Path, tables: dict[str, Any], *, interval: float = DEFAULTS.flush_interval,
                 max_rows: int = 2_000_000) -> None:
        self.proc_dir = proc_dir
        self.tables = tables  # name -> correlate.schema.Table
        self.interval = interval
        self.max_rows = max_rows
        self.widths = {name: len(t.columns) for name, t in tables.items()}
        self.buffers: dict[str, list] = {name: [] for name in tables}
        self.written: dict[str, int] = dict.fromkeys(tables, 0)
        #: table -> reason -> rows dropped ("buffer full", or why their write failed)
        self.dropped: dict[str, Counter[str]] = {name: Counter() for name in tables}
        #: rows whose write failed, kept for the next flush: table -> (columns, reason)
        self.kept: dict[str, tuple[list[list], str]] = {}
        #: failed writes by reason, and the first one's message
        self.write_errors: Counter[str] = Counter()
        self.first_write_error: str | None = None
        self.snapshot_rows: dict[str, int] = dict.fromkeys(tables, 0)
        self._snapshot_kept: dict[str, list[tuple]] = {}
        self.strings = Strings()
        #: the kind of each of a table's own columns (what its rows' values must fit)
        self._row_kinds = {name: [_KINDS.get(c.dtype, "utf8") for c in t.columns]
                           for name, t in tables.items()}
        #: tables whose rows are written in another's file, its stream or its snapshot
        #: (``IN_FILE_OF``) -> its name
        self._stream_of = {name: other.name for name, (other, _c) in IN_FILE_OF.items()
                           if name in tables and other.name in tables}
        #: files that other tables' rows share -> every table there
        self._sharing: dict[str, list[str]] = {}
        #: each table's file as stored: its own columns, or where others' rows share it, the
        #: table holding theirs too (``IN_FILE_OF``)
        self._stored = dict(tables)
        for name, other in self._stream_of.items():
            self._sharing.setdefault(other, [other]).append(name)
            self._stored[other] = IN_FILE_OF[name][0]
        #: the latest snapshot rows of the tables that share a file
        self._snapshot_latest: dict[str, list[tuple]] = {}
        #: how the columns on disk of each table's stream come from its rows' (string ids,
        #: pairs)
        self._plans = {name: plan_of(t, self._stored[self._stream_of.get(name, name)])
                       for name, t in tables.items()}
        self.streams: dict[str, StreamFile] = {}
        self.batches = 0  # record batches appended
        self.closed = False
        self.before_flush: list[Callable[[], None]] = []
        self._raw: list[tuple[str, list, int]] = []
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._thread = threading.Thread(target=self._run, name="dask-correlate-flush",
                                        daemon=True)
        #: when the flush thread last finished a flush (monotonic; collectors.watchdog)
        self.progress = time.monotonic()
        proc_dir.mkdir(parents=True, exist_ok=True)
        #: the folder kept open (read-only: a remount stays possible), so that the closing
        #: record reaches proc.json even after the run folder was moved
        self._dir_fd: int | None = None
        try:
            self._dir_fd = os.open(proc_dir, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            pass

    def start(self) -> None:
        self._thread.start()

    def last_flush(self) -> float | None:
        """``progress`` while open, None once closed (the watchdog's source for this thread)."""
        return None if self.closed else self.progress

    def stop(self, join_timeout: float = 30) -> None:
        """Stop the flush thread (the server stopped); ``close`` still writes what is left."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=join_timeout)

    def append(self, table: str, row: tuple) -> None:
        """Callers are guarded hooks: a row of the wrong width raises rather than shift every
        later row of the table."""
        buf, width = self.buffers[table], self.widths[table]
        if len(row) != width:
            raise ValueError(f"{table}: a row of {len(row)} values, expected {width}")
        if len(buf) < self.max_rows * width:
            buf.extend(row)
        else:
            self.dropped[table]["buffer full"] += 1

    def raw(self, table: str, width: int) -> tuple[list, Callable[[tuple], None]]:
        """A flat buffer of raw rows (``width`` values each) that a ``before_flush`` hook turns
        into ``table``'s rows, and its bounded ``add``: past ``max_rows`` rows a row is
        counted as dropped from ``table`` instead of growing the buffer."""
        buf: list = []
        cap = self.max_rows * width
        extend, counts = buf.extend, self.dropped[table]

        def add(row: tuple) -> None:
            if len(buf) < cap:
                extend(row)
            else:
                counts["buffer full"] += 1

        self._raw.append((table, buf, width))
        return buf, add

    def write_columns(self, table: str, columns: list[list]) -> None:
        """Write rows a plugin has prepared as columns (in a ``before_flush`` hook), bounded
        like appended rows."""
        n = len(columns[0])
        if n > self.max_rows:
            self.dropped[table]["buffer full"] += n - self.max_rows
            columns = [c[:self.max_rows] for c in columns]
        with self._lock:
            self._write(table, columns)

    def hold_texts(self, held: list, released: list) -> None:
        """Texts the strings let go, then those they keep (``Strings.hold``)."""
        with self._lock:
            self.strings.release(released)
            self.strings.hold(held)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()
            self.progress = time.monotonic()

    @never_raise
    def flush(self) -> None:
        with self._lock:
            for hook in self.before_flush:
                never_raise(hook)()
            for name in self.tables:
                columns = take(self.buffers[name], self.widths[name])
                if columns or name in self.kept:
                    self._write(name, columns or [[] for _ in range(self.widths[name])])
            if self._snapshot_kept:
                self.write_snapshots(dict(self._snapshot_kept))

    def _write(self, name: str, columns: list[list]) -> None:
        """Append a batch of ``columns`` after the rows kept from failed writes; if it fails,
        keep them all (within the bound) for the next flush."""
        if name in self.kept:
            old, _reason = self.kept.pop(name)
            columns = [a + b for a, b in zip(old, columns, strict=True)]
        if not columns[0]:
            return
        try:
            columns = self._typed(name, columns, lambda c: self._stream(name).append(c))
        except OSError as err:
            self._keep(name, columns, self._failed(err))
            return
        self.written[name] += len(columns[0])
        self.batches += 1

    def _typed(self, name: str, columns: list[list], write: Callable[[list[list]], None]
               ) -> list[list]:
        """``write(columns)`` encoded; where a value does not fit its column's type, again
        without its rows (counted as dropped). The columns written, as text."""
        try:
            write(self._encoded(name, columns))
        except (TypeError, OverflowError):
            columns, mistyped = fitting(self._row_kinds[name], columns)
            self.dropped[name][MISTYPED] += mistyped
            if columns[0]:
                write(self._encoded(name, columns))
        return columns

    def _stream(self, name: str) -> StreamFile:
        name = self._stream_of.get(name, name)
        stream = self.streams.get(name)
        if stream is None:
            table = STRINGS if name == STRINGS.name else self._stored[name]
            stream = self.streams[name] = StreamFile(
                self.proc_dir / f"{name}{STREAM_SUFFIX}", [n for n, _d in stored_columns(table)],
                kinds_of(table))
        return stream

    def _encoded(self, name: str, columns: list[list]) -> list[list]:
        """``columns`` as written: repeated text replaced by string ids (pairs by one), the
        strings not written yet appended first (a batch on disk never refers to an id that is
        not)."""
        strings = self.strings
        out = []
        for how, i, j in self._plans[name]:
            if how == "value":
                out.append(columns[i])
            elif how == "id":
                out.append(strings.encode(columns[i]))
            elif how == "key":
                out.append(strings.encode_keys(columns[i]))
            elif how == "null":
                out.append([None] * len(columns[0]))
            else:
                out.append(strings.encode_pairs(columns[i], columns[j]))
        if strings.new_ids:
            self._stream(STRINGS.name).append([strings.new_ids, strings.new_texts])
            strings.new_ids, strings.new_texts = [], []
        return out

    def _failed(self, err: OSError) -> str:
        reason = reason_of(err)
        self.write_errors[reason] += 1
        if self.first_write_error is None:
            self.first_write_error = f"{time.time_ns()} {err}"
        return reason

    def _keep(self, name: str, columns: list[list], reason: str) -> None:
        """Keep the rows of a failed write as long as the table's buffer and these stay within
        ``max_rows``; the oldest beyond it are counted as dropped for ``reason``."""
        room = max(0, self.max_rows - len(self.buffers[name]) // self.widths[name])
        n = len(columns[0])
        if n > room:
            self.dropped[name][reason] += n - room
            columns = [c[n - room:] for c in columns]
        if room:
            self.kept[name] = (columns, reason)

    def _write_snapshot_file(self, file: str, rows: dict[str, list[tuple]]) -> None:
        """Replace ``<file>.snapshot.arrow`` (an Arrow IPC file: temp name + rename) with the
        ``rows`` of each table written there: the file's own, and those ``IN_FILE_OF``
        writes in it."""
        path = self.proc_dir / f"{file}{SNAPSHOT_SUFFIX}"
        tmp = path.with_name(f".{path.name}.tmp")
        stored = self._stored[file]
        names, kinds = [n for n, _d in stored_columns(stored)], kinds_of(stored)
        try:
            if list(rows) == [file]:
                def write(c: list[list]) -> None:
                    tmp.write_bytes(ipc_file(names, kinds, c))

                self._typed(file, columns_of(rows[file], self.widths[file]), write)
            else:  # each table's rows onto the file's columns, their values checked first
                joined: list[list] = [[] for _ in names]
                for name, its in rows.items():
                    columns, mistyped = fitting(self._row_kinds[name],
                                                columns_of(its, self.widths[name]))
                    if mistyped:
                        self.dropped[name][MISTYPED] += mistyped
                    for out, values in zip(joined, self._encoded(name, columns), strict=True):
                        out.extend(values)
                tmp.write_bytes(ipc_file(names, kinds, joined))
            os.replace(tmp, path)
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            raise

    def write_snapshot(self, name: str, rows: list[tuple]) -> None:
        self.write_snapshots({name: rows})

    @never_raise
    def write_snapshots(self, tables: dict[str, list[tuple]]) -> None:
        """Replace the tables' snapshots (for cumulative data such as profiles): table -> all
        its rows; a file left without rows is removed. Tables whose rows share a file
        (``IN_FILE_OF``) are written together, with the latest rows given for each, the
        file once. One that cannot be written is retried at the next flush (newer rows
        replace its rows)."""
        with self._lock:
            files: dict[str, dict[str, list[tuple]]] = {}
            for name, rows in tables.items():
                self._snapshot_kept.pop(name, None)
                files.setdefault(self._stream_of.get(name, name), {})[name] = rows
            for file, given in files.items():
                members = self._sharing.get(file)
                if members:
                    self._snapshot_latest.update(given)
                    given = {m: self._snapshot_latest.get(m, []) for m in members}
                try:
                    if any(given.values()):
                        self._write_snapshot_file(file, given)
                    elif any(self.snapshot_rows[m] for m in given):
                        (self.proc_dir / f"{file}{SNAPSHOT_SUFFIX}").unlink(missing_ok=True)
                except OSError as err:
                    self._failed(err)
                    self._snapshot_kept.update(given)
                    continue
                for name, rows in given.items():
                    self.snapshot_rows[name] = len(rows)

    def close(self, extra: dict[str, Any] | None = None, join_timeout: float = 30) -> None:
        """Flush and write the closing record, within about 2 × ``join_timeout``: on a file
        system that stopped answering, a write never returns, and the server's stop or the
        process's exit (where this is called) must not wait for it. The last flush and the
        record are then left to a thread of their own, and rows a stuck flush holds are
        counted as dropped."""
        if self.closed:
            return
        self.closed = True
        self.stop(join_timeout)
        # (its errors are counted as the caller's were: the plugins' close is guarded)
        closing = threading.Thread(target=never_raise(self._close), args=(extra, join_timeout / 2),
                                   name="dask-correlate-close", daemon=True)
        closing.start()
        closing.join(join_timeout)

    def _close(self, extra: dict[str, Any] | None, stuck_after: float) -> None:
        if self._lock.acquire(timeout=stuck_after):
            try:
                self.flush()
            finally:
                self._lock.release()
        else:  # the flush thread is in a write that does not return
            for name in self.tables:
                if held := len(self.buffers[name]) // self.widths[name]:
                    self.dropped[name][STUCK] += held
            for name, buf, width in self._raw:
                self.dropped[name][STUCK] += len(buf) // width
                buf.clear()
        # what still cannot be written is lost with the process: counted, by reason
        for name, (columns, reason) in self.kept.items():
            self.dropped[name][reason] += len(columns[0])
        self.kept.clear()
        for name, rows in self._snapshot_kept.items():
            self.dropped[name]["snapshot not written"] += len(rows)
        for name, buf, width in self._raw:  # left by a hook that failed
            if len(buf) >= width:
                self.dropped[name]["not flushed (hook error)"] += len(buf) // width
        closing = {
            "closed_ns": time.time_ns(),
            "rows": {n: w + self.snapshot_rows[n] for n, w in self.written.items()},
            "dropped": {n: dict(c) for n, c in self.dropped.items() if c},
            "write_errors": dict(self.write_errors),
            "first_write_error": self.first_write_error,
            "hook_errors": dict(ERRORS), **(extra or {})}
        folder, self._dir_fd = self._dir_fd, None
        try:
            close_proc_json(self.proc_dir, closing, folder)
        finally:
            if folder is not None:
                os.close(folder)


#: the reason rows are dropped when the flush thread never came back from a write
STUCK = "not flushed (a write into the run folder did not return)"


def close_proc_json(proc_dir: Path, closing: dict[str, Any], folder: int | None = None
                    ) -> None:
    """Add the closing record (``closing``: rows, drops per table and reason, …) to the
    process's proc.json, as its ``closed`` field: a new proc.json renamed into place, or, where
    that cannot be written (a full folder, its write permission removed, the folder moved
    away: through ``folder``, its open descriptor), into the bytes proc.json reserved at start
    (``proc_json``). There the record is written after proc.json's object, then the object's
    closing brace turned into a comma (one byte): a process killed in between leaves proc.json's
    object whole, followed by bytes that readers ignore."""
    path = proc_dir / PROC_JSON
    fd = None
    try:
        fd = (os.open(PROC_JSON, os.O_RDWR, dir_fd=folder) if folder is not None
              else os.open(path, os.O_RDWR))
        text = os.pread(fd, os.fstat(fd).st_size, 0)
    except OSError:
        text = b""
    try:
        head = text.rstrip()
        try:
            info = json.loads(head)
        except ValueError:
            info = None
        info = info if isinstance(info, dict) else {}
        try:
            write_json_atomic(path, {**info, CLOSED_FIELD: closing})
            return
        except OSError:
            if fd is None or not info or not head.endswith(b"}"):
                raise
        rest = (b'\n "' + CLOSED_FIELD.encode() + b'": '
                + json.dumps(closing, indent=1, sort_keys=True, default=str).encode() + b"\n}")
        if len(head) + len(rest) > len(text):
            raise OSError(errno.ENOSPC, "the closing record does not fit the bytes proc.json "
                          "reserved", str(path))
        os.pwrite(fd, rest, len(head))
        os.pwrite(fd, b",", len(head) - 1)
    finally:
        if fd is not None:
            os.close(fd)


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


#: writer folders taken in this process (several workers may run in one: processes=False)
_CLAIMED: set[Path] = set()
_claim_lock = threading.Lock()


def stop_with(server: Any, sink: ProcessSink) -> None:
    """Stop ``sink``'s flush thread when the Dask server stops (``Server.stop``, also called
    by ``close``), after one last flush, and stop watching the server's threads for stalls: a
    server stopped and never closed leaves no thread behind."""
    orig = server.stop

    def stop(*args: Any, **kwargs: Any) -> Any:
        try:
            watchdog.release(str(server.address))
            if not sink.closed:
                sink.stop()
                sink.flush()
        except Exception as err:  # noqa: BLE001 - never fail the server's stop
            from collectors.guard import record

            record(err, "stop_with")
        finally:
            server.stop = orig
        return orig(*args, **kwargs)

    server.stop = stop


def process_dir(run_dir: Path, role: str, host: str, pid: int) -> Path:
    """This writer's folder, created: ``<role>-<host>-<pid>``, or ``….2``, ``….3`` when that
    one is taken, so that no writer appends to or overwrites another's streams. Taken means by
    another writer of this process (several workers may run in one: processes=False), or on
    disk by an earlier process of the run: pids are reused on a long job, and a restarted
    worker or scheduler can get the pid an earlier one had. The folder is claimed by creating
    it (``mkdir`` fails for all but one of several processes racing for a name). Where it
    cannot be created at all (a read-only or full run folder) the name is returned unclaimed,
    and the sink's own ``mkdir`` fails as it would have."""
    base = run_dir / "procs" / f"{role}-{host}-{pid}"
    with _claim_lock:
        try:
            base.parent.mkdir(parents=True, exist_ok=True)
            creatable = True
        except OSError:  # (FileExistsError too: a file named procs; nothing can be created)
            creatable = False
        path, n = base, 1
        while True:
            if path not in _CLAIMED:
                if not creatable:
                    break
                try:
                    path.mkdir()
                    break
                except FileExistsError:
                    pass
                except OSError:
                    break
            n += 1
            path = base.with_name(f"{base.name}.{n}")
        _CLAIMED.add(path)
    return path


#: overrides the host name the collectors record (tests simulating two hosts on one machine,
#: or containers whose host name differs from the node's); Darshan still records its own
HOST_VARIABLE = "DASK_CORRELATE_HOST"


def hostname() -> str:
    """Short host name, as Darshan records it (or ``$DASK_CORRELATE_HOST``)."""
    import socket

    return os.environ.get(HOST_VARIABLE) or socket.gethostname().split(".", 1)[0]


def proc_json(path: Path, **fields: Any) -> None:
    """The process's proc.json, followed by ``CLOSING_RESERVE`` spaces: room for its closing
    record (``close_proc_json``) in a folder full by then."""
    from correlate.schema import RUN_FORMAT_VERSION

    write_json_atomic(path / PROC_JSON, {
        "format_version": RUN_FORMAT_VERSION, "pid": os.getpid(), "host": hostname(),
        "started_ns": time.time_ns(), "anchor_time_ns": time.time_ns(),
        "anchor_perf_counter_ns": time.perf_counter_ns(), **fields}, pad=CLOSING_RESERVE)


def closing_record(proc_dir: Path) -> dict[str, Any] | None:
    """The closing record of the process of ``proc_dir`` (None: it did not close cleanly):
    proc.json's ``closed`` field, or closed.json, which older collectors wrote (tests, tools;
    ``correlate`` checks it field by field)."""
    try:
        text = (proc_dir / PROC_JSON).read_text().lstrip()
        info = json.JSONDecoder().raw_decode(text)[0]
        if isinstance(info, dict) and isinstance(info.get(CLOSED_FIELD), dict):
            return info[CLOSED_FIELD]
    except (OSError, ValueError):
        pass
    try:
        closed = json.loads((proc_dir / CLOSED_JSON).read_text())
    except (OSError, ValueError):
        return None
    return closed if isinstance(closed, dict) else None
