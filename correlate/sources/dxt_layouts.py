"""Byte layouts of a Darshan log, in one place: header, job record, name records, the POSIX and
STDIO per-file records, and the DXT record with its segment layouts, for every log format
Darshan has written since 3.0 (format versions 3.00, 3.10, 3.20, 3.21 and 3.41), in either byte
order. What differs between formats follows darshan-util's darshan-logutils.c:

- header: 16 module slots and a u32 partial flag before 3.41, 64 slots and a u64 flag since; the
  slots before 3.20 lack H5D and those before 3.41 lack PNETCDF_VAR, so their indices are moved
  to today's module ids (``MODULE_NAMES``) as darshan-logutils does;
- job record: start/end nanoseconds only since 3.41;
- name records: ``id u64, length u32, path`` in 3.00, ``id u64, path NUL`` since 3.10;
- a log written on a big-endian machine (magic number byte-swapped) is swapped on read.

DXT record (104 bytes): record id u64, rank i64, shared_record i64, hostname[64], write_count
i64, read_count i64; then write_count write segments, then read_count read segments. Segment
layouts, told apart by exact consumption of the module buffer (and the text prefix for the
modified one); the module version says which to try first (DXT_POSIX 1 and DXT_MPIIO 1-2 wrote
32-byte segments, DXT_POSIX 2 and DXT_MPIIO 3 40-byte ones), never decides alone: the Polaris
build says version 1 for its 96-byte segments.

- ``v1-32``: offset i64, length i64, start f64, end f64 (stock Darshan ≤ 3.5)
- ``v2-40``: the same + pthread_id u64 (upstream since DXT_POSIX version 2)
- ``modified-96``: the 32 bytes + a 64-byte text field ``pthread_id=<decimal>\\0`` whose tail
  may hold leftover bytes (a modified 3.4.4 used on Polaris)

DXT_MPIIO version 1 did not record offsets (darshan-util sets them to -1).
"""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypeAlias

import numpy as np

#: a whole log's bytes: read into memory or memory-mapped (a slice of either is bytes)
LogBytes: TypeAlias = bytes | mmap.mmap
#: the byte order of a log's contents after its header, as ``struct`` and numpy write it
ByteOrder: TypeAlias = Literal["<", ">"]

HEADER_SIZE = 8 + 8 + 8 + 8 + 16 + 64 * 16 + 64 * 4  # 1328 for format 3.41
HEADER_SIZE_3_00 = 8 + 8 + 1 + 3 + 4 + 16 + 16 * 16 + 16 * 4  # 360 for 3.00 ... 3.21
MAGIC = 6567223
MAX_MODS = 64
COMP_ZLIB, COMP_BZIP2, COMP_NONE = 0, 1, 2
#: log format versions darshan-logutils reads (each Darshan release since 3.0 wrote one of them)
FORMATS = ("3.00", "3.10", "3.20", "3.21", "3.41")
NEWEST_FORMAT = (3, 41)
JOB_STRUCT = struct.Struct("<7q1024s")  # uid, start s/ns, end s/ns, nprocs, jobid, metadata

MODULE_NAMES = ("NULL", "POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q",
                "LUSTRE", "STDIO", "DXT_POSIX", "DXT_MPIIO", "MDHIM", "APXC", "APMPI",
                "HEATMAP", "DFS", "DAOS")
MODULE_IDS = {name: i for i, name in enumerate(MODULE_NAMES)}

DXT_HEADER = struct.Struct("<Qqq64sqq")  # 104 bytes
DXT_HEADERS = {"<": DXT_HEADER, ">": struct.Struct(">Qqq64sqq")}
PTHREAD_PREFIX = b"pthread_id="

SEGMENT_V1 = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])
SEGMENT_V2 = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8"),
                       ("pthread_id", "<u8")])
SEGMENT_MOD96 = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"),
                          ("end", "<f8"), ("extra", "V64")])
