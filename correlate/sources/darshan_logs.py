"""Darshan logs → ``darshan_logs``, ``io_segments`` and ``io_file_counters`` frames.

Reads every region itself (zlib, bzip2 or uncompressed) of every log format since Darshan 3.0,
little- or big-endian, and decodes DXT segments with numpy over the raw module buffer — never
one Python object per segment — in each of the layouts in ``dxt_layouts``. PyDarshan is not
used for reading: its DXT reader assumes 32-byte segments.

A DXT region is inflated and decoded a chunk at a time (``dxt_stream``): ``iter_log`` yields
its segments batch by batch as they are decoded (``correlate darshan`` writes them so, and
``scan_segments`` reads them so), in memory that does not grow with the log.

Damage is reported, never fatal for the rest: a module that fails to decompress or decode is
listed in ``modules_failed`` and the rest of the log is used; a module Darshan flagged partial
(out of memory at run time) is listed in ``modules_partial`` and warned about, its records
used; a file that is not a Darshan log at all is reported as one problem for that file.
``load`` reads many logs and never raises for one bad log; ``read_log`` raises ``InputError``
for a log it cannot read at all.
"""

from __future__ import annotations

import bz2
import mmap
import re
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType

import numpy as np
import polars as pl
from polars.io.plugins import register_io_source

from correlate.errors import InputError
from correlate.frames.mappers import Mapper, local_map, runs_up_to
from correlate.schema import conform
from correlate.schema.darshan import DARSHAN_LOGS, IO_FILE_COUNTERS, IO_SEGMENTS
from correlate.sources import dxt_layouts as L
from correlate.sources import dxt_stream as S

_zlib: ModuleType  # ISA-L's zlib module or the standard one: the same interface
try:  # ISA-L inflates DXT regions faster than zlib; same streams, same results
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover
    _zlib = zlib

_PID_IN_NAME = re.compile(r"_id(\d+)-(\d+)_")
_OPS = pl.Series(["read", "write"], dtype=IO_SEGMENTS.column("op").polars_dtype())
_MODULES = pl.Series(["DXT_POSIX", "DXT_MPIIO"], dtype=IO_SEGMENTS.column("module").polars_dtype())
NS = 1_000_000_000


@dataclass(frozen=True)
class DarshanFrames:
    darshan_logs: pl.DataFrame
    io_segments: pl.DataFrame | pl.LazyFrame
    io_file_counters: pl.DataFrame
    #: (file, problem) for logs that could not be read at all or only in part
    problems: tuple[tuple[str, str], ...] = field(default=())

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(f"{f}: {p}" for f, p in self.problems)

    def segments(self) -> pl.DataFrame:
        """``io_segments`` as a DataFrame: as read, or read from the logs now when ``load`` was
        asked to leave them there."""
        seg = self.io_segments
        return seg if isinstance(seg, pl.DataFrame) else seg.collect()


def _inflate(raw: bytes, comp_type: int) -> bytes:
    if comp_type == L.COMP_NONE:
        return raw
    if comp_type == L.COMP_BZIP2:
        return bz2.decompress(raw)
    if comp_type != L.COMP_ZLIB:
        raise ValueError(f"unknown compression type {comp_type}")
    out, data = [], raw
    while data:
        d = _zlib.decompressobj()
        out.append(d.decompress(data))
        if not d.eof:
            raise ValueError("compressed data is truncated")
        data = d.unused_data
    return b"".join(out)


def _check_bounds(buf: L.LogBytes, off: int, length: int) -> None:
    if off + length > len(buf):
        raise ValueError(f"region extends past the end of the file ({off + length} > "
                         f"{len(buf)} bytes): truncated log")


def _region(buf: L.LogBytes, off: int, length: int, comp_type: int) -> bytes:
    _check_bounds(buf, off, length)
    try:
        return _inflate(buf[off:off + length], comp_type)
    except (zlib.error, _zlib.error, OSError, EOFError) as err:
        raise ValueError(f"unable to inflate: {err}") from None


def _pid_from_name(path: Path, jobid: int) -> int:
    m = _PID_IN_NAME.search(path.name)
    return int(m.group(2)) if m else jobid


