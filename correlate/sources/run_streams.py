"""Run format 3's tables: one Arrow IPC stream per table and process, text as string ids.

A stream (``correlate.schema.run``) is read up to its last complete message: the framing is
walked first (continuation marker, metadata length, the Message's body length), so a process
killed while it appended leaves every earlier batch readable, and its torn tail is measured
(bytes, and rows where the cut batch's header survived) to be counted as rejected. The string
ids of all processes are turned back into text at once (``decode``): each process's distinct
texts are laid end to end (``stream_strings.Lookup``) and an id is looked up by position, so a
thousand process folders cost two gathers per column, not a join per process.
"""

from __future__ import annotations

import io
import mmap
import os
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.ipc  # noqa: F401 (pa.ipc)

from correlate.schema import TABLES, Table
from correlate.schema.run import (
    CARRIED,
    DETAILS,
    PAIR_NULL,
    PAIR_SEP,
    PAIRS,
    SNAPSHOT_SUFFIX,
    STREAM_SUFFIX,
    STRING_IDS,
    STRINGS,
    stored_columns,
)
from correlate.sources.stream_strings import compact

if TYPE_CHECKING:
    from correlate.sources.stream_strings import Lookup

_CONTINUATION = 0xFFFFFFFF
_I32, _U32, _U16, _I64 = (struct.Struct(f).unpack_from for f in ("<i", "<I", "<H", "<q"))
_PREFIX = struct.Struct("<Ii").unpack_from
_SCHEMA, _RECORD_BATCH = 1, 3  # MessageHeader
#: a stream's bytes as read, or mapped (``row_counts`` walks the framing of a mapped file)
Bytes = bytes | mmap.mmap


@dataclass(frozen=True)
class Framing:
    """What walking a stream's messages found."""

    good: int  # bytes of complete messages (the schema and whole batches)
    batches: list[tuple[int, int, int]]  # (start, end, rows) of each complete record batch
    torn_bytes: int  # bytes after them
    torn_rows: int | None  # rows of the batch cut short, where its header survived
    problem: str | None = None  # why the tail is not a batch being written (None: it is)


def _field(meta: Bytes, table: int, slot: int, end: int) -> int:
    """Position of a FlatBuffer table's field (0: absent); ``table`` and the result are
    positions in ``meta``, whose message metadata ends at ``end`` (read past it: IndexError)."""
    vtable = table - _I32(meta, table)[0]
    if vtable < 0 or vtable + 2 > end:
        raise IndexError("vtable outside the message")
    size = _U16(meta, vtable)[0]
    if 4 + 2 * slot >= size:
        return 0
    if vtable + 6 + 2 * slot > end:
        raise IndexError("vtable outside the message")
    return _U16(meta, vtable + 4 + 2 * slot)[0]


def _within(at: int, size: int, end: int) -> int:
    if at < 0 or at + size > end:
        raise IndexError("field outside the message")
    return at


def _message(meta: Bytes, start: int = 0, end: int | None = None
             ) -> tuple[int, int, int | None]:
    """(header type, body length, rows of a record batch) of a Message's metadata: the bytes
    of ``meta`` from ``start`` to ``end`` (read in place: a stream's messages are not copied
    out one by one; FlatBuffer offsets count from ``start``)."""
    end = len(meta) if end is None else end
    root = start + _U32(meta, _within(start, 4, end))[0]
    at = _field(meta, _within(root, 4, end), 1, end)
    kind = meta[_within(root + at, 1, end)] if at else 0
    at = _field(meta, root, 3, end)
    body = _I64(meta, _within(root + at, 8, end))[0] if at else 0
    rows = None
    at = _field(meta, root, 2, end)
    if kind == _RECORD_BATCH and at:
        header = root + at + _U32(meta, _within(root + at, 4, end))[0]
        at = _field(meta, _within(header, 4, end), 0, end)
        rows = _I64(meta, _within(header + at, 8, end))[0] if at else 0
    return kind, body, rows


