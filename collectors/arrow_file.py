"""Arrow IPC written by the standard library alone: the schema and record batch messages of
a stream (``schema_message``, ``batch_message``), and a file of one batch (``ipc_file``), of
columns of 64- and 32-bit integers, doubles and UTF-8 text, uncompressed.

The collectors' streams and snapshots are made of them: any Arrow reader (polars, pyarrow,
DuckDB) reads them without parsing, and writing one imports nothing into the Dask process
(pyarrow and numpy would add their memory and start-up to every scheduler and worker). The
format is Arrow's columnar IPC format (arrow.apache.org/docs/format/Columnar.html), version 5; its
metadata are FlatBuffers, which ``_Builder`` writes the way the FlatBuffers library does
(back to front, every offset pointing forward).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import is_not

MAGIC = b"ARROW1"
_V5 = 4  # MetadataVersion.V5
_SCHEMA, _RECORD_BATCH = 1, 3  # MessageHeader
_INT, _FLOAT, _UTF8 = 2, 3, 5  # Type
#: column kinds: name -> (Type, array typecode of the values)
KINDS = {"int64": (_INT, "q"), "uint64": (_INT, "Q"), "int32": (_INT, "i"),
         "double": (_FLOAT, "d"), "utf8": (_UTF8, "")}
_ZERO = {None: 0}.get
_EMPTY = {None: ""}.get
_BIT_CHARS = bytes.maketrans(b"\x00\x01", b"01")


class _Builder:
    """A FlatBuffer built back to front: ``len(self.buf)`` after writing an object is its
    position counted from the end, what offsets are computed from."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def _pad(self, align: int, extra: int = 0) -> None:
        self.buf[0:0] = bytes((-(len(self.buf) + extra)) % align)

    def _put(self, fmt: str, value: int) -> int:
        size = struct.calcsize(fmt)
        self._pad(size)
        self.buf[0:0] = struct.pack("<" + fmt, value)
        return len(self.buf)

    def _offset(self, target: int) -> int:
        self._pad(4)
        return self._put("I", len(self.buf) + 4 - target)

    def string(self, text: str) -> int:
        data = text.encode()
        self._pad(4, len(data) + 1)
        self.buf[0:0] = data + b"\0"
        return self._put("I", len(data))

    def offsets(self, targets: Sequence[int]) -> int:
        self._pad(4, 4 * len(targets))
        for target in reversed(targets):
            self._offset(target)
        return self._put("I", len(targets))

    def structs(self, packed: bytes, count: int) -> int:
        self._pad(8, len(packed))
        self.buf[0:0] = packed
        return self._put("I", count)

    def table(self, scalars: Sequence[tuple[int, str, int]] = (),
              refs: Sequence[tuple[int, int]] = ()) -> int:
        """A table of ``(slot, struct format, value)`` scalars and ``(slot, object)``
        offsets."""
        start = len(self.buf)
        at = {}
        for slot, fmt, value in sorted(scalars, key=lambda s: -struct.calcsize(s[1])):
            at[slot] = self._put(fmt, value)
        for slot, target in refs:
            at[slot] = self._offset(target)
        table = self._put("i", 0)
        slots = max(at, default=-1) + 1
        entries = [table - at[s] if s in at else 0 for s in range(slots)]
        vtable = struct.pack(f"<HH{slots}H", 4 + 2 * slots, table - start, *entries)
        self._pad(2, len(vtable))
        self.buf[0:0] = vtable
        struct.pack_into("<i", self.buf, len(self.buf) - table, len(self.buf) - table)
        return table

    def finish(self, root: int) -> bytes:
        self._pad(8, 4)
        self._offset(root)
        return bytes(self.buf)


def _schema(b: _Builder, names: Sequence[str], kinds: Sequence[str]) -> int:
    fields = []
    for name, kind in zip(names, kinds, strict=True):
        type_id = KINDS[kind][0]
        if type_id == _INT:
            width = 8 * array(KINDS[kind][1]).itemsize
            typ = b.table([(0, "i", width), (1, "B", kind != "uint64")])
        elif type_id == _FLOAT:
            typ = b.table([(0, "h", 2)])  # Precision.DOUBLE
        else:
            typ = b.table()
        children = b.offsets([])
        label = b.string(name)
        fields.append(b.table([(1, "B", 1), (2, "B", type_id)],
                              [(0, label), (3, typ), (5, children)]))
    vector = b.offsets(fields)
    return b.table([(0, "h", 0)], [(1, vector)])  # little-endian