@dataclass
class _Log:
    """Everything decoded from one log (internal); ``traced`` has the DXT segments per
    (module, record_id, host) whether or not the segments themselves were decoded."""

    row: dict
    segments: pl.DataFrame | None = None
    counters: list[_Counters] = field(default_factory=list)
    traced: list[_Traced] = field(default_factory=list)
    #: the DXT segments decoded, not yet a frame (``read_log`` makes ``segments`` of them)
    pieces: list[_Segments] = field(default_factory=list)
    #: whether ``pieces`` holds every segment decoded (read ``small``: a region too big to
    #: inflate at once was not kept)
    complete: bool = True


class StreamBroken(Exception):
    """A DXT region failed after some of its segments were handed out (``sink``): they cannot
    be taken back, so the caller reads the logs again the eager way."""


def _as_batch(recs: L.DxtRecords) -> S.Batch:
    """A whole region's records as one batch: each record's writes, then its reads."""
    n = len(recs.record_id)
    return S.Batch([recs.segments], np.repeat(np.arange(n), 2), np.tile([True, False], n),
                   np.zeros(2 * n, dtype=np.int64),
                   np.column_stack([recs.write_count, recs.read_count]).ravel(),
                   np.repeat(recs.record_id, 2), np.repeat(recs.rank, 2),
                   [h for h in recs.hostname for _ in (0, 1)])


@dataclass
class _Segments:
    """The DXT segments of one batch as arrays (``_segments_frame`` makes one frame of any
    number of them): per piece (one record's writes or reads) its host, path and segment
    count; per segment the rest. ``offset`` None: not recorded; ``thread`` None: not recorded,
    ``thread_known`` None: every one known."""

    host: list[str]
    path: list[str | None]
    count: np.ndarray
    module: str
    log: str
    pid: int
    rank: np.ndarray
    record_id: np.ndarray
    is_write: np.ndarray
    offset: np.ndarray | None
    length: np.ndarray
    start_ns: np.ndarray
    stop_ns: np.ndarray
    thread: np.ndarray | None
    thread_known: np.ndarray | None
    segment_index: np.ndarray


def _dxt_columns(b: S.Batch, layout: str, offsets_known: bool, module: str,
                 names: dict[int, str], pid: int, start_ns: int, log: str) -> _Segments:
    """The segments of a batch: ``count[i]`` segments of piece ``i`` (one record's writes or
    reads, numbered from ``first[i]``), copied out of the inflated chunk."""
    counts = b.count
    seg = b.segments[0] if len(b.segments) == 1 else _Fields(b.segments)
    n = int(counts.sum())
    seg_index = (np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
                 + np.repeat(b.first, counts))
    thread, known = None, None
    if layout == "v2-40":
        thread = np.ascontiguousarray(seg["pthread_id"])
    elif layout == "modified-96":
        thread = L.pthread_from_text(seg if isinstance(seg, np.ndarray)
                                     else np.concatenate(b.segments))
        known = thread != 0
    return _Segments(
        host=list(b.hostname), path=[names.get(int(r)) for r in b.record_id], count=counts,
        module=module, log=log, pid=pid,
        rank=np.repeat(b.rank.astype(np.int64, copy=False), counts),
        record_id=np.repeat(b.record_id.astype(np.uint64, copy=False), counts),
        is_write=np.repeat(b.is_write, counts),
        # offsets DXT_MPIIO version 1 did not record: null, not darshan-util's -1, so that
        # sums and ranges of offsets never use them
        offset=np.ascontiguousarray(seg["offset"]) if offsets_known else None,
        length=np.ascontiguousarray(seg["length"]),
        start_ns=start_ns + np.rint(seg["start"] * NS).astype(np.int64),
        stop_ns=start_ns + np.rint(seg["end"] * NS).astype(np.int64),
        thread=thread, thread_known=known, segment_index=seg_index)


def _with_nulls(values: np.ndarray, known: np.ndarray | None,
                dtype: type[pl.DataType]) -> pl.Series:
    """``values`` as a Series, null where not ``known`` (None: every one known)."""
    series = pl.Series(values, dtype=dtype)
    return series if known is None or known.all() else series.set(pl.Series(~known), None)