#: layout name -> segment dtype, in the order they are tried
SEGMENT_LAYOUTS = {"v2-40": SEGMENT_V2, "modified-96": SEGMENT_MOD96, "v1-32": SEGMENT_V1}
#: the layout stock Darshan wrote for each DXT module version
DXT_VERSIONS = {"DXT_POSIX": {1: "v1-32", 2: "v2-40"},
                "DXT_MPIIO": {1: "v1-32", 2: "v1-32", 3: "v2-40"}}


class CounterLayout(NamedTuple):
    """A POSIX/STDIO record of one module version: how many int64 counters and double counters
    follow the (id, rank) base, and where the ones we keep are."""

    counters: int
    fcounters: int
    fields: dict[str, int]
    ffields: dict[str, int]
    #: timestamps (seconds since the job start, 0 = never) of the first and last read/write
    stamps: dict[str, int] = {}


_POSIX_TIMES_15 = {"read_time_s": 6, "write_time_s": 7, "meta_time_s": 8}
_POSIX_TIMES_17 = {"read_time_s": 8, "write_time_s": 9, "meta_time_s": 10}
_POSIX_OPS_64 = {"opens": 0, "read_ops": 1, "write_ops": 2, "read_bytes": 9, "write_bytes": 10}
#: POSIX F_READ/WRITE_START/END_TIMESTAMP: before and after CLOSE_START/OPEN_END were inserted
_POSIX_STAMPS_15 = {"first_read_ns": 1, "last_read_ns": 4, "first_write_ns": 2,
                    "last_write_ns": 5}
_POSIX_STAMPS_17 = {"first_read_ns": 1, "last_read_ns": 5, "first_write_ns": 2,
                    "last_write_ns": 6}
_STDIO_TIMES = {"read_time_s": 2, "write_time_s": 1, "meta_time_s": 0}
_STDIO_STAMPS = {"first_read_ns": 6, "last_read_ns": 10, "first_write_ns": 5, "last_write_ns": 9}
#: (module, module version) -> record layout, from darshan-util's up-conversion code
COUNTERS = {
    # 3.0: stdio counters (FOPENS..FSEEKS) sat between MMAPS and FSYNCS
    ("POSIX", 1): CounterLayout(68, 15, {"opens": 0, "read_ops": 1, "write_ops": 2,
                                         "read_bytes": 13, "write_bytes": 14}, _POSIX_TIMES_15,
                                _POSIX_STAMPS_15),
    ("POSIX", 2): CounterLayout(64, 15, _POSIX_OPS_64, _POSIX_TIMES_15, _POSIX_STAMPS_15),
    # CLOSE_START and OPEN_END timestamps added
    ("POSIX", 3): CounterLayout(64, 17, _POSIX_OPS_64, _POSIX_TIMES_17, _POSIX_STAMPS_17),
    # FILENOS, DUPS, RENAME_SOURCES, RENAME_TARGETS, RENAMED_FROM added
    ("POSIX", 4): CounterLayout(69, 17, {"opens": 0, "read_ops": 3, "write_ops": 4,
                                         "read_bytes": 14, "write_bytes": 15}, _POSIX_TIMES_17,
                                _POSIX_STAMPS_17),
    ("STDIO", 1): CounterLayout(13, 15, {"opens": 0, "read_ops": 1, "write_ops": 2,
                                         "read_bytes": 6, "write_bytes": 5}, _STDIO_TIMES,
                                _STDIO_STAMPS),
    # FDOPENS added
    ("STDIO", 2): CounterLayout(14, 15, {"opens": 0, "read_ops": 2, "write_ops": 3,
                                         "read_bytes": 7, "write_bytes": 6}, _STDIO_TIMES,
                                _STDIO_STAMPS),
}


@dataclass(frozen=True)
class Header:
    version: str
    comp_type: int
    #: bit i set: module i (today's ids) ran out of memory at run time
    partial_flag: int
    name_map: tuple[int, int]
    #: (offset, length) and version per module, indexed by today's module ids
    mod_map: tuple[tuple[int, int], ...]
    mod_ver: tuple[int, ...]
    #: "<" or ">": the byte order of everything after the header
    byteorder: ByteOrder = "<"
    #: where the job record starts
    size: int = HEADER_SIZE

    @property
    def format(self) -> tuple[int, int]:
        return _format_number(self.version)


