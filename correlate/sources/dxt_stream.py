"""A DXT module region read in bounded memory: inflated a chunk at a time, its records walked as
they complete, its segments handed out in batches.

A region small enough to inflate in one chunk is split exactly as ``dxt_layouts.split_dxt``
splits it (the layout found by exact consumption). A larger one cannot be checked whole before
its first segments are handed out, so its layout is chosen on the first chunk: the module
version's order, each candidate's record headers walked through the chunk, its segments'
times sane (finite, not negative, never an integer's bits read as a subnormal double, start ≤
end) and, for ``modified-96``, the ``pthread_id=`` text. Exact consumption is checked at the
end of the stream: a region it does not consume raises ``LayoutMismatch`` so that callers that
can (the eager readers) try the next layout, and callers that cannot take back what they wrote
start again on the eager path.
"""

from __future__ import annotations

import bz2
import queue
import threading
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from correlate.sources import dxt_layouts as L

_zlib: ModuleType  # ISA-L's zlib module or the standard one: the same interface
try:  # ISA-L inflates DXT regions faster than zlib; same streams, same results
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover
    _zlib = zlib

#: inflated bytes at most per chunk: the unit of memory (a chunk, its segments' copy and their
#: frame), and the size up to which a region is split whole, exactly as ``split_dxt`` does
CHUNK = 16 << 20
#: compressed bytes fed to the inflater per call (its unconsumed tail is copied at each call);
#: each call's output is handed on as it is, so a chunk is often smaller than CHUNK
FEED = 2 << 20
#: segments of the first chunk whose times are checked when choosing a layout
SANE_SEGMENTS = 10_000
#: deflate's largest ratio: a record cannot claim more segment bytes than this × its region
MAX_RATIO = 1032


class LayoutMismatch(ValueError):
    """The layout chosen on the first chunk did not consume the region exactly."""

    def __init__(self, layout: str, problem: str) -> None:
        super().__init__(f"DXT segment layout {layout} chosen on the region's start {problem}")
        self.layout = layout


def inflate_chunks(buf: bytes | memoryview, comp_type: int, size: int = CHUNK,
                   consumed: Callable[[int], None] | None = None
                   ) -> Generator[bytes, None, None]:
    """The inflated region in chunks of at most ``size`` bytes (zlib streams back to back, as
    darshan-logutils writes them, bzip2, or uncompressed); ValueError when it is damaged.
    ``consumed(n)`` is told when the region's first ``n`` bytes will not be read again."""
    mv = memoryview(buf)
    consumed = consumed or (lambda n: None)
    if comp_type == L.COMP_NONE:
        for at in range(0, len(mv), size):
            yield bytes(mv[at:at + size])
            consumed(at + size)
        return
    if comp_type not in (L.COMP_ZLIB, L.COMP_BZIP2):
        raise ValueError(f"unknown compression type {comp_type}")
    try:
        yield from (_inflate_zlib(mv, size, consumed) if comp_type == L.COMP_ZLIB
                    else _inflate_bz2(mv, size, consumed))
    except (zlib.error, _zlib.error, OSError, EOFError) as err:
        raise ValueError(f"unable to inflate: {err}") from None


def _inflate_zlib(mv: memoryview, size: int, consumed: Callable[[int], None]
                  ) -> Iterator[bytes]:
    d, at = _zlib.decompressobj(), 0
    pending: bytes | memoryview = b""
    while True:
        if not pending:
            if at >= len(mv):
                if not d.eof:
                    raise ValueError("compressed data is truncated")
                return
            consumed(at)
            pending, at = mv[at:at + FEED], at + FEED
        out = d.decompress(pending, size)
        pending = d.unconsumed_tail
        if out:
            yield out
        if d.eof:
            rest = d.unused_data
            if not rest and at >= len(mv):
                return
            d, pending = _zlib.decompressobj(), rest
        elif not out and not pending and at >= len(mv):
            raise ValueError("compressed data is truncated")


def _inflate_bz2(mv: memoryview, size: int, consumed: Callable[[int], None]
                 ) -> Iterator[bytes]:
    d, at = bz2.BZ2Decompressor(), 0
    while True:
        if d.eof:
            rest = d.unused_data
            if not rest and at >= len(mv):
                return
            d = bz2.BZ2Decompressor()
            out = d.decompress(rest, size)
        elif d.needs_input:
            if at >= len(mv):
                raise ValueError("compressed data is truncated")
            consumed(at)
            out, at = d.decompress(mv[at:at + FEED], size), at + FEED
        else:
            out = d.decompress(b"", size)
        if out:
            yield out