def _segments_frame(parts: list[_Segments]) -> pl.DataFrame:
    """One ``IO_SEGMENTS`` frame of the segments of ``parts``, in order: each column made once,
    whatever the number of logs and batches (a frame per small log costs more than decoding
    it)."""
    if not parts:
        return IO_SEGMENTS.empty()

    def joined(name: str) -> np.ndarray:
        arrays = [getattr(p, name) for p in parts]
        return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)

    sizes = [len(p.length) for p in parts]
    n = sum(sizes)
    # a piece's values repeated over its segments: numbers by numpy, strings by one gather
    # (each column built contiguous, so polars takes it without another copy)
    counts = joined("count")
    idx = pl.Series(np.repeat(np.arange(len(counts), dtype=np.uint32), counts))
    strings = pl.DataFrame({
        "host": pl.Series([h for p in parts for h in p.host], dtype=pl.String),
        "path": pl.Series([q for p in parts for q in p.path], dtype=pl.String),
        "module": pl.Series([p.module for p in parts for _ in p.host], dtype=_MODULES.dtype),
        "log": pl.Series([p.log for p in parts for _ in p.host], dtype=pl.String),
    })[idx]
    offset_known = np.concatenate([np.full(k, p.offset is not None)
                                   for p, k in zip(parts, sizes, strict=True)])
    offset = np.concatenate([p.offset if p.offset is not None else np.zeros(k, np.int64)
                             for p, k in zip(parts, sizes, strict=True)])
    thread = np.concatenate([p.thread if p.thread is not None else np.zeros(k, np.uint64)
                             for p, k in zip(parts, sizes, strict=True)])
    known = np.concatenate([p.thread_known if p.thread_known is not None
                            else np.full(k, p.thread is not None)
                            for p, k in zip(parts, sizes, strict=True)])
    return pl.DataFrame({
        "host": strings.get_column("host"),
        "pid": np.repeat(np.array([p.pid for p in parts], dtype=np.int64), sizes),
        "rank": joined("rank"),
        "record_id": joined("record_id"),
        "path": strings.get_column("path"),
        "module": strings.get_column("module"),
        "op": _OPS.gather(pl.Series(joined("is_write").view(np.uint8))),
        "offset": _with_nulls(offset, offset_known, pl.Int64),
        "length": joined("length"),
        "local_start_ns": joined("start_ns"),
        "local_stop_ns": joined("stop_ns"),
        "thread_id": _with_nulls(thread, known, pl.UInt64),
        "segment_index": joined("segment_index"),
        "log": strings.get_column("log").cast(pl.Categorical),
    }, schema=IO_SEGMENTS.polars_schema()) if n else IO_SEGMENTS.empty()


class _Fields:
    """A field of many pieces of segments, as one contiguous array (one copy per field)."""

    def __init__(self, pieces: list[np.ndarray]) -> None:
        self.pieces = pieces

    def __getitem__(self, name: str) -> np.ndarray:
        return np.concatenate([p[name] for p in self.pieces])


@dataclass
class _Counters:
    """A POSIX or STDIO module's records of one log, as columns (``_counters_frame`` makes one
    frame of many): ``columns`` has the numbers, ``stamps`` the timestamps (ns on the log's
    clock) with whether each was recorded."""

    module: str
    log: str
    pid: int
    path: list[str | None]
    columns: dict[str, np.ndarray]
    stamps: dict[str, tuple[np.ndarray, np.ndarray]]


def _counter_columns(buf: bytes, module: str, version: int, byteorder: L.ByteOrder,
                     names: dict[int, str], pid: int, start_ns: int, log: str) -> _Counters:
    layout = L.counter_layout(module, version)
    recs = L.counter_records(buf, layout, byteorder)
    columns = {"rank": recs["rank"], "record_id": recs["id"],
               **{k: recs["c"][:, i] for k, i in layout.fields.items()},
               **{k: recs["f"][:, i] for k, i in layout.ffields.items()}}
    stamps = {k: (start_ns + np.rint(recs["f"][:, i] * NS).astype(np.int64),
                  recs["f"][:, i] > 0) for k, i in layout.stamps.items()}
    return _Counters(module, log, pid, [names.get(int(r)) for r in recs["id"]], columns,
                     stamps)