def _format_number(version: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\.(\d+)", version)
    if not m:
        raise ValueError(f"unreadable log format version {version!r}")
    return int(m.group(1)), int(m.group(2))


def _check_format(version: str) -> tuple[int, int]:
    """The (major, minor) of a format this reader knows; else why not, in the user's terms."""
    fmt = _format_number(version)
    if fmt > NEWEST_FORMAT:
        raise ValueError(f"Darshan log format {version} is newer than this dask-correlate reads "
                         f"(formats {FORMATS[0]} to {FORMATS[-1]}): upgrade dask-correlate "
                         "(pip install -U dask-correlate)")
    if fmt[0] < 3:
        raise ValueError(f"Darshan log format {version} is from Darshan 2, whose logs this "
                         f"reader does not read (formats {FORMATS[0]} to {FORMATS[-1]}: Darshan "
                         "3.0 and later)")
    if version not in FORMATS:
        raise ValueError(f"unknown Darshan log format {version} (known: {', '.join(FORMATS)})")
    return fmt


def _today_id(fmt: tuple[int, int], slot: int) -> int:
    """Module id today of header slot ``slot`` in format ``fmt``: H5D (4) arrived in 3.20,
    PNETCDF_VAR (6) in 3.41, each shifting the later modules up by one."""
    if fmt < (3, 20) and slot >= MODULE_IDS["H5D"]:
        slot += 1
    if fmt < (3, 41) and slot >= MODULE_IDS["PNETCDF_VAR"]:
        slot += 1
    return slot


def _byte_order(buf: LogBytes) -> ByteOrder:
    (magic,) = struct.unpack_from("<q", buf, 8)
    if magic == MAGIC:
        return "<"
    if struct.unpack_from(">q", buf, 8)[0] == MAGIC:
        return ">"
    raise ValueError("not a Darshan log (bad magic number)")


def parse_header(buf: LogBytes) -> Header:
    """Parse the fixed header of any known format; raises ValueError with the problem."""
    if len(buf) < 16:
        raise ValueError(f"too short for a Darshan log header ({len(buf)} bytes)")
    order = _byte_order(buf)
    version = buf[:8].split(b"\0", 1)[0].decode("ascii", "replace")
    fmt = _check_format(version)
    old = fmt < NEWEST_FORMAT
    size, slots = (HEADER_SIZE_3_00, 16) if old else (HEADER_SIZE, MAX_MODS)
    if len(buf) < size:
        raise ValueError(f"too short for a format {version} Darshan log header ({len(buf)} of "
                         f"{size} bytes): truncated log")
    comp_type = buf[16]
    (partial,) = struct.unpack_from(f"{order}{'I' if old else 'Q'}", buf, 20 if old else 24)
    maps_at = 24 if old else 32
    name_map = struct.unpack_from(f"{order}QQ", buf, maps_at)
    maps = struct.unpack_from(f"{order}{2 * slots}Q", buf, maps_at + 16)
    vers = struct.unpack_from(f"{order}{slots}I", buf, maps_at + 16 + 16 * slots)
    mod_map, mod_ver, flags = [(0, 0)] * MAX_MODS, [0] * MAX_MODS, 0
    for slot in range(slots):
        mod = _today_id(fmt, slot)
        if mod < MAX_MODS:
            mod_map[mod], mod_ver[mod] = (maps[2 * slot], maps[2 * slot + 1]), vers[slot]
            flags |= ((partial >> slot) & 1) << mod
    return Header(version, comp_type, flags, (name_map[0], name_map[1]), tuple(mod_map),
                  tuple(mod_ver), order, size)


def parse_job(region: bytes, hdr: Header) -> tuple[dict[str, int | str], str,
                                                   list[tuple[str, str]]]:
    """Job record → (job fields, exe, mounts [(type, path)])."""
    with_ns = hdr.format >= NEWEST_FORMAT  # start/end nanoseconds since 3.41
    job_struct = struct.Struct(f"{hdr.byteorder}{7 if with_ns else 5}q1024s")
    if len(region) < job_struct.size:
        raise ValueError(f"truncated ({len(region)} of {job_struct.size} bytes)")
    if with_ns:
        uid, ss, sns, es, ens, nprocs, jobid, meta = job_struct.unpack_from(region, 0)
    else:
        (uid, ss, es, nprocs, jobid, meta), sns, ens = job_struct.unpack_from(region, 0), 0, 0
    rest = region[job_struct.size:].split(b"\0", 1)[0].decode("utf-8", "replace")
    exe, *mount_lines = rest.split("\n")
    mounts = [(kind, path) for kind, path in (m.split("\t", 1) for m in mount_lines if "\t" in m)]
    job: dict[str, int | str] = {"uid": uid, "start_ns": ss * 1_000_000_000 + sns, "end_ns": es * 1_000_000_000 + ens,
           "nprocs": nprocs, "jobid": jobid,
           "metadata": meta.split(b"\0", 1)[0].decode("utf-8", "replace")}
    return job, exe, mounts


def parse_names(region: bytes, hdr: Header | None = None) -> dict[int, str]:
    """Name records: u64 id followed by a NUL-terminated path, back to back (format 3.00: u64
    id, u32 length, path)."""
    order = hdr.byteorder if hdr else "<"
    if hdr is not None and hdr.format == (3, 0):
        return _parse_names_3_00(region, order)
    names: dict[int, str] = {}
    pos, n, rid_at = 0, len(region), struct.Struct(f"{order}Q")
    while pos + 8 < n:
        (rid,) = rid_at.unpack_from(region, pos)
        end = region.find(b"\0", pos + 8)
        if end < 0:
            break
        names[rid] = region[pos + 8:end].decode("utf-8", "surrogateescape")
        pos = end + 1
    return names


def _parse_names_3_00(region: bytes, order: str) -> dict[int, str]:
    names: dict[int, str] = {}
    pos, n, rec = 0, len(region), struct.Struct(f"{order}QI")
    while pos + rec.size <= n:
        rid, length = rec.unpack_from(region, pos)
        pos += rec.size
        if pos + length > n:
            break
        names[rid] = region[pos:pos + length].decode("utf-8", "surrogateescape")
        pos += length
    return names


@dataclass(frozen=True)
class DxtRecords:
    """Record headers of a DXT module buffer plus the segment bytes, headers removed."""

    layout: str
    record_id: np.ndarray  # u64 per record
    rank: np.ndarray
    hostname: list[str]
    write_count: np.ndarray  # i64 per record
    read_count: np.ndarray
    segments: np.ndarray  # structured array (SEGMENT_LAYOUTS[layout]) over all records
    #: False for DXT_MPIIO version 1, which did not record offsets
    offsets_known: bool = True


def _walk(buf: bytes, stride: int, header: struct.Struct = DXT_HEADER
          ) -> list[tuple[int, int, int, bytes, int, int]] | None:
    """Record headers if ``stride`` consumes ``buf`` exactly, else None."""
    recs, pos, n = [], 0, len(buf)
    while pos < n:
        if pos + header.size > n:
            return None
        rid, rank, _shared, host, wc, rc = header.unpack_from(buf, pos)
        if wc < 0 or rc < 0 or (wc + rc) * stride > n - pos - header.size:
            return None
        recs.append((pos, rid, rank, host, wc, rc))
        pos += header.size + (wc + rc) * stride
    return recs if pos == n else None


def _looks_modified(buf: bytes, recs: list[tuple[int, int, int, bytes, int, int]]) -> bool:
    for pos, *_r, wc, rc in recs:
        if wc + rc:
            start = pos + DXT_HEADER.size + 32
            return buf[start:start + len(PTHREAD_PREFIX)] == PTHREAD_PREFIX
    return True


def _layout_order(module: str, module_version: int) -> list[str]:
    """Layouts to try, the one this module version was written with first."""
    known = DXT_VERSIONS[module]
    if module_version not in known:
        raise ValueError(_version_problem(module, module_version, max(known)))
    if known[module_version] == "v1-32":
        return ["modified-96", "v1-32", "v2-40"]
    return list(SEGMENT_LAYOUTS)


def split_dxt(buf: bytes, module_version: int, segments: bool = True, *,
              module: str = "DXT_POSIX", byteorder: ByteOrder = "<") -> DxtRecords:
    """Find the segment layout by exact consumption and split headers from segments (without
    ``segments``, the record headers only: ``segments`` is then empty)."""
    order = _layout_order(module, module_version)
    header = DXT_HEADERS[byteorder]
    for layout in order:
        dtype = SEGMENT_LAYOUTS[layout]
        recs = _walk(buf, dtype.itemsize, header)
        if recs is None or (layout == "modified-96" and not _looks_modified(buf, recs)):
            continue
        mv = memoryview(buf)
        seg_bytes = b"".join(mv[p + header.size:p + header.size + (w + r) * dtype.itemsize]
                             for p, _i, _k, _h, w, r in recs) if segments else b""
        seg = np.frombuffer(seg_bytes, dtype=dtype.newbyteorder(byteorder))
        return DxtRecords(
            layout=layout,
            record_id=np.array([r[1] for r in recs], dtype=np.uint64),
            rank=np.array([r[2] for r in recs], dtype=np.int64),
            hostname=[r[3].split(b"\0", 1)[0].decode("utf-8", "replace") for r in recs],
            write_count=np.array([r[4] for r in recs], dtype=np.int64),
            read_count=np.array([r[5] for r in recs], dtype=np.int64),
            # a big-endian log's segments become the little-endian layout the rest expects
            segments=seg if byteorder == "<" else seg.astype(dtype),
            offsets_known=not (module == "DXT_MPIIO" and module_version == 1),
        )
    raise ValueError(f"DXT segment layout not recognised ({len(buf)} bytes; tried "
                     f"{', '.join(order)})")


def pthread_from_text(segments: np.ndarray) -> np.ndarray:
    """Decode ``pthread_id=<decimal>`` from the 64-byte field of ``modified-96`` segments,
    vectorized. Returns u64 values, 0 where the field does not hold the prefix."""
    raw = np.ascontiguousarray(segments).view(np.uint8).reshape(-1, 96)[:, 32:]
    ok = (raw[:, :len(PTHREAD_PREFIX)] == np.frombuffer(PTHREAD_PREFIX, np.uint8)).all(axis=1)
    digits = raw[:, len(PTHREAD_PREFIX):len(PTHREAD_PREFIX) + 20].astype(np.int16) - 48
    is_digit = (digits >= 0) & (digits <= 9)
    run = np.cumprod(is_digit, axis=1).astype(bool)
    value = np.zeros(len(raw), dtype=np.uint64)
    for k in range(digits.shape[1]):
        col = run[:, k]
        value[col] = value[col] * np.uint64(10) + digits[col, k].astype(np.uint64)
    value[~ok] = 0
    return value


def counter_layout(module: str, version: int) -> CounterLayout:
    layout = COUNTERS.get((module, version))
    if layout is None:
        raise ValueError(_version_problem(module, version, max(v for m, v in COUNTERS
                                                               if m == module)))
    return layout


def _version_problem(module: str, version: int, newest: int) -> str:
    # a version above the newest known comes from a Darshan newer than this reader
    return (f"module version {version} is not one this dask-correlate reads ({module} versions "
            f"1 to {newest})" + (": upgrade dask-correlate" if version > newest else ""))


def counter_records(buf: bytes, layout: CounterLayout, byteorder: ByteOrder = "<"
                    ) -> np.ndarray:
    """POSIX/STDIO records: base (id u64, rank i64) + counters i64[n] + fcounters f64[m]."""
    dtype = np.dtype([("id", "<u8"), ("rank", "<i8"), ("c", "<i8", (layout.counters,)),
                      ("f", "<f8", (layout.fcounters,))])
    if len(buf) % dtype.itemsize:
        raise ValueError(f"{len(buf)} bytes is not a whole number of {dtype.itemsize}-byte "
                         "records")
    recs = np.frombuffer(buf, dtype=dtype.newbyteorder(byteorder))
    return recs if byteorder == "<" else recs.astype(dtype)