def framing(data: Bytes) -> Framing:
    size, at = len(data), 0
    batches: list[tuple[int, int, int]] = []
    while at < size:
        if at + 8 > size:
            return Framing(at, batches, size - at, None)
        marker, length = _PREFIX(data, at)
        if marker != _CONTINUATION or length < 0:
            return Framing(at, batches, size - at, None, "not an Arrow message")
        if length == 0:  # end-of-stream marker
            return Framing(at, batches, size - at - 8, None) if at + 8 < size else Framing(
                size, batches, 0, None)
        end = at + 8 + length
        if end > size:
            return Framing(at, batches, size - at, None)
        try:
            kind, body, rows = _message(data, at + 8, end)
        except (struct.error, IndexError):
            return Framing(at, batches, size - at, None, "unreadable message header")
        if kind != (_SCHEMA if at == 0 else _RECORD_BATCH) or body < 0:
            return Framing(at, batches, size - at, None, "unexpected message")
        if end + body > size:
            return Framing(at, batches, size - at, rows)
        if kind == _RECORD_BATCH:
            batches.append((at, end + body, rows or 0))
        at = end + body
    return Framing(at, batches, 0, None)


@dataclass
class StreamRead:
    frame: pl.DataFrame | None  # None: nothing readable (see rejects)
    rejects: list[tuple[str, int]]  # (reason, rows or 1)


def torn(f: Framing) -> list[tuple[str, int]]:
    """The reject of a stream's torn tail (none when it ends with a complete batch)."""
    if not f.torn_bytes:
        return []
    what = (f"{f.torn_rows} row(s)" if f.torn_rows is not None
            else "its row count was cut off with its header")
    why = f" ({f.problem})" if f.problem else ""
    return [(f"torn tail: {f.torn_bytes} byte(s) after the last complete batch{why}, a batch "
             f"cut short when the process was killed or a write failed ({what})",
             f.torn_rows or 1)]


def _batches(data: bytes, f: Framing, at: int = 0
             ) -> tuple[pl.DataFrame | None, list[tuple[str, int]]]:
    """The complete batches of one stream, each read alone where they do not read together
    (``at``: what to add to a position in ``data`` to give its byte in the file)."""
    try:
        return pl.read_ipc_stream(io.BytesIO(data[:f.good])), []
    except (OSError, pl.exceptions.PolarsError):
        pass
    head, frames, rejects = data[:f.batches[0][0]], [], []
    for start, end, _rows in f.batches:
        try:
            frames.append(pl.read_ipc_stream(io.BytesIO(head + data[start:end])))
        except (OSError, pl.exceptions.PolarsError) as err:
            rejects.append((f"unreadable record batch at byte {start + at}: "
                            f"{str(err).splitlines()[0] if str(err) else type(err).__name__}", 1))
    return (pl.concat(frames) if frames else None), rejects


def _read_into(fd: int, buffer: memoryview, at: int) -> bool:
    """Fill ``buffer`` from byte ``at`` of ``fd``; False: the file ended first."""
    while buffer.nbytes:
        n = os.preadv(fd, [buffer], at)
        if not n:  # (cut short since it was framed)
            return False
        buffer, at = buffer[n:], at + n
    return True


def _slice(path: str, f: Framing, first: int, last: int) -> tuple[bytes, bytearray | None]:
    """A stream's schema message, and its batches ``first`` to ``last`` (excluded) as read
    (None: the file ended first, cut since it was framed). OSError: it cannot be opened."""
    head, start, end = f.batches[0][0], f.batches[first][0], f.batches[last - 1][1]
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        schema, body = bytearray(head), bytearray(end - start)
        whole = _read_into(fd, memoryview(schema), 0) and _read_into(fd, memoryview(body), start)
    finally:
        os.close(fd)
    return bytes(schema), (body if whole else None)


def _arrow(data: bytes | bytearray, rows: int, checked: bool = False) -> pl.DataFrame | None:
    """Record batches after their schema, read with pyarrow over the bytes as read (no copy
    of them), the whole checked (``validate``: a damaged batch can decode without an error;
    ``checked``: these bytes were, when read before), then handed to polars; None where they
    do not read as ``rows`` rows."""
    try:
        table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
        table.validate(full=not checked)
        frame = pl.from_arrow(table)
    except (OSError, ValueError, pa.ArrowException, pl.exceptions.PolarsError):
        return None
    return frame if isinstance(frame, pl.DataFrame) and frame.height == rows else None