def _counters_frame(items: list[tuple[_Counters, str | None]]) -> pl.DataFrame:
    """The records of ``items`` (each with its log's host) in their order, as one frame with
    every column any of them has (null where a module has not got it): a frame per kind of
    record (module and version), not per log."""
    kinds: dict[tuple[str, ...], list[int]] = {}
    for i, (c, _host) in enumerate(items):
        kinds.setdefault((c.module, *c.columns, *c.stamps), []).append(i)
    frames = []
    for at in kinds.values():
        own = [items[i][0] for i in at]
        sizes = [len(c.path) for c in own]
        first = own[0]
        stamps = {k: pl.Series(k, np.concatenate([c.stamps[k][0] for c in own])).set(
            pl.Series(~np.concatenate([c.stamps[k][1] for c in own])), None)
            for k in first.stamps}
        frames.append(pl.DataFrame({
            "pid": np.repeat(np.array([c.pid for c in own], dtype=np.int64), sizes),
            "rank": np.concatenate([c.columns["rank"] for c in own]),
            "record_id": np.concatenate([c.columns["record_id"] for c in own]),
            "path": pl.Series([p for c in own for p in c.path], dtype=pl.String),
            "module": pl.Series([c.module for c in own for _ in c.path], dtype=pl.String),
            **{k: np.concatenate([c.columns[k] for c in own]) for k in first.columns
               if k not in ("rank", "record_id")},
            **stamps,
            "log": pl.Series([c.log for c in own for _ in c.path], dtype=pl.String),
            "host": pl.Series([items[i][1] for i, c in zip(at, own, strict=True)
                               for _ in c.path], dtype=pl.String),
            "order": np.repeat(np.array(at, dtype=np.int64), sizes)}))
    return (pl.concat(frames, how="diagonal").sort("order", maintain_order=True)
            .drop("order"))


@dataclass
class _Traced:
    """A DXT module's records: their ids, hosts and segment counts (the calls traced)."""

    module: str
    record_id: list[int]
    host: list[str]
    count: list[int]


def _traced(recs: L.DxtRecords, module: str) -> _Traced:
    return _Traced(module, recs.record_id.tolist(), list(recs.hostname),
                   (recs.write_count + recs.read_count).tolist())


#: what a ``sink`` receives: each batch of DXT segments, with ``IO_SEGMENTS``' columns
Sink = Callable[[pl.DataFrame], None]


