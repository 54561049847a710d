"""Run format 3's tables: one Arrow IPC stream per table and process, text as string ids.

A stream (``correlate.schema.run``) is read up to its last complete message: the framing is
walked first (continuation marker, metadata length, the Message's body length), so a process
killed while it appended leaves every earlier batch readable, and its torn tail is measured
(bytes, and rows where the cut batch's header survived) to be counted as rejected. The string
ids of all processes are turned back into text at once (``decode``): each process's strings are
laid end to end and an id is looked up by position, so a thousand process folders cost one
gather per column, not a join per process.
"""

from __future__ import annotations

import io
import mmap
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from correlate.frames.scalars import integer
from correlate.schema import Table
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


def _batches(data: bytes, f: Framing) -> tuple[pl.DataFrame | None, list[tuple[str, int]]]:
    """The complete batches of one stream, each read alone where they do not read together."""
    try:
        return pl.read_ipc_stream(io.BytesIO(data[:f.good])), []
    except (OSError, pl.exceptions.PolarsError):
        pass
    head, frames, rejects = data[:f.batches[0][0]], [], []
    for start, end, _rows in f.batches:
        try:
            frames.append(pl.read_ipc_stream(io.BytesIO(head + data[start:end])))
        except (OSError, pl.exceptions.PolarsError) as err:
            rejects.append((f"unreadable record batch at byte {start}: "
                            f"{str(err).splitlines()[0] if str(err) else type(err).__name__}", 1))
    return (pl.concat(frames) if frames else None), rejects


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


def read_many(streams: list[tuple[int, str, bytes, Framing]]
              ) -> tuple[pl.DataFrame | None, list[tuple[str, str, int]]]:
    """The complete batches of many processes' streams of one table (``(index, path, bytes,
    framing)``), with each row's ``_proc`` index, and the rejects of batches that do not
    read. Streams written with the same schema are read as one (their batches, contiguous in
    each stream, laid after one schema message, copied once): a thousand process folders
    cost a read per table, not per file. The frame is in polars' own memory, so the streams'
    bytes go once read (read in place, the text decoded from the strings would keep them
    all, ids and offsets included, for the rest of the run)."""
    groups: dict[bytes, list[tuple[int, str, bytes, Framing]]] = {}
    for item in streams:
        _i, _p, data, f = item
        if f.batches:
            groups.setdefault(data[:f.batches[0][0]], []).append(item)
    frames, rejects = [], []
    for head, members in groups.items():
        rows = [sum(r for _s, _e, r in f.batches) for _i, _p, _d, f in members]
        try:
            frame = pl.read_ipc_stream(io.BytesIO(b"".join([head, *(
                memoryview(data)[f.batches[0][0]:f.batches[-1][1]]
                for _i, _p, data, f in members)])))
            if frame.height != sum(rows):
                raise pl.exceptions.ComputeError("row counts differ from the batch headers")
            procs = np.repeat(np.array([i for i, *_ in members], np.int32), rows)
            frames.append(frame.with_columns(pl.Series("_proc", procs, pl.Int32)))
            continue
        except (OSError, pl.exceptions.PolarsError):
            pass
        for index, path, data, f in members:  # one at a time, to find the damaged ones
            one, bad = _batches(data, f)
            rejects += [(path, reason, n) for reason, n in bad]
            if one is not None:
                frames.append(one.with_columns(_proc=pl.lit(index, pl.Int32)))
    return (pl.concat(frames, how="diagonal_relaxed") if frames else None), rejects


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


def texts(strings: pl.DataFrame | None) -> pl.Series:
    """A process's strings as a Series whose i-th value is id i's text (null: not written)."""
    if strings is None or strings.is_empty():
        return pl.Series("text", [], pl.String)
    strings = strings.select(pl.col("id").cast(pl.Int64), pl.col("text").cast(pl.String))
    n = strings.height
    ids = strings["id"]
    if ids.min() == 0 and ids.max() == n - 1 and ids.is_sorted() and ids.n_unique() == n:
        return strings["text"]
    full = pl.DataFrame({"id": pl.int_range(0, (integer(ids.max()) or 0) + 1, eager=True)})
    return full.join(strings.unique("id", keep="first"), on="id", how="left").sort("id")["text"]