def _decoded(head: bytes, body: bytearray | None, f: Framing, first: int, last: int
             ) -> tuple[pl.DataFrame | None, list[tuple[str, int]]]:
    """Batches ``first`` to ``last`` of a stream (``_slice``), each read alone where they do
    not read together (those that do not read: rejects)."""
    batches = f.batches[first:last]
    if body is not None and (frame := _arrow(head + body, sum(r for *_, r in batches))
                             ) is not None:
        return frame, []
    data = head + (body or b"")
    shift = len(head) - f.batches[first][0]
    return _batches(data, Framing(len(data), [(s + shift, e + shift, r) for s, e, r in batches],
                                  0, None), -shift)


def chunks(streams: list[tuple[int, str, Framing]], size: int,
           rejects: list[tuple[str, str, int]], table: Table, by_bytes: bool = False,
           checked: bool = False) -> Iterator[pl.DataFrame]:
    """The complete batches of many processes' streams of one table (``(index, path,
    framing)``), read about ``size`` rows (or bytes) of them at a time, with each row's
    ``_proc`` index: a table bigger than memory is read a chunk at a time. A batch that does
    not read, and a stream that cannot be read as ``table`` (then the rest of it too), are
    rejects (path, reason, rows or 1). ``checked``: the same batches were read before without
    a reject (an Arrow stream's complete batches are never written again), so their values
    are not checked again."""
    plan: list[list[tuple[int, str, Framing, int, int]]] = [[]]
    held = 0
    for index, path, f in streams:
        for i, (start, end, rows) in enumerate(f.batches):
            weight = end - start if by_bytes else rows
            if held and held + weight > size:
                plan.append([])
                held = 0
            group = plan[-1]
            if group and group[-1][0] == index and group[-1][4] == i:
                group[-1] = (*group[-1][:4], i + 1)
            else:
                group.append((index, path, f, i, i + 1))
            held += weight
    skipped: set[int] = set()
    for group in plan:
        frames = []
        read: dict[bytes, list[tuple[int, str, Framing, int, int, bytearray | None]]] = {}
        for index, path, f, first, last in group:
            if index in skipped:
                continue
            try:
                head, body = _slice(path, f, first, last)
            except OSError as err:
                rejects.append((path, f"unreadable stream: {err.strerror or err}", 1))
                skipped.add(index)
                continue
            read.setdefault(head, []).append((index, path, f, first, last, body))
        for head, slices in read.items():  # (streams of one schema read as one)
            counts = [sum(r for *_, r in f.batches[first:last])
                      for _i, _p, f, first, last, _b in slices]
            frame = (None if any(b is None for *_, b in slices) else
                     _arrow(b"".join([head, *(b for *_, b in slices if b is not None)]),
                            sum(counts), checked))
            if frame is not None and mistyped(frame, table) is None:
                procs = np.repeat(np.array([i for i, *_ in slices], np.int32), counts)
                frames.append(frame.with_columns(pl.Series("_proc", procs, pl.Int32)))
                continue
            for index, path, f, first, last, body in slices:  # (to find the damaged ones)
                one, bad = _decoded(head, body, f, first, last)
                rejects += [(path, reason, n) for reason, n in bad]
                problem = None if one is None else mistyped(one, table)
                if problem is not None:  # (the stream's rows from here on)
                    rejects.append((path, problem, sum(r for *_, r in f.batches[first:])))
                    skipped.add(index)
                elif one is not None:
                    frames.append(one.with_columns(_proc=pl.lit(index, pl.Int32)))
        if frames:
            yield pl.concat(frames, how="diagonal_relaxed")


def read_stream(path: Path) -> StreamRead:
    """Every complete record batch of a stream; the torn tail and any batch that does not
    decode as rejects."""
    try:
        data = path.read_bytes()
    except OSError as err:
        return StreamRead(None, [(f"unreadable stream: {err.strerror or err}", 1)])
    f = framing(data)
    if not f.batches:
        return StreamRead(None, torn(f))
    frame, rejects = _batches(data, f)
    return StreamRead(frame, torn(f) + rejects)