def _page_dropper(buf: L.LogBytes, off: int) -> Callable[[int], None] | None:
    """For a mapped log: drop the pages of a region's first ``n`` bytes once inflated, so that
    the file's pages do not stay in this process's memory (they are the page cache's, read
    again if needed)."""
    if not isinstance(buf, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return None
    done = [off - off % mmap.PAGESIZE]

    def drop(n: int) -> None:
        end = off + n - (off + n) % mmap.PAGESIZE
        if end > done[0]:
            buf.madvise(mmap.MADV_DONTNEED, done[0], end - done[0])
            done[0] = end
    return drop


def _dxt_module(buf: L.LogBytes, off: int, length: int, hdr: L.Header, mod_id: int, module: str,
                names: dict[int, str], pid: int, start_ns: int, log: str, with_segments: bool,
                live: bool, small: bool = False
                ) -> Generator[pl.DataFrame, None, tuple[L.DxtRecords, list[_Segments] | None]]:
    """One DXT module's record headers and (not ``live``) its segments, inflated and
    decoded a chunk at a time; ``live``, each batch is yielded as soon as it is decoded. A
    layout refuted at the region's end is tried no more (as ``split_dxt`` would have).
    ``small``: the segments of a region that inflates in one chunk only (None for a bigger
    one: they are not kept)."""
    _check_bounds(buf, off, length)
    raw = memoryview(buf)[off:off + length]
    version = hdr.mod_ver[mod_id]
    offsets_known = not (module == "DXT_MPIIO" and version == 1)
    exclude: tuple[str, ...] = ()
    while True:
        region = S.Region(raw, hdr.comp_type, module, version, hdr.byteorder, with_segments,
                          exclude, _page_dropper(buf, off), whole_only=small)
        pieces: list[_Segments] = []
        handed = whole = False
        try:
            for got in region.batches():
                whole = whole or isinstance(got, L.DxtRecords)
                if not with_segments:
                    continue
                batch = _as_batch(got) if isinstance(got, L.DxtRecords) else got
                piece = _dxt_columns(batch, region.layout or "", offsets_known, module, names,
                                     pid, start_ns, log)
                if live:
                    handed = True
                    yield _segments_frame([piece])
                else:
                    pieces.append(piece)
        except S.LayoutMismatch as err:
            if handed:
                raise StreamBroken(f"{log}: {module}: {err}") from None
            exclude += (err.layout,)
            continue
        except ValueError as err:
            if handed:
                raise StreamBroken(f"{log}: {module}: {err}") from None
            raise
        assert region.records is not None
        return region.records, (None if small and not whole else pieces)


def _decode_modules(buf: L.LogBytes, hdr: L.Header, names: dict[int, str], out: _Log, pid: int,
                    start_ns: int, log: str, with_segments: bool,
                    live: bool = False, counters: bool = True, small: bool = False
                    ) -> Generator[pl.DataFrame, None, None]:
    failed, present, partial, segments = [], [], [], []
    for mod_id, (off, length) in enumerate(hdr.mod_map):
        if not length:
            continue
        name = L.MODULE_NAMES[mod_id] if mod_id < len(L.MODULE_NAMES) else f"module-{mod_id}"
        present.append(name)
        if hdr.partial_flag >> mod_id & 1:
            partial.append(name)
        if name not in ("DXT_POSIX", "DXT_MPIIO", "POSIX", "STDIO"):
            continue
        try:
            if name.startswith("DXT_"):
                recs, pieces = yield from _dxt_module(buf, off, length, hdr, mod_id, name,
                                                      names, pid, start_ns, log, with_segments,
                                                      live, small)
                out.row["dxt_layout"] = recs.layout
                out.traced.append(_traced(recs, name))
                if pieces is None:
                    out.complete = False
                else:
                    segments += pieces
            elif counters:
                region = _region(buf, off, length, hdr.comp_type)
                out.counters.append(_counter_columns(region, name, hdr.mod_ver[mod_id],
                                                     hdr.byteorder, names, pid, start_ns, log))
        except ValueError as err:
            failed.append(f"{name}: {err}")
    out.row.update(modules=present, modules_failed=failed, modules_partial=partial)
    out.pieces = segments


def _job_region_end(hdr: L.Header, buf: L.LogBytes) -> int:
    """The job region runs from the header to the first other region (or the file's end)."""
    starts = [off for off, length in (hdr.name_map, *hdr.mod_map) if length]
    return min(starts) if starts else len(buf)


def read_log(path: Path, segments: bool = True, sink: Sink | None = None,
             counters: bool = True) -> _Log:
    """Decode one log (without ``segments``, all but the DXT segments themselves; with ``sink``,
    the segments are handed there batch by batch, not kept; without ``counters``, the POSIX and
    STDIO counters are not decoded: the log's segments read a second time); raises InputError
    when it is not a readable Darshan log at all, StreamBroken when a DXT region fails after
    ``sink`` had some of its segments."""
    gen = iter_log(path, segments, live=sink is not None, counters=counters)
    while True:
        try:
            frame = next(gen)
        except StopIteration as stop:
            out: _Log = stop.value
            break
        assert sink is not None
        sink(frame)
    if out.pieces:
        out.segments, out.pieces = _segments_frame(out.pieces), []
    return out


def iter_log(path: Path, segments: bool = True, live: bool = True, counters: bool = True,
             small: bool = False) -> Generator[pl.DataFrame, None, _Log]:
    """``read_log`` as a generator: ``live``, it yields each batch of DXT segments (with
    ``IO_SEGMENTS``' columns) as soon as it is decoded, and returns the log without them; not
    ``live``, the log with its segments as ``pieces`` (``small``: only when every DXT region
    inflates in one chunk, else ``complete`` is False)."""
    try:
        with path.open("rb") as fh:
            buf = (mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if path.stat().st_size
                   else b"")
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror}") from None
    try:
        hdr = L.parse_header(buf)
    except ValueError as err:
        raise InputError(path, str(err)) from None
    try:
        job, exe, _mounts = L.parse_job(_region(buf, hdr.size, _job_region_end(hdr, buf)
                                                - hdr.size, hdr.comp_type), hdr)
    except ValueError as err:
        raise InputError(path, f"job record (format {hdr.version}): {err}") from None
    log = str(path)
    pid = _pid_from_name(path, int(job["jobid"]))
    lib_ver = re.search(r"lib_ver=([^\s]+)", str(job["metadata"]))
    out = _Log(row={"log": log, "exe": exe, "pid": pid, "jobid": job["jobid"],
                    "uid": job["uid"], "nprocs": job["nprocs"], "start_ns": job["start_ns"],
                    "end_ns": job["end_ns"], "darshan_version": lib_ver.group(1) if lib_ver
                    else None, "log_format_version": hdr.version, "dxt_layout": None,
                    "partial": bool(path.name.endswith("_partial"))})
    names, names_failed = _names(buf, hdr)
    yield from _decode_modules(buf, hdr, names, out, pid, int(job["start_ns"]), log, segments,
                               live, counters, small)
    out.row["modules_failed"] = [*names_failed, *out.row["modules_failed"]]
    out.row["partial"] |= bool(out.row["modules_partial"])
    out.row["segment_count"] = sum(k for t in out.traced for k in t.count if k > 0)
    out.row["dxt_untraced_ops"] = _untraced_ops(out)
    hosts = {h for t in out.traced for h, k in zip(t.host, t.count, strict=True) if k > 0}
    out.row["host"] = hosts.pop() if len(hosts) == 1 else None
    return out