def _message(header_type: int, build, body_length: int) -> bytes:  # noqa: ANN001
    """An encapsulated message: continuation, metadata length, metadata padded to 8 bytes."""
    b = _Builder()
    header = build(b)
    meta = b.finish(b.table([(0, "h", _V5), (1, "B", header_type), (3, "q", body_length)],
                            [(2, header)]))
    meta += bytes(-len(meta) % 8)
    return struct.pack("<Ii", 0xFFFFFFFF, len(meta)) + meta


def _column(values: Sequence, kind: str) -> tuple[int, list[bytes]]:
    """(null count, buffers) of one column: validity (empty without nulls), [offsets], data."""
    n = len(values)
    if kind != "utf8":
        try:  # most columns hold no null: no scan for one before the conversion
            return 0, [b"", array(KINDS[kind][1], values).tobytes()]
        except TypeError:
            pass  # a null (or a value of another type: raised again below)
    nulls = values.count(None)
    validity = b""
    if nulls:
        bits = bytes(map(is_not, values, repeat(None))).translate(_BIT_CHARS)[::-1]
        validity = int(bits, 2).to_bytes((n + 7) // 8, "little")
        values = list(map(_ZERO if kind != "utf8" else _EMPTY, values, values))
    if kind != "utf8":
        return nulls, [validity, array(KINDS[kind][1], values).tobytes()]
    joined = "".join(values)
    if joined.isascii():  # one byte per character: lengths are the str lengths
        data, lengths = joined.encode("ascii"), map(len, values)
    else:  # lengths in bytes; text that is not valid UTF-8 (surrogate escapes) is escaped
        encoded = list(map(str.encode, values, repeat("utf-8"), repeat("backslashreplace")))
        data, lengths = b"".join(encoded), map(len, encoded)
    offsets = array("i", accumulate(lengths, initial=0))
    return nulls, [validity, offsets.tobytes(), data]


def holds(kind: str, values: Sequence) -> bool:
    """Whether a numeric column of ``kind`` can hold ``values`` (``None`` aside)."""
    try:
        array(KINDS[kind][1], (v for v in values if v is not None))
    except (TypeError, OverflowError):
        return False
    return True


def schema_message(names: Sequence[str], kinds: Sequence[str]) -> bytes:
    """The encapsulated Schema message that starts a stream (and a file, after the magic)."""
    return _message(_SCHEMA, lambda b: _schema(b, names, kinds), 0)


def batch_message(kinds: Sequence[str], columns: Sequence[list]) -> tuple[bytes, int]:
    """One record batch of ``columns`` (lists of equal length, ``None`` for null) as an
    encapsulated message, metadata and body, and the length of its metadata part."""
    n = len(columns[0]) if columns else 0
    if any(len(c) != n for c in columns) or len(columns) != len(kinds):
        raise ValueError("columns of different lengths")
    nodes, buffers, body = [], [], bytearray()
    for values, kind in zip(columns, kinds, strict=True):
        nulls, bufs = _column(values, kind)
        nodes.append(struct.pack("<qq", n, nulls))
        for buf in bufs:
            buffers.append(struct.pack("<qq", len(body), len(buf)))
            body += buf + bytes(-len(buf) % 8)
    batch = _message(_RECORD_BATCH, lambda b: b.table([(0, "q", n)], [
        (1, b.structs(b"".join(nodes), len(nodes))),
        (2, b.structs(b"".join(buffers), len(buffers)))]), len(body))
    return batch + body, len(batch)


def ipc_file(names: Sequence[str], kinds: Sequence[str], columns: Sequence[list]) -> bytes:
    """An Arrow IPC file of ``columns`` (lists of equal length, ``None`` for null) as one
    record batch."""
    if len(columns) != len(names):
        raise ValueError("columns of different lengths")
    batch, meta = batch_message(kinds, columns)
    head = MAGIC + b"\0\0" + schema_message(names, kinds)
    block = struct.pack("<qi4xq", len(head), meta, len(batch) - meta)
    f = _Builder()
    footer_schema = _schema(f, names, kinds)
    batches = f.structs(block, 1)
    dictionaries = f.structs(b"", 0)
    footer = f.finish(f.table([(0, "h", _V5)], [(1, footer_schema), (2, dictionaries),
                                                  (3, batches)]))
    eos = struct.pack("<Ii", 0xFFFFFFFF, 0)
    return b"".join((head, batch, eos, footer, struct.pack("<i", len(footer)), MAGIC))