def lookup(strings: pl.DataFrame | None, processes: int) -> tuple[pl.Series, list[int]]:
    """Every process's strings (``_proc``, id, text) laid end to end, and how many each has:
    process p's id i is at ``sum(lengths[:p]) + i``."""
    if strings is None or strings.is_empty():
        return pl.Series("text", [], pl.String), [0] * processes
    strings = strings.with_columns(pl.col("id").cast(pl.Int64))
    dense = strings.select((pl.col("id") == pl.int_range(pl.len()).over("_proc")).all()).item()
    counts = dict(strings.group_by("_proc").len().iter_rows())
    if dense and strings["_proc"].is_sorted():
        return strings["text"].cast(pl.String), [counts.get(p, 0) for p in range(processes)]
    each = [texts(strings.filter(pl.col("_proc") == p)) if p in counts
            else pl.Series("text", [], pl.String) for p in range(processes)]
    return pl.concat(each), [s.len() for s in each]


def decode(frame: pl.DataFrame, table: str, everything: pl.Series, lengths: list[int]
           ) -> tuple[pl.DataFrame, int]:
    """``frame`` (rows of many processes, ``_proc`` their index in ``lookup``'s strings) with
    its string-id columns as text (a pair's id as its two columns), and the number of rows
    with an id no text was written for."""
    pairs = {name: ab for name, ab in PAIRS.get(table, {}).items() if name in frame.columns}
    ids = [c for c in (*STRING_IDS.get(table, ()), *pairs) if c in frame.columns]
    if not ids or frame.is_empty():
        return frame.with_columns(pl.col(c).cast(pl.String) for c in ids), 0
    position = _positions(lengths)
    plain = [c for c in ids if c not in pairs]
    out = frame.with_columns(**{f"_text_{c}": pl.lit(everything).gather(position(c))
                                for c in plain})
    textless = [pl.col(c).is_not_null() & pl.col(f"_text_{c}").is_null() for c in plain]
    if pairs:
        at = frame.select(**{c: position(c) for c in pairs})
        for name in pairs:
            first, second, none = _pair(at[name], everything)
            out = out.with_columns(**{f"_a_{name}": first, f"_b_{name}": second})
            textless.append(pl.col(name).is_not_null() & pl.lit(none))
    lost = out.select(pl.any_horizontal(textless).sum()).item()
    out = out.drop(*ids).rename({f"_text_{c}": c for c in plain})
    for name, (a, b) in pairs.items():  # (at the end, in this order, as they always were)
        out = out.rename({f"_a_{name}": a, f"_b_{name}": b}).select(
            pl.exclude(a, b), pl.col(a), pl.col(b))
    return out, int(lost or 0)


def _pair(at: pl.Series, everything: pl.Series) -> tuple[pl.Series, pl.Series, pl.Series]:
    """A pair's two texts, and whether it has no text, from its positions in ``everything``
    (null: none): each distinct pair's text split once, not each row's (a few dozen pairs in
    millions of rows)."""
    known = at.drop_nulls().unique().sort()
    texts = pl.concat([everything.gather(known), pl.Series([None], dtype=pl.String)])
    where = np.searchsorted(known.to_numpy(), at.fill_null(0).to_numpy())
    where[at.is_null().to_numpy()] = known.len()  # (the null text after the others)
    rows = pl.Series(where, dtype=pl.UInt32)
    parts = texts.str.split_exact(PAIR_SEP, 1).struct.unnest()
    first, second = (pl.select(pl.when(p != PAIR_NULL).then(p)).to_series().gather(rows)
                     for p in (parts["field_0"], parts["field_1"]))
    return first, second, texts.is_null().gather(rows)