def _names(buf: L.LogBytes, hdr: L.Header) -> tuple[dict[int, str], list[str]]:
    """Record id → path, and what went wrong (paths are then missing, the records still read)."""
    try:
        names = L.parse_names(_region(buf, *hdr.name_map, hdr.comp_type), hdr)
    except ValueError as err:
        return {}, [f"name records: {err}"]
    return names, ["name records: none decoded"] if hdr.name_map[1] and not names else []


def _untraced_ops(out: _Log) -> int | None:
    """POSIX read+write calls per file minus the DXT_POSIX segments of that file (DXT stops
    recording silently when its trace memory is full)."""
    posix = [c for c in out.counters if c.module == "POSIX"]
    if not out.traced or not posix:
        return None
    traced: dict[int, int] = {}
    for t in out.traced:
        if t.module == "DXT_POSIX":
            for record, k in zip(t.record_id, t.count, strict=True):
                traced[record] = traced.get(record, 0) + k
    ops: dict[int, int] = {}
    for c in posix:
        calls = c.columns["read_ops"] + c.columns["write_ops"]
        for record, n in zip(c.columns["record_id"].tolist(), calls.tolist(), strict=True):
            ops[record] = ops.get(record, 0) + n
    return sum(max(0, n - traced.get(record, 0)) for record, n in ops.items())


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given; folders are searched (recursively) for *.darshan and *.darshan_partial."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(q for q in p.rglob("*") if q.is_file() and q.name.endswith(
                (".darshan", ".darshan_partial")))
        else:
            out.append(p)
    return out


def _read_or_problem(path: Path, segments: bool = True, small: bool = False
                     ) -> _Log | tuple[str, str]:
    try:
        return _decoded(path, small=True) if small else read_log(path, segments)
    except InputError as err:
        return (str(path), err.problem)


def _decoded(path: Path, counters: bool = True, small: bool = False) -> _Log:
    """One log with its DXT segments as ``pieces`` (see ``iter_log``)."""
    gen = iter_log(path, live=False, counters=counters, small=small)
    while True:  # (nothing is yielded when not live)
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def read_segments(log: str) -> pl.DataFrame:
    """The DXT segments of one log, as ``load`` returns them."""
    got = read_log(Path(log), counters=False).segments
    return IO_SEGMENTS.empty() if got is None else conform(got, IO_SEGMENTS)


def read_numbered(logs: Sequence[tuple[str, int]]) -> pl.DataFrame:
    """The DXT segments of these logs (each as ``read_segments`` reads it), one log after
    another, with ``seg_id`` first: the number given with the log plus the segment's row in
    it. One frame is made of them all: a frame per log costs more than decoding a small one."""
    pieces, seg_ids = [], []
    for log, first in logs:
        got = _decoded(Path(log), counters=False)
        n = sum(len(p.length) for p in got.pieces)
        pieces += got.pieces
        seg_ids.append(np.arange(first, first + n, dtype=np.int64))
    return _segments_frame(pieces).insert_column(
        0, pl.Series("seg_id", np.concatenate(seg_ids or [np.zeros(0, np.int64)])))


def _log_batches(path: str, dxt_failed: bool) -> Iterator[pl.DataFrame]:
    """One log's segments batch by batch as decoded; a log whose DXT region failed when its
    headers were read is read whole (what failed is left out, as ``load`` leaves it)."""
    if dxt_failed:
        yield read_segments(path)
        return
    try:
        yield from iter_log(Path(path), counters=False)
    except StreamBroken as err:  # it read whole a moment ago: the file changed since
        raise InputError(Path(path), f"changed while it was read ({err})") from None


def scan_segments(logs: pl.DataFrame) -> pl.LazyFrame:
    """``io_segments`` of these ``darshan_logs`` rows as a LazyFrame: read when collected, a
    chunk of a DXT region at a time."""
    rows = (logs.filter(pl.col("segment_count") > 0)
            .select(pl.col("log").cast(pl.String),
                    pl.col("modules_failed").list.eval(pl.element().str.starts_with("DXT_"))
                    .list.any().fill_null(False))).rows()
    return register_io_source(lambda *_: (b for p, failed in rows
                                          for b in _log_batches(p, failed)),
                              schema=IO_SEGMENTS.polars_schema())


