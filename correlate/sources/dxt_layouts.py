"""Byte layouts of a Darshan log, in one place: header, job record, name records, the POSIX and
STDIO per-file records, and the DXT record with its three known segment layouts.

DXT record (little endian, 104 bytes): record id u64, rank i64, shared_record i64,
hostname[64], write_count i64, read_count i64; then write_count write segments, then
read_count read segments. Segment layouts, told apart by exact consumption of the module buffer
(and the text prefix for the modified one), never by the module version (the Polaris build says
version 1 for its 96-byte segments):

- ``v1-32``: offset i64, length i64, start f64, end f64 (stock Darshan ≤ 3.4, DXT version 1)
- ``v2-40``: the same + pthread_id u64 (upstream since DXT_POSIX version 2)
- ``modified-96``: the 32 bytes + a 64-byte text field ``pthread_id=<decimal>\\0`` whose tail
  may hold leftover bytes (a modified 3.4.4 used on Polaris)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

HEADER_SIZE = 8 + 8 + 8 + 8 + 16 + 64 * 16 + 64 * 4  # 1328 for format 3.41
MAGIC = 6567223
MAX_MODS = 64
COMP_ZLIB, COMP_BZIP2, COMP_NONE = 0, 1, 2
JOB_STRUCT = struct.Struct("<7q1024s")  # uid, start s/ns, end s/ns, nprocs, jobid, metadata

MODULE_NAMES = ("NULL", "POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q",
                "LUSTRE", "STDIO", "DXT_POSIX", "DXT_MPIIO", "MDHIM", "APXC", "APMPI",
                "HEATMAP", "DFS", "DAOS")
MODULE_IDS = {name: i for i, name in enumerate(MODULE_NAMES)}

DXT_HEADER = struct.Struct("<Qqq64sqq")  # 104 bytes
PTHREAD_PREFIX = b"pthread_id="

SEGMENT_V1 = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])
SEGMENT_V2 = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8"),
                       ("pthread_id", "<u8")])
SEGMENT_MOD96 = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"),
                          ("end", "<f8"), ("extra", "V64")])
#: layout name -> segment dtype, in the order they are tried
SEGMENT_LAYOUTS = {"v2-40": SEGMENT_V2, "modified-96": SEGMENT_MOD96, "v1-32": SEGMENT_V1}

#: (number of int64 counters, number of double counters) per known module version
POSIX_SIZES = {4: (69, 17)}
STDIO_SIZES = {2: (14, 15)}
POSIX_FIELDS = {"opens": 0, "read_ops": 3, "write_ops": 4, "read_bytes": 14, "write_bytes": 15}
POSIX_FFIELDS = {"read_time_s": 8, "write_time_s": 9, "meta_time_s": 10}
STDIO_FIELDS = {"opens": 0, "read_ops": 2, "write_ops": 3, "read_bytes": 7, "write_bytes": 6}
STDIO_FFIELDS = {"read_time_s": 2, "write_time_s": 1, "meta_time_s": 0}


@dataclass(frozen=True)
class Header:
    version: str
    comp_type: int
    partial_flag: int
    name_map: tuple[int, int]
    mod_map: tuple[tuple[int, int], ...]
    mod_ver: tuple[int, ...]


def parse_header(buf: bytes) -> Header:
    """Parse the fixed header; raises ValueError with the problem."""
    if len(buf) < HEADER_SIZE:
        raise ValueError(f"too short for a Darshan log header ({len(buf)} bytes)")
    version = buf[:8].split(b"\0", 1)[0].decode("ascii", "replace")
    (magic,) = struct.unpack_from("<q", buf, 8)
    if magic != MAGIC:
        if struct.unpack_from(">q", buf, 8)[0] == MAGIC:
            raise ValueError("byte-swapped (big-endian) Darshan logs are not supported")
        raise ValueError("not a Darshan log (bad magic number)")
    if not version.startswith("3."):
        raise ValueError(f"unsupported Darshan log format version {version!r}")
    comp_type = buf[16]
    (partial,) = struct.unpack_from("<Q", buf, 24)
    name_map = struct.unpack_from("<QQ", buf, 32)
    maps = struct.unpack_from(f"<{2 * MAX_MODS}Q", buf, 48)
    vers = struct.unpack_from(f"<{MAX_MODS}I", buf, 48 + 16 * MAX_MODS)
    return Header(version, comp_type, partial, (name_map[0], name_map[1]),
                  tuple(zip(maps[0::2], maps[1::2], strict=True)), vers)


def parse_job(region: bytes) -> tuple[dict[str, int | str], str, list[tuple[str, str]]]:
    """Job record → (job fields, exe, mounts [(type, path)])."""
    uid, ss, sns, es, ens, nprocs, jobid, meta = JOB_STRUCT.unpack_from(region, 0)
    rest = region[JOB_STRUCT.size:].split(b"\0", 1)[0].decode("utf-8", "replace")
    exe, *mount_lines = rest.split("\n")
    mounts = [tuple(m.split("\t", 1)) for m in mount_lines if "\t" in m]
    job = {"uid": uid, "start_ns": ss * 1_000_000_000 + sns, "end_ns": es * 1_000_000_000 + ens,
           "nprocs": nprocs, "jobid": jobid,
           "metadata": meta.split(b"\0", 1)[0].decode("utf-8", "replace")}
    return job, exe, mounts  # type: ignore[return-value]


def parse_names(region: bytes) -> dict[int, str]:
    """Name records: u64 id followed by a NUL-terminated path, back to back."""
    names: dict[int, str] = {}
    pos, n = 0, len(region)
    while pos + 8 < n:
        (rid,) = struct.unpack_from("<Q", region, pos)
        end = region.find(b"\0", pos + 8)
        if end < 0:
            break
        names[rid] = region[pos + 8:end].decode("utf-8", "surrogateescape")
        pos = end + 1
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


def _walk(buf: bytes, stride: int) -> list[tuple[int, int, int, bytes, int, int]] | None:
    """Record headers if ``stride`` consumes ``buf`` exactly, else None."""
    recs, pos, n = [], 0, len(buf)
    while pos < n:
        if pos + DXT_HEADER.size > n:
            return None
        rid, rank, _shared, host, wc, rc = DXT_HEADER.unpack_from(buf, pos)
        if wc < 0 or rc < 0 or (wc + rc) * stride > n - pos - DXT_HEADER.size:
            return None
        recs.append((pos, rid, rank, host, wc, rc))
        pos += DXT_HEADER.size + (wc + rc) * stride
    return recs if pos == n else None


def _looks_modified(buf: bytes, recs: list[tuple[int, int, int, bytes, int, int]]) -> bool:
    for pos, *_r, wc, rc in recs:
        if wc + rc:
            start = pos + DXT_HEADER.size + 32
            return buf[start:start + len(PTHREAD_PREFIX)] == PTHREAD_PREFIX
    return True


def split_dxt(buf: bytes, module_version: int, segments: bool = True) -> DxtRecords:
    """Find the segment layout by exact consumption and split headers from segments (without
    ``segments``, the record headers only: ``segments`` is then empty)."""
    order = list(SEGMENT_LAYOUTS)
    if module_version <= 1:
        order = ["modified-96", "v1-32", "v2-40"]
    for layout in order:
        dtype = SEGMENT_LAYOUTS[layout]
        recs = _walk(buf, dtype.itemsize)
        if recs is None or (layout == "modified-96" and not _looks_modified(buf, recs)):
            continue
        mv = memoryview(buf)
        seg_bytes = b"".join(mv[p + DXT_HEADER.size:p + DXT_HEADER.size + (w + r) * dtype.itemsize]
                             for p, _i, _k, _h, w, r in recs) if segments else b""
        return DxtRecords(
            layout=layout,
            record_id=np.array([r[1] for r in recs], dtype=np.uint64),
            rank=np.array([r[2] for r in recs], dtype=np.int64),
            hostname=[r[3].split(b"\0", 1)[0].decode("utf-8", "replace") for r in recs],
            write_count=np.array([r[4] for r in recs], dtype=np.int64),
            read_count=np.array([r[5] for r in recs], dtype=np.int64),
            segments=np.frombuffer(seg_bytes, dtype=dtype),
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


def counter_records(buf: bytes, sizes: tuple[int, int]) -> np.ndarray:
    """POSIX/STDIO records: base (id u64, rank i64) + counters i64[n] + fcounters f64[m]."""
    n, m = sizes
    dtype = np.dtype([("id", "<u8"), ("rank", "<i8"), ("c", "<i8", (n,)), ("f", "<f8", (m,))])
    if len(buf) % dtype.itemsize:
        raise ValueError(f"{len(buf)} bytes is not a whole number of {dtype.itemsize}-byte "
                         "records")
    return np.frombuffer(buf, dtype=dtype)