def decoded_table(frame: pl.DataFrame, name: str, details: pl.DataFrame | None,
                  everything: pl.Series, lengths: list[int]) -> tuple[pl.DataFrame, int, int, int]:
    """A format-3 table's rows (string ids, ``_proc``) decoded, its details' rows as stored
    (``DETAILS``; None: none) joined on first: the rows; how many rows and how many details
    have an id no text was written for; how many details no row has."""
    lost_details = orphans = 0
    if details is not None and name in DETAILS:
        table, by = DETAILS[name]
        ids = [c for c in by if c in STRING_IDS.get(table.name, ()) and c in details.columns]
        details, lost_details = decode(details.with_columns(
            pl.col(c).alias(f"_id_{c}") for c in ids), table.name, everything, lengths)
        frame, orphans = details_joined(frame, name, details, everything, lengths)
    frame, lost = decode(frame, name, everything, lengths)
    return frame, lost, lost_details, orphans


def details_joined(frame: pl.DataFrame, name: str, details: pl.DataFrame,
                   everything: pl.Series, lengths: list[int]) -> tuple[pl.DataFrame, int]:
    """A format-3 table's rows with their details (``DETAILS``) joined back on, per process,
    before ``frame`` is decoded: its rows as stored (string ids, ``_proc``) with ``details``
    (decoded, each string-id column of the join kept as ``_id_<column>`` too) joined on, and
    the number of details no row has; the same rows as joining on text. Not on the ids
    alone: a text may have two ids in a process (the collector's map of strings starts again
    past its bound; in a big scheduler most details name their key by another id than their
    transition). So on the texts' hashes (integers, gathered by the ids), then pairs of
    different ids kept only where their texts are equal (a hash shared by two texts pairs rows
    that are then dropped)."""
    table, by = DETAILS[name]
    keys = ["_proc", *by]
    details = details.unique(keys, keep="first", maintain_order=True)
    ids = [c for c in by if f"_id_{c}" in details.columns]
    hashes = pl.select(pl.when(pl.lit(everything).is_not_null())
                       .then(pl.lit(everything).hash())).to_series()
    at = _positions(lengths)
    plain = [c for c in keys if c not in ids]
    pairs = frame.select(*plain, *(at(c).alias(f"_at_{c}") for c in ids)).with_columns(
        pl.lit(hashes).gather(pl.col(f"_at_{c}")).alias(f"_h_{c}") for c in ids
    ).with_row_index("_row").join(
        details.select(*plain, *(at(f"_id_{c}").alias(f"_at_{c}") for c in ids))
        .with_columns(pl.lit(hashes).gather(pl.col(f"_at_{c}")).alias(f"_h_{c}") for c in ids)
        .with_row_index("_detail"), on=[*plain, *(f"_h_{c}" for c in ids)], how="inner")
    pairs = pairs.filter(*((pl.col(f"_at_{c}") == pl.col(f"_at_{c}_right"))
                           | (pl.lit(everything).gather(pl.col(f"_at_{c}"))
                              == pl.lit(everything).gather(pl.col(f"_at_{c}_right")))
                           for c in ids))
    own = [c for c in table.names if c not in by]
    frame = frame.drop([c for c in own if c in frame.columns]).with_columns(
        pl.repeat(None, frame.height, dtype=details.schema[c], eager=True).alias(c).scatter(
            pairs["_row"], details[c].gather(pairs["_detail"])) for c in own)
    return frame, details.height - pairs["_detail"].n_unique()


def _positions(lengths: list[int]) -> Callable[[str], pl.Expr]:
    """An id column's rows' positions in ``lookup``'s strings (null: no text was written for
    that id), by their process (``_proc``)."""
    offsets = pl.Series([0, *lengths[:-1]], dtype=pl.Int64).cum_sum()
    proc = pl.col("_proc")
    base, size = (pl.lit(offsets).gather(proc),
                  pl.lit(pl.Series(lengths, dtype=pl.Int64)).gather(proc))

    def position(c: str) -> pl.Expr:
        i = pl.col(c).cast(pl.Int64)
        return pl.when((i >= 0) & (i < size)).then(base + i)

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


__all__ = ["STRINGS", "StreamRead", "decode", "decoded_table", "details_joined", "files",
           "framing", "is_format3", "mistyped", "lookup", "read_many", "read_stream", "texts",
           "torn"]