#: compressed bytes of logs read as one item of a mapper: small logs are read many at a time
#: (a thread hand-off or a Dask task per log costs more than decoding a small one), a bigger
#: log alone
GROUP_BYTES = 8 << 20


#: bytes of log per DXT segment, and per log, that ``load(keep=N)`` allows: logs bigger than
#: that in all are taken to hold more than N segments and are not decoded for keeping (their
#: segments would be decoded, then dropped). zlib gives a segment a few bytes where offsets
#: and times run in order, a few tens where they do not; a log's header, names and counters
#: take a kilobyte or two
KEEP_BYTES, KEEP_LOG_BYTES = 24, 4096


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # (its read says what is wrong)
        return 0


def _read_group(paths: list[Path], segments: bool, small: bool
                ) -> list[_Log | tuple[str, str]]:
    return [_read_or_problem(path, segments, small) for path in paths]


def load(paths: Iterable[Path | str], mapper: Mapper = local_map, *,
         segments: bool = True, keep: int = 0) -> DarshanFrames:
    """Read many logs (files or folders) through ``mapper`` (in this process, or as Dask
    tasks), small ones several at a time (``GROUP_BYTES``); one bad log is a problem entry,
    never an exception. Without ``segments`` the DXT segments are left in the logs:
    ``io_segments`` is then ``scan_segments`` of them; unless the logs hold at most ``keep``
    segments in all (and no more bytes than ``KEEP_BYTES`` says), each log's regions small enough
    to inflate at once: those are decoded in this same pass and kept (``io_segments`` a
    DataFrame), so that a small run's logs are not read twice."""
    files = expand_paths(Path(p) for p in paths)
    sizes = [_size(path) for path in files]
    if segments or sum(sizes) > keep * KEEP_BYTES + len(sizes) * KEEP_LOG_BYTES:
        keep = 0  # (a run whose logs are too big is not tried: its segments would be dropped)
    read = partial(_read_group, segments=segments, small=bool(keep))
    got = mapper(read, runs_up_to(files, sizes, GROUP_BYTES))
    return assemble((log for group in got for log in group), segments=segments, keep=keep)


def assemble(results: Iterable[_Log | tuple[str, str]], *, segments: bool = True,
             keep: int = 0) -> DarshanFrames:
    """The frames of logs read (``read_log``'s results, or (file, problem) for a log that
    could not be read), in their order: ``load`` without the reading."""
    rows: list[dict] = []
    segs: list[pl.DataFrame] = []
    counters: list[tuple[_Counters, str | None]] = []
    problems: list[tuple[str, str]] = []
    # the segments decoded while they fit ``keep`` (None once they do not)
    kept: list[_Segments] | None = [] if keep and not segments else None
    held = 0
    for got in results:
        if isinstance(got, tuple):
            problems.append(got)
            continue
        path = got.row["log"]
        rows.append(got.row)
        problems += [(str(path), f"module {m}") for m in got.row.get("modules_failed", [])]
        problems += [(str(path), f"module {m} is partial: Darshan ran out of memory for it at run "
                      "time; what it recorded is used, the rest was never written")
                     for m in got.row.get("modules_partial", [])]
        if got.row.get("dxt_untraced_ops"):
            problems.append((str(path), f"DXT trace incomplete: {got.row['dxt_untraced_ops']:,} "
                             "POSIX read/write calls were not traced (Darshan's DXT memory was "
                             "full: record with a larger `collect --dxt-segments`, or raise "
                             "DXT's MAX_RECORDS in the Darshan config)"))
        if got.segments is not None:
            segs.append(got.segments)
        if kept is not None:
            held += sum(len(piece.length) for piece in got.pieces)
            if got.complete and held <= keep:
                kept += got.pieces
            else:
                kept = None
        host = got.row["host"] if got.traced else None
        counters += [(c, host) for c in got.counters]
    logs = (conform(pl.DataFrame(rows, infer_schema_length=None), DARSHAN_LOGS) if rows
            else DARSHAN_LOGS.empty())
    seg = (_segments_frame(kept) if kept is not None
           else scan_segments(logs) if not segments
           else conform(pl.concat(segs), IO_SEGMENTS) if segs else IO_SEGMENTS.empty())
    cnt = (conform(_counters_frame(counters), IO_FILE_COUNTERS) if counters
           else IO_FILE_COUNTERS.empty())
    return DarshanFrames(logs, seg, cnt, tuple(problems))