def framed(path: str) -> tuple[Framing, int]:
    """A stream's framing, walked over a memory map (its messages' headers read, not their
    bodies: the batches are read when their table is, ``chunks``), and its last write's
    time. OSError: it cannot be read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not st.st_size:
            return framing(b""), st.st_mtime_ns
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as data:
            return framing(data), st.st_mtime_ns
    except ValueError as err:  # (mmap: a file cut to nothing since the fstat)
        raise OSError(str(err)) from None
    finally:
        os.close(fd)


def read_bytes(path: str | Path, size: int | None = None) -> bytes:
    """The file's first ``size`` bytes (default: its size when opened: a file still being
    appended to is read as it was then; one cut short since reads short), with fewer system
    calls than ``open(path, "rb").read()`` (no buffered reader, no isatty, no second fstat and
    read to find the end): a run folder of a thousand processes has a thousand of them."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        left = os.fstat(fd).st_size if size is None else size
        chunks = []
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:  # (cut short since)
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_many(streams: list[tuple[int, str, Framing]], table: Table
              ) -> tuple[pl.DataFrame | None, list[tuple[str, str, int]]]:
    """The complete batches of many processes' streams of one table (``(index, path,
    framing)``), with each row's ``_proc`` index, and the rejects of batches that do not
    read and of streams that cannot be read as ``table`` (their rows): ``chunks`` in one
    chunk. The files are read now, one table's at a time (not all of a run's streams at
    once); streams written with the same schema are read as one, so a thousand process
    folders cost a read per table, not per file."""
    rejects: list[tuple[str, str, int]] = []
    frames = list(chunks(streams, sys.maxsize, rejects, table))
    return (frames[0] if frames else None), rejects


def files(proc_dir: Path, names: set[str], table: str) -> list[Path]:
    """A format-3 table's files in a process folder (``names``: the folder's entries)."""
    return [proc_dir / f"{table}{suffix}" for suffix in (STREAM_SUFFIX, SNAPSHOT_SUFFIX)
            if f"{table}{suffix}" in names]


def is_format3(names: set[str]) -> bool:
    return any(n.endswith((STREAM_SUFFIX, SNAPSHOT_SUFFIX)) for n in names)


def mistyped(frame: pl.DataFrame, table: Table) -> str | None:
    """Why ``frame`` (as stored) cannot be read as ``table``: a string-id column that does not
    hold integers, or another of the wrong kind."""
    from correlate.sources.run_parts import kind

    for name, dtype in stored_columns(table):
        found = frame.schema.get(name)
        if found is None:
            continue
        expected = "integer" if dtype == "id" else kind(table.column(name).polars_dtype())
        if kind(found) not in (expected, "null"):
            return f"column {name!r} is {found}, expected " + (
                "string ids" if dtype == "id" else dtype)
    return None


def decode(frame: pl.DataFrame, table: str, lookup: Lookup) -> tuple[pl.DataFrame, int]:
    """``frame`` (rows of many processes, ``_proc`` their index in ``lookup``) with
    its string-id columns as text (a pair's id as its two columns), and the number of rows
    with an id no text was written for."""
    pairs = {name: ab for name, ab in PAIRS.get(table, {}).items() if name in frame.columns}
    ids = [c for c in (*STRING_IDS.get(table, ()), *pairs) if c in frame.columns]
    if not ids or frame.is_empty():
        return frame.with_columns(pl.col(c).cast(pl.String) for c in ids), 0
    position, everything = _positions(lookup), lookup.texts
    plain = [c for c in ids if c not in pairs]
    coded = [c for c in plain if _declared(table, c) == pl.Categorical]
    at = frame.select(**{c: position(c) for c in plain})
    # (the text columns before the coded ones, in the order they always were)
    out = frame.with_columns(**{f"_text_{c}": _texts(at[c], everything)
                                for c in plain if c not in coded},
                             **{f"_text_{c}": lookup.categorical(at[c]) for c in coded})
    textless = [pl.col(c).is_not_null() & pl.col(f"_text_{c}").is_null() for c in plain]
    if pairs:
        at = frame.select(**{c: position(c) for c in pairs})
        for name, ab in pairs.items():
            first, second, none = _pair(at[name], everything,
                                        [_declared(table, c) for c in ab])
            out = out.with_columns(**{f"_a_{name}": first, f"_b_{name}": second})
            textless.append(pl.col(name).is_not_null() & pl.lit(none))
    lost = out.select(pl.any_horizontal(textless).sum()).item()
    out = out.drop(*ids).rename({f"_text_{c}": c for c in plain})
    for name, (a, b) in pairs.items():  # (at the end, in this order, as they always were)
        out = out.rename({f"_a_{name}": a, f"_b_{name}": b}).select(
            pl.exclude(a, b), pl.col(a), pl.col(b))
    return out, int(lost or 0)


