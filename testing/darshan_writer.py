"""Write genuine ``.darshan`` logs with known content through ``libdarshan-util``'s own writing
calls (``darshan_log_create``, ``put_job``, ``put_exe``, ``put_mounts``, ``put_namehash``,
``put_mod``, ``close``), the library PyDarshan bundles.

Used by tests (logs whose every segment is known) and by the synthetic-run generator for
benchmarks, so segment buffers are built with numpy, never one Python object per segment.

API::

    write_log(path, segments, *, host="node0", pid=1234, start_ns=..., end_ns=..., exe="python",
              layout="v2-40", posix=True, partial=False) -> Path

``segments`` is a polars DataFrame with columns ``path`` (str), ``op`` ("read"/"write"),
``offset``, ``length`` (int), ``start_s``/``end_s`` (float seconds since ``start_ns``) and
``thread_id`` (u64; ignored by layout ``v1-32``). Each path becomes one DXT_POSIX record (writes
first, then reads, each in the given order) and, with ``posix=True``, one POSIX record whose
counters agree with the segments.

``write_logs_from_truth(run, truth, layout=...)`` writes one such log per worker process from
the calls the test jobs' tasks recorded.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import socket
import struct
from functools import lru_cache
from pathlib import Path

import numpy as np
import polars as pl

from correlate.sources import dxt_layouts as L

DARSHAN_EXE_LEN = 4096 - L.JOB_STRUCT.size - 1
LAYOUT_VERSIONS = {"v1-32": 1, "v2-40": 2, "modified-96": 1}


class _Job(ctypes.Structure):
    _fields_ = [("uid", ctypes.c_int64), ("start_time_sec", ctypes.c_int64),
                ("start_time_nsec", ctypes.c_int64), ("end_time_sec", ctypes.c_int64),
                ("end_time_nsec", ctypes.c_int64), ("nprocs", ctypes.c_int64),
                ("jobid", ctypes.c_int64), ("metadata", ctypes.c_char * 1024)]


class _Mount(ctypes.Structure):
    _fields_ = [("mnt_type", ctypes.c_char * DARSHAN_EXE_LEN),
                ("mnt_path", ctypes.c_char * DARSHAN_EXE_LEN)]


class _NameRef(ctypes.Structure):
    """``darshan_name_record_ref``: a name record pointer + uthash's UT_hash_handle; the
    writer only follows ``hlink.next`` (HASH_ITER)."""

    _fields_ = [("name_record", ctypes.c_void_p), ("tbl", ctypes.c_void_p),
                ("prev", ctypes.c_void_p), ("next", ctypes.c_void_p),
                ("hh_prev", ctypes.c_void_p), ("hh_next", ctypes.c_void_p),
                ("key", ctypes.c_void_p), ("keylen", ctypes.c_uint), ("hashv", ctypes.c_uint)]


@lru_cache(maxsize=1)
def libdarshan_util() -> ctypes.CDLL:
    """The libdarshan-util shared library bundled with PyDarshan (or a system one)."""
    import darshan

    site = Path(darshan.__file__).resolve().parent.parent
    found = sorted((site / "darshan.libs").glob("libdarshan-util*.so*")) if (
        site / "darshan.libs").exists() else []
    name = str(found[0]) if found else ctypes.util.find_library("darshan-util")
    if not name:
        raise OSError("libdarshan-util not found (install the 'darshan' package)")
    lib = ctypes.CDLL(name)
    vp, i = ctypes.c_void_p, ctypes.c_int
    lib.darshan_log_create.restype = vp
    lib.darshan_log_create.argtypes = [ctypes.c_char_p, i, i]
    lib.darshan_log_put_job.argtypes = [vp, ctypes.POINTER(_Job)]
    lib.darshan_log_put_exe.argtypes = [vp, ctypes.c_char_p]
    lib.darshan_log_put_mounts.argtypes = [vp, ctypes.POINTER(_Mount), i]
    lib.darshan_log_put_namehash.argtypes = [vp, ctypes.POINTER(_NameRef)]
    lib.darshan_log_put_mod.argtypes = [vp, i, ctypes.c_char_p, i, i]
    lib.darshan_log_close.argtypes = [vp]
    return lib


def record_id(path: str) -> int:
    """A stable 64-bit record id for a path (Darshan uses its own hash; any u64 works)."""
    return int.from_bytes(hashlib.blake2b(path.encode(), digest_size=8).digest(), "little")


def _segment_array(seg: pl.DataFrame, layout: str) -> np.ndarray:
    dtype = L.SEGMENT_LAYOUTS[layout]
    out = np.zeros(seg.height, dtype=dtype)
    out["offset"], out["length"] = seg["offset"].to_numpy(), seg["length"].to_numpy()
    out["start"], out["end"] = seg["start_s"].to_numpy(), seg["end_s"].to_numpy()
    if layout == "v2-40":
        out["pthread_id"] = seg["thread_id"].fill_null(0).to_numpy()
    elif layout == "modified-96":
        text = (pl.lit("pthread_id=") + seg["thread_id"].cast(pl.String)).alias("t")
        raw = seg.select(text)["t"].cast(pl.Binary).to_list()
        out["extra"] = np.array(raw, dtype="S64").view("V64")
    return out


def _dxt_buffer(seg: pl.DataFrame, host: str, layout: str) -> tuple[bytes, list[str]]:
    seg = seg.with_row_index("_i").sort("path", pl.col("op") != "write", "_i",
                                        maintain_order=True)
    arr = _segment_array(seg, layout)
    parts: list[bytes] = []
    paths: list[str] = []
    hostname = host.encode()[:63]
    pos = 0
    for (path,), group in seg.group_by("path", maintain_order=True):
        n = group.height
        wc = int((group["op"] == "write").sum())
        parts.append(L.DXT_HEADER.pack(record_id(path), 0, 0, hostname, wc, n - wc))
        parts.append(arr[pos:pos + n].tobytes())
        paths.append(path)
        pos += n
    return b"".join(parts), paths


#: the calls besides reads and writes a test job may record (``op``): their time is Darshan's
#: metadata time; DXT does not trace them
_META = ("open", "close")


def _posix_buffer(seg: pl.DataFrame) -> bytes:
    layout = L.COUNTERS["POSIX", 4]
    n_c, n_f = layout.counters, layout.fcounters
    agg = seg.group_by("path", maintain_order=True).agg(
        reads=(pl.col("op") == "read").sum(), writes=(pl.col("op") == "write").sum(),
        rbytes=pl.col("length").filter(pl.col("op") == "read").sum(),
        wbytes=pl.col("length").filter(pl.col("op") == "write").sum(),
        rtime=(pl.col("end_s") - pl.col("start_s")).filter(pl.col("op") == "read").sum(),
        wtime=(pl.col("end_s") - pl.col("start_s")).filter(pl.col("op") == "write").sum(),
        first_read=pl.col("start_s").filter(pl.col("op") == "read").min(),
        last_read=pl.col("end_s").filter(pl.col("op") == "read").max(),
        first_write=pl.col("start_s").filter(pl.col("op") == "write").min(),
        last_write=pl.col("end_s").filter(pl.col("op") == "write").max(),
        meta=(pl.col("end_s") - pl.col("start_s")).filter(pl.col("op").is_in(_META)).sum(),
        opens=(pl.col("op") == "open").sum())
    dtype = np.dtype([("id", "<u8"), ("rank", "<i8"), ("c", "<i8", (n_c,)),
                      ("f", "<f8", (n_f,))])
    rec = np.zeros(agg.height, dtype=dtype)
    rec["id"] = [record_id(p) for p in agg["path"]]
    c, f = layout.fields, layout.ffields
    # (rows of "open" and "close": Darshan's metadata time, and its opens; else one open)
    rec["c"][:, c["opens"]] = agg["opens"].clip(lower_bound=1).to_numpy()
    rec["c"][:, c["read_ops"]] = agg["reads"].to_numpy()
    rec["c"][:, c["write_ops"]] = agg["writes"].to_numpy()
    rec["c"][:, c["read_bytes"]] = agg["rbytes"].to_numpy()
    rec["c"][:, c["write_bytes"]] = agg["wbytes"].to_numpy()
    rec["f"][:, f["read_time_s"]] = agg["rtime"].to_numpy()
    rec["f"][:, f["write_time_s"]] = agg["wtime"].to_numpy()
    rec["f"][:, f["meta_time_s"]] = agg["meta"].to_numpy()
    for name, i in layout.stamps.items():  # first_read_ns … from first_read …; 0 for none
        rec["f"][:, i] = agg[name.removesuffix("_ns")].fill_null(0).to_numpy()
    return rec.tobytes()


#: STDIO records: the columns ``write_log(stdio=...)`` takes, one row per file
STDIO_COLUMNS = ("path", "read_bytes", "write_bytes", "read_ops", "write_ops", "first_read_s",
                 "last_read_s", "first_write_s", "last_write_s")


def _stdio_buffer(stdio: pl.DataFrame) -> bytes:
    """STDIO (version 2) records of ``stdio`` (``STDIO_COLUMNS``; times in seconds since the
    job start, 0 for none)."""
    layout = L.COUNTERS["STDIO", 2]
    dtype = np.dtype([("id", "<u8"), ("rank", "<i8"), ("c", "<i8", (layout.counters,)),
                      ("f", "<f8", (layout.fcounters,))])
    rec = np.zeros(stdio.height, dtype=dtype)
    rec["id"] = [record_id(p) for p in stdio["path"]]
    rec["c"][:, layout.fields["opens"]] = 1
    for name in ("read_bytes", "write_bytes", "read_ops", "write_ops"):
        rec["c"][:, layout.fields[name]] = stdio[name].to_numpy()
    for name, i in layout.stamps.items():  # first_read_ns ... from first_read_s ...
        rec["f"][:, i] = stdio[name.removesuffix("_ns") + "_s"].fill_null(0).to_numpy()
    return rec.tobytes()


def _name_refs(paths: list[str]) -> tuple[ctypes.Array, list[ctypes.Array]]:
    records = [ctypes.create_string_buffer(record_id(p).to_bytes(8, "little") + p.encode() + b"\0")
               for p in paths]
    refs = (_NameRef * max(len(paths), 1))()
    for i, rec in enumerate(records):
        refs[i].name_record = ctypes.addressof(rec)
        refs[i].next = ctypes.addressof(refs[i + 1]) if i + 1 < len(paths) else None
    return refs, records  # records must stay alive until the hash is written


def write_log(path: Path | str, segments: pl.DataFrame, *, host: str = "node0", pid: int = 1234,
              start_ns: int = 1_700_000_000_000_000_000, end_ns: int | None = None,
              exe: str = "python job.py", uid: int = 1000, layout: str = "v2-40",
              posix: bool = True, partial: bool = False,
              metadata: str = "lib_ver=3.5.0", stdio: pl.DataFrame | None = None,
              dxt: bool = True,
              heatmap: dict[str, tuple[float, list[int], list[int]]] | None = None) -> Path:
    """Write one non-MPI log (jobid = pid) with the given DXT_POSIX segments (and STDIO
    records, ``STDIO_COLUMNS``, when given); without ``dxt`` only their POSIX counters (as
    Darshan with DXT off writes). ``heatmap``: HEATMAP records (Darshan 3.4+), per I/O module
    (``"POSIX"``, ``"STDIO"``) its bin width in seconds and its bytes written and read per
    bin."""
    path = Path(path)
    if path.exists():
        path.unlink()
    lib = libdarshan_util()
    end_ns = end_ns if end_ns is not None else start_ns + 10 * 1_000_000_000
    fd = lib.darshan_log_create(str(path).encode(), L.COMP_ZLIB, int(partial))
    if not fd:
        raise OSError(f"darshan_log_create failed for {path}")
    try:
        job = _Job(uid, start_ns // 10**9, start_ns % 10**9, end_ns // 10**9, end_ns % 10**9, 1,
                   pid, metadata.encode()[:1023])
        _check(lib.darshan_log_put_job(fd, ctypes.byref(job)), "put_job")
        _check(lib.darshan_log_put_exe(fd, exe.encode()[:DARSHAN_EXE_LEN - 1]), "put_exe")
        mounts = (_Mount * 1)(_Mount(b"ext4", b"/"))
        _check(lib.darshan_log_put_mounts(fd, mounts, 1), "put_mounts")
        named = segments["path"] if stdio is None else pl.concat([segments["path"],
                                                                  stdio["path"]])
        paths = named.unique(maintain_order=True).sort().to_list()
        paths += [f"heatmap:{m}" for m in heatmap or {}]
        refs, _keep = _name_refs(paths)
        _check(lib.darshan_log_put_namehash(fd, refs if paths else None), "put_namehash")
        if posix and segments.height:
            buf = _posix_buffer(segments)
            _check(lib.darshan_log_put_mod(fd, L.MODULE_IDS["POSIX"], buf, len(buf), 4),
                   "put_mod POSIX")
        if stdio is not None and stdio.height:  # modules go in the order of their ids
            buf = _stdio_buffer(stdio)
            _check(lib.darshan_log_put_mod(fd, L.MODULE_IDS["STDIO"], buf, len(buf), 2),
                   "put_mod STDIO")
        traced = segments.filter(~pl.col("op").is_in(_META))  # (DXT traces reads and writes)
        if dxt and traced.height:
            buf, _ = _dxt_buffer(traced, host, layout)
            _check(lib.darshan_log_put_mod(fd, L.MODULE_IDS["DXT_POSIX"], buf, len(buf),
                                           LAYOUT_VERSIONS[layout]), "put_mod DXT_POSIX")
        if heatmap:
            buf = b"".join(_heatmap_buffer(m, *h) for m, h in heatmap.items())
            _check(lib.darshan_log_put_mod(fd, L.MODULE_IDS["HEATMAP"], buf, len(buf), 1),
                   "put_mod HEATMAP")
    finally:
        lib.darshan_log_close(fd)
    return path


def _heatmap_buffer(module: str, width_s: float, writes: list[int], reads: list[int]) -> bytes:
    """One HEATMAP record as the runtime writes its in-memory struct: id (of its name record
    ``heatmap:<module>``), rank, bin width, bin count, two pointers (stale in the file), then
    the write and the read bins."""
    n = len(writes)
    assert len(reads) == n
    return (struct.pack("<QqdqQQ", record_id(f"heatmap:{module}"), -1, width_s, n, 0, 0)
            + np.asarray(writes, dtype="<i8").tobytes() + np.asarray(reads, dtype="<i8").tobytes())


def _check(ret: int, what: str) -> None:
    if ret < 0:
        raise OSError(f"libdarshan-util {what} failed")


def default_log_name(user: str, exe: str, pid: int, start_ns: int) -> str:
    """The non-MPI log name pattern: ``<user>_<exe>_id<jobid>-<pid>_<m>-<d>-<secs>-<hash>_1``."""
    import time

    t = time.gmtime(start_ns // 10**9)
    secs = t.tm_hour * 3600 + t.tm_min * 60 + t.tm_sec
    return f"{user}_{exe}_id{pid}-{pid}_{t.tm_mon}-{t.tm_mday}-{secs}-{pid * 7919}_1.darshan"


#: a test job's record of one call: (op, offset, length, t0_s, t1_s)
_TRUTH_OPS = {"op": pl.String, "offset": pl.Int64, "length": pl.Int64, "t0": pl.Float64,
              "t1": pl.Float64}


def write_logs_from_truth(run: Path, truth: list[dict], layout: str = "v2-40", *,
                          dxt: bool = True, hosts: dict[int, str] | None = None) -> None:
    """One genuine log per worker process in ``run/darshan``, holding exactly the calls its
    tasks made: ``truth`` is what the test jobs record, one dict per task with ``pid``,
    ``thread``, ``path`` and ``ops`` [(op, offset, length, t0_s, t1_s)] (op: read, write, or
    open and close, Darshan's metadata calls, counted but not traced; tasks without ``ops``
    made none). Without ``dxt`` the logs hold the POSIX counters only. ``hosts``: the host
    name of a pid's log where it is not this machine's (a worker told another name)."""
    here = socket.gethostname().split(".", 1)[0]
    # (one frame per task, its calls as rows: a dict per call is several times slower for a
    # million calls; docs/performance.md, test suite)
    ops = pl.concat([
        pl.DataFrame(t["ops"], schema=_TRUTH_OPS, orient="row", strict=False).with_columns(
            pid=pl.lit(t["pid"], pl.Int64), thread_id=pl.lit(t["thread"], pl.UInt64),
            path=pl.lit(t["path"], pl.String))
        for t in truth if t.get("ops")])
    (run / "darshan").mkdir(exist_ok=True)
    for (pid,), g in ops.group_by("pid"):
        start_ns = int((g["t0"].min() - 1.0) * 1e9)
        seg = g.with_columns(start_s=pl.col("t0") - start_ns / 1e9,
                             end_s=pl.col("t1") - start_ns / 1e9)
        write_log(run / "darshan" / f"test_python_id{pid}-{pid}_1.darshan", seg,
                  host=(hosts or {}).get(pid, here), pid=pid, start_ns=start_ns,
                  end_ns=start_ns + 600 * 10**9, layout=layout, dxt=dxt)