def incomplete_logs(logs: pl.DataFrame) -> pl.DataFrame:
    """The logs (``log``, ``failed``, ``partial``, ``untraced``) whose I/O is partly missing."""
    if logs.is_empty():
        return pl.DataFrame({"log": [], "failed": [], "partial": [], "untraced": []})
    return logs.select(
        log=pl.col("log").cast(pl.String),
        failed=pl.col("modules_failed").list.join("; "),
        partial=pl.col("partial"),
        untraced=pl.col("dxt_untraced_ops").fill_null(0),
    ).filter((pl.col("failed") != "") | pl.col("partial") | (pl.col("untraced") > 0))


HEATMAP_SCHEMA = pl.Schema({"pid": pl.Int64, "module": pl.String, "op": pl.String,
                            "bin_start_ns": pl.Int64, "bin_stop_ns": pl.Int64,
                            "bytes": pl.Float64})


def _heatmap_records(region: bytes, byteorder: L.ByteOrder) -> list[tuple[int, float, np.ndarray,
                                                                    np.ndarray]]:
    """(record id, bin width s, write bins, read bins) of a HEATMAP region: each record is the
    in-memory struct as Darshan wrote it, i.e. the (id, rank) base, the bin width (double), the
    bin count and two stale pointers, then that many write and read byte counts (int64)."""
    out, pos, i8 = [], 0, np.dtype("i8").newbyteorder(byteorder)
    head = np.dtype([("id", "u8"), ("rank", "i8"), ("width", "f8"), ("nbins", "i8"),
                     ("pointers", "V16")]
                    ).newbyteorder(byteorder)
    while pos < len(region):
        if pos + head.itemsize > len(region):
            raise ValueError("HEATMAP: truncated record")
        h = np.frombuffer(region, head, 1, pos)[0]
        n = int(h["nbins"])
        end = pos + head.itemsize + 16 * n
        if n < 0 or end > len(region):
            raise ValueError(f"HEATMAP: record of {n} bins runs past the module's end")
        bins = np.frombuffer(region, i8, 2 * n, pos + head.itemsize).astype(np.int64)
        out.append((int(h["id"]), float(h["width"]), bins[:n], bins[n:]))
        pos = end
    return out


def read_heatmap(log: str) -> pl.DataFrame:
    """The HEATMAP module of one log (Darshan 3.4+): bytes read and written per time bin of the
    process, per I/O module (``module`` POSIX, STDIO, …), bins on the log host's clock; empty
    when the log has none or it cannot be read (the counters are then weighed by time alone)."""
    path = Path(log)
    try:
        with path.open("rb") as fh:
            buf = fh.read()
        hdr = L.parse_header(buf)
        mod = L.MODULE_IDS["HEATMAP"]
        if mod >= len(hdr.mod_map) or not hdr.mod_map[mod][1]:
            return pl.DataFrame(schema=HEATMAP_SCHEMA)
        job, _exe, _mounts = L.parse_job(_region(buf, hdr.size, _job_region_end(hdr, buf)
                                                 - hdr.size, hdr.comp_type), hdr)
        names, _ = _names(buf, hdr)
        recs = _heatmap_records(_region(buf, *hdr.mod_map[mod], hdr.comp_type), hdr.byteorder)
    except (OSError, ValueError):
        return pl.DataFrame(schema=HEATMAP_SCHEMA)
    start, pid, parts = int(job["start_ns"]), _pid_from_name(path, int(job["jobid"])), []
    for rid, width, writes, reads in recs:
        module = names.get(rid, "").removeprefix("heatmap:") or None
        edges = start + np.rint(np.arange(len(reads) + 1) * width * NS).astype(np.int64)
        for op, bins in (("read", reads), ("write", writes)):
            parts.append(pl.DataFrame({"bin_start_ns": edges[:-1], "bin_stop_ns": edges[1:],
                                       "bytes": bins.astype(np.float64)}).with_columns(
                pid=pl.lit(pid, pl.Int64), module=pl.lit(module, pl.String),
                op=pl.lit(op)))
    return (pl.concat(parts).select(list(HEATMAP_SCHEMA)).cast(HEATMAP_SCHEMA) if parts
            else pl.DataFrame(schema=HEATMAP_SCHEMA))