def _texts(at: pl.Series, everything: pl.Series) -> pl.Series:
    """The texts at positions ``at`` of ``everything`` (null: none), in buffers of their own:
    a gather of ``everything`` hands back views into its buffers, and a column of a few rows
    (a worker's clock markers) would keep every text of the run (each task's key, each
    stimulus id) alive for as long as it lives."""
    known, rows = _distinct(at)
    return pl.concat([compact(everything.gather(known)),
                      pl.Series([None], dtype=pl.String)]).gather(rows)


def _distinct(at: pl.Series) -> tuple[pl.Series, pl.Series]:
    """The distinct positions of ``at`` (sorted), and each row's index among them (null: one
    past the last)."""
    known = at.drop_nulls().unique().sort()
    where = np.searchsorted(known.to_numpy(), at.fill_null(0).to_numpy())
    where[at.is_null().to_numpy()] = known.len()
    return known, pl.Series(where, dtype=pl.UInt32)


def _declared(table: str, column: str) -> pl.DataType:
    """The type ``table`` declares ``column`` to be once decoded (text unless it says
    otherwise: a column only run format 3 has, such as a carried one, is text)."""
    declared = TABLES[table]
    return declared.column(column).polars_dtype() if column in declared.names else pl.String()


def _pair(at: pl.Series, everything: pl.Series, dtypes: list[pl.DataType]
          ) -> tuple[pl.Series, pl.Series, pl.Series]:
    """A pair's two texts (as ``dtypes``), and whether it has no text, from its positions in
    ``everything`` (null: none): each distinct pair's text split once, not each row's (a few
    dozen pairs in millions of rows), and cast once: a Categorical column is gathered as its
    codes, never as a text per row."""
    known, rows = _distinct(at)  # (the null text after the others)
    texts = pl.concat([everything.gather(known), pl.Series([None], dtype=pl.String)])
    parts = texts.str.split_exact(PAIR_SEP, 1).struct.unnest()
    first, second = (pl.select(pl.when(p != PAIR_NULL).then(p)).to_series().cast(dtype)
                     .gather(rows)
                     for p, dtype in zip((parts["field_0"], parts["field_1"]), dtypes,
                                         strict=True))
    return first, second, texts.is_null().gather(rows)


def decoded_table(frame: pl.DataFrame, name: str, details: pl.DataFrame | None,
                  lookup: Lookup) -> tuple[pl.DataFrame, int, pl.Series | None]:
    """A format-3 table's rows (string ids, ``_proc``) decoded, its details (``DETAILS``, as
    ``details_prepared`` gives them, or those of them these rows may have; None: none) joined
    on first: the rows; how many rows have an id no text was written for; the ``_detail`` of
    each detail joined on (None: no details)."""
    matched = None
    if details is not None and name in DETAILS:
        frame, matched = details_joined(frame, name, details, lookup)
    frame, lost = decode(frame, name, lookup)
    return frame, lost, matched