def prefetched(chunks: Iterator[bytes], depth: int = 2) -> Generator[bytes, None, None]:
    """``chunks`` produced in a thread, ``depth`` ahead: ISA-L and zlib inflate without the
    GIL, so the next chunk inflates while this one is decoded and written."""
    q: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def put(item: tuple) -> bool:
        """Queue ``item`` unless the consumer has gone (then never block on a full queue)."""
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for c in chunks:
                if not put((c, None)):
                    return
            put((None, None))
        except BaseException as err:  # handed to the consumer, raised there
            put((None, err))

    t = threading.Thread(target=run, name="dxt-inflate", daemon=True)
    t.start()
    try:
        while True:
            c, err = q.get()
            if err is not None:
                raise err
            if c is None:
                return
            yield c
    finally:
        stop.set()
        t.join()


@dataclass
class Batch:
    """Segments of one chunk: ``count[i]`` segments of record ``record[i]`` (an index into the
    walker's records), writes or reads, the first being that op's ``first[i]``-th segment."""

    #: the segments of each piece (views into the chunk), or all of them in one array
    segments: list[np.ndarray]
    record: np.ndarray
    is_write: np.ndarray
    first: np.ndarray
    count: np.ndarray
    #: per piece: its record's id, rank and host
    record_id: np.ndarray
    rank: np.ndarray
    hostname: list[str]


@dataclass
class Walker:
    """Walks record headers and segments across chunks; a record, header or segment cut by a
    chunk's end is carried over to the next chunk."""

    layout: str
    byteorder: L.ByteOrder
    max_bytes: int
    keep_segments: bool = True
    record_id: list[int] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    hostname: list[str] = field(default_factory=list)
    write_count: list[int] = field(default_factory=list)
    read_count: list[int] = field(default_factory=list)
    _carry: bytes = b""
    _need_w: int = 0
    _need_r: int = 0

    def __post_init__(self) -> None:
        self.dtype = L.SEGMENT_LAYOUTS[self.layout]
        self.stride = self.dtype.itemsize
        self.header = L.DXT_HEADERS[self.byteorder]

    def feed(self, chunk: bytes) -> Batch | None:
        data = self._carry + chunk if self._carry else chunk
        pos, n, stride, hsize = 0, len(data), self.stride, self.header.size
        pieces: list[tuple[int, bool, int, int]] = []
        views: list[np.ndarray] = []
        dtype = self.dtype.newbyteorder(self.byteorder)
        while True:
            if not (self._need_w or self._need_r):
                if n - pos < hsize:
                    break
                rid, rank, _shared, host, wc, rc = self.header.unpack_from(data, pos)
                if wc < 0 or rc < 0 or (wc + rc) * stride > self.max_bytes:
                    raise LayoutMismatch(self.layout, f"reads a record header with {wc} "
                                         f"writes and {rc} reads")
                self.record_id.append(rid)
                self.rank.append(rank)
                self.hostname.append(host.split(b"\0", 1)[0].decode("utf-8", "replace"))
                self.write_count.append(wc)
                self.read_count.append(rc)
                self._need_w, self._need_r = wc, rc
                pos += hsize
                continue
            fit = (n - pos) // stride
            if not fit:
                break
            write = bool(self._need_w)
            need = self._need_w if write else self._need_r
            k = min(need, fit)
            done = (self.write_count[-1] if write else self.read_count[-1]) - need
            pieces.append((len(self.record_id) - 1, write, done, k))
            if self.keep_segments:
                views.append(np.frombuffer(data, dtype, k, pos))
            pos += k * stride
            if write:
                self._need_w -= k
            else:
                self._need_r -= k
        self._carry = data[pos:]
        if not pieces or not self.keep_segments:
            return None
        if self.byteorder != "<":
            views = [v.astype(self.dtype) for v in views]
        rec, writes, first, count = zip(*pieces, strict=True)
        return Batch(views, np.array(rec, dtype=np.int64), np.array(writes, dtype=bool),
                     np.array(first, dtype=np.int64), np.array(count, dtype=np.int64),
                     np.array([self.record_id[r] for r in rec], dtype=np.uint64),
                     np.array([self.rank[r] for r in rec], dtype=np.int64),
                     [self.hostname[r] for r in rec])

    def finish(self) -> None:
        if self._carry or self._need_w or self._need_r:
            raise LayoutMismatch(self.layout, "does not consume the region exactly "
                                 f"({len(self._carry)} bytes left, {self._need_w + self._need_r}"
                                 " segments missing)")

    def records(self, offsets_known: bool = True) -> L.DxtRecords:
        """The record headers walked (segments left out)."""
        return L.DxtRecords(
            layout=self.layout, record_id=np.array(self.record_id, dtype=np.uint64),
            rank=np.array(self.rank, dtype=np.int64), hostname=list(self.hostname),
            write_count=np.array(self.write_count, dtype=np.int64),
            read_count=np.array(self.read_count, dtype=np.int64),
            segments=np.empty(0, dtype=self.dtype), offsets_known=offsets_known)