def details_prepared(details: pl.DataFrame, name: str, lookup: Lookup
                     ) -> tuple[pl.DataFrame, int]:
    """The details of ``name``'s rows (``DETAILS``) as stored, ready to join on: each
    string-id column's text's position in ``lookup`` as ``_at_<column>``, one row per process
    and join columns (the first), numbered (``_detail``); and how many have an id no text was
    written for."""
    table, by = DETAILS[name]
    ids = [c for c in STRING_IDS.get(table.name, ()) if c in details.columns]
    at = _positions(lookup)
    out = details.with_columns(at(c).alias(f"_at_{c}") for c in ids)
    lost = out.select(pl.any_horizontal(pl.col(c).is_not_null() & pl.col(f"_at_{c}").is_null()
                                        for c in ids).sum()).item() if ids else 0
    keys = ["_proc", *(f"_at_{c}" if c in ids else c for c in by)]
    return (out.unique(keys, keep="first", maintain_order=True).with_row_index("_detail"),
            int(lost or 0))


def details_joined(frame: pl.DataFrame, name: str, details: pl.DataFrame,
                   lookup: Lookup) -> tuple[pl.DataFrame, pl.Series]:
    """A format-3 table's rows with their details (``DETAILS``) joined back on, per process,
    before ``frame`` is decoded: its rows as stored (string ids, ``_proc``) with ``details``
    (``details_prepared``) joined on, and the ``_detail`` of each detail joined; the same rows
    as joining on text. Not on the ids alone: a text may have two ids in a process (the
    collector's map of strings starts again past its bound; in a big scheduler most details
    name their key by another id than their transition). On their texts' positions in
    ``lookup``, where each of a process's texts is once (integers, gathered by the ids)."""
    table, by = DETAILS[name]
    ids = [c for c in by if f"_at_{c}" in details.columns]
    at = _positions(lookup)
    plain = ["_proc", *(c for c in by if c not in ids)]
    on = [*plain, *(f"_at_{c}" for c in ids)]
    pairs = frame.select(*plain, *(at(c).alias(f"_at_{c}") for c in ids)).with_row_index(
        "_row").join(details.select(*on).with_row_index("_pos"), on=on, how="inner")
    own = [c for c in table.names if c not in by]
    joined, _lost = decode(details.select(pl.col("_proc", *own).gather(pairs["_pos"])),
                           table.name, lookup)
    frame = frame.drop([c for c in own if c in frame.columns]).with_columns(
        pl.repeat(None, frame.height, dtype=joined.schema[c], eager=True).alias(c).scatter(
            pairs["_row"], joined[c]) for c in own)
    return frame, details["_detail"].gather(pairs["_pos"])


def _positions(lookup: Lookup) -> Callable[[str], pl.Expr]:
    """An id column's rows' positions in ``lookup``'s texts (null: no text was written for
    that id), by their process (``_proc``)."""
    lengths = lookup.lengths
    offsets = pl.Series([0, *lengths[:-1]], dtype=pl.Int64).cum_sum()
    proc = pl.col("_proc")
    base, size = (pl.lit(offsets).gather(proc),
                  pl.lit(pl.Series(lengths, dtype=pl.Int64)).gather(proc))

    def position(c: str) -> pl.Expr:
        i = pl.col(c).cast(pl.Int64)
        return pl.lit(lookup.at).gather(pl.when((i >= 0) & (i < size)).then(base + i))

    return position


def carried(frame: pl.DataFrame, name: str) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """A format-3 table's rows without the rows of another table they carry (``CARRIED``),
    and those rows with the recording process (``PROCESS_COLUMNS``), or None when there are
    none."""
    if name not in CARRIED:
        return frame, None
    _table, columns = CARRIED[name]
    present = {own: c for own, c in columns.items() if c in frame.columns}
    if not present:
        return frame, None
    rows = frame.filter(pl.any_horizontal(pl.col(c).is_not_null() for c in present.values()))
    out = rows.select(*(pl.col(c).alias(o) for o, c in present.items()),
                      *(c for c in PROCESS_COLUMNS if c in frame.columns))
    return frame.drop(present.values()), (out if out.height else None)


#: the columns the reader adds to every row: its process (``_proc`` before it is resolved)
PROCESS_COLUMNS = ("_proc", "host", "pid", "worker")


__all__ = ["STRINGS", "StreamRead", "chunks", "decode", "decoded_table", "details_joined",
           "details_prepared", "files", "framed", "framing", "is_format3", "mistyped",
           "read_many", "read_stream", "torn"]