def _sane(pieces: list[np.ndarray]) -> bool:
    """Times a DXT segment can hold: an integer field read as a double (a wrong stride) is
    subnormal, negative or NaN."""
    if not pieces:
        return True
    seg = np.concatenate(pieces)[:SANE_SEGMENTS]
    start, end = seg["start"], seg["end"]
    tiny = np.finfo(np.float64).tiny
    ok = (np.isfinite(start) & np.isfinite(end) & (start >= 0) & (end >= start)
          & ((start == 0) | (start >= tiny)) & ((end == 0) | (end >= tiny)) & (seg["length"] >= 0))
    return bool(ok.all())


def choose_layout(first: bytes, order: list[str], byteorder: L.ByteOrder, max_bytes: int
                  ) -> str:
    """The layout of a region that does not fit one chunk, judged on its first chunk."""
    headers_only = None
    for layout in order:
        w = Walker(layout, byteorder, max_bytes)
        try:
            batch = w.feed(first)
        except LayoutMismatch:
            continue
        if layout == "modified-96":
            if batch is None or bytes(
                    batch.segments[0][0]["extra"])[:len(L.PTHREAD_PREFIX)] != L.PTHREAD_PREFIX:
                continue
        if batch is None or _sane(batch.segments):
            return layout
        headers_only = headers_only or layout
    if headers_only:
        return headers_only
    raise ValueError(f"DXT segment layout not recognised (first {len(first)} bytes; tried "
                     f"{', '.join(order)})")


@dataclass
class Region:
    """One DXT module region: ``batches()`` hands out its segments; ``records`` (the headers)
    is complete once they are all handed out. ``exclude`` drops layouts already refuted."""

    buf: bytes | memoryview
    comp_type: int
    module: str
    module_version: int
    byteorder: L.ByteOrder = "<"
    keep_segments: bool = True
    exclude: tuple[str, ...] = ()
    #: told how many of the region's bytes will not be read again (see ``inflate_chunks``)
    consumed: Callable[[int], None] | None = None
    #: segments kept only if the region inflates in one chunk (a bigger one's batches are not
    #: handed out: its record headers are still read)
    whole_only: bool = False
    records: L.DxtRecords | None = None
    layout: str | None = None

    def batches(self) -> Iterator[Batch | L.DxtRecords]:
        """Each chunk's Batch; a region inflated in one chunk yields its whole DxtRecords (as
        ``split_dxt`` makes it) instead."""
        order = [x for x in L._layout_order(self.module, self.module_version)
                 if x not in self.exclude]
        offsets_known = not (self.module == "DXT_MPIIO" and self.module_version == 1)
        chunks = inflate_chunks(self.buf, self.comp_type, CHUNK, self.consumed)
        if len(self.buf) > FEED:  # (a small region inflates in one call: no thread for it)
            chunks = prefetched(chunks)
        try:
            yield from self._walk(chunks, order, offsets_known)
        finally:
            chunks.close()  # the inflating thread stops, if the reader stopped early

    def _walk(self, chunks: Iterator[bytes], order: list[str], offsets_known: bool
              ) -> Iterator[Batch | L.DxtRecords]:
        parts, have = [], 0
        for c in chunks:
            parts.append(c)
            have += len(c)
            if have > CHUNK:
                break
        else:  # the whole region: exact consumption decides, as split_dxt does
            recs = L.split_dxt(parts[0] if len(parts) == 1 else b"".join(parts),
                               self.module_version, self.keep_segments, module=self.module,
                               byteorder=self.byteorder)
            if recs.layout in self.exclude:
                raise ValueError("DXT segment layout not recognised")
            self.layout, self.records = recs.layout, recs
            yield recs
            return
        max_bytes = len(self.buf) * MAX_RATIO
        self.layout = choose_layout(parts[0], order, self.byteorder, max_bytes)
        w = Walker(self.layout, self.byteorder, max_bytes,
                   self.keep_segments and not self.whole_only)
        while parts:
            got = w.feed(parts.pop(0))
            if got is not None:
                yield got
        for c in chunks:
            got = w.feed(c)
            if got is not None:
                yield got
        w.finish()
        self.records = w.records(offsets_known=offsets_known)
