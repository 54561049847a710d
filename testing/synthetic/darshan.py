"""The Darshan logs of a synthetic run: every DXT segment of each process (task I/O, I/O outside
tasks, the collector's clock markers), with what correlate must attribute or leave
unattributed added to the job's accumulators."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from collectors.worker_plugin import MARKER_BYTES
from testing.synthetic.job import MS, SIZE_P, SIZES, US, Job, Worker, rank_within

_OPS = pl.Series(["read", "write"], dtype=pl.String)


def worker_segments(job: Job, wk: Worker) -> pl.DataFrame:
    """All DXT segments of one worker process (task, outside-task and markers)."""
    rng = job.rng
    ex = np.flatnonzero(job.worker == wk.index)
    ex = ex[np.argsort(job.start[ex], kind="stable")]
    k = job.k[ex]
    e = np.repeat(ex, k)
    j = rank_within(e) if len(e) else e
    kk = np.repeat(k, k)
    s, d = job.start[e], job.dur[e]
    lo = s + (j * d) // kk
    width = s + ((j + 1) * d) // kk - lo
    t0 = lo + (width * rng.uniform(0.0, 0.25, len(e))).astype(np.int64)
    t1 = lo + (width * rng.uniform(0.5, 1.0, len(e))).astype(np.int64)
    p = job.prefix[e]
    is_read = rng.random(len(e)) < job.read_share[p]
    length = SIZES[rng.choice(len(SIZES), size=len(e), p=SIZE_P)]
    off = np.cumsum(length) - length
    # each execution's offsets from 0 (executions with no segment have no first one to index)
    some = k > 0
    off -= np.repeat(off[(np.cumsum(k) - k)[some]], k[some])
    c = job.chunk[e]
    off += (c // job.fpp[p]) * (1 << 32)
    path_id = job.file_offsets[p] + c % job.fpp[p]
    tid = wk.tids[job.thread[e]]
    # exact expectations per execution
    lw = length.astype(np.float64)
    job.ex_read_bytes += np.bincount(e, lw * is_read, job.E)
    job.ex_write_bytes += np.bincount(e, lw * ~is_read, job.E)
    job.ex_read_ops += np.bincount(e, is_read.astype(np.float64), job.E)
    job.ex_write_ops += np.bincount(e, (~is_read).astype(np.float64), job.E)
    job.ex_io_ns += np.bincount(e, (t1 - t0).astype(np.float64), job.E)
    task = pl.DataFrame({
        "path": job.paths.gather(path_id), "op": _OPS.gather(pl.Series(is_read.astype(np.uint8) ^ 1)),
        "offset": off, "length": length, "t0": t0, "t1": t1,
        "thread_id": pl.Series(tid, dtype=pl.UInt64)})
    other = _outside(job, wk, ex)
    seg = pl.concat([task, other], how="vertical_relaxed")
    return seg


def _outside(job: Job, wk: Worker, ex: np.ndarray) -> pl.DataFrame:
    rng = job.rng
    n = job.n_out[wk.index]
    # 1/3 spill (offload thread), 1/3 executor-thread gaps (as many as there are
    # executions to put them before), the rest event-loop <STDERR> writes
    n1, n2 = n // 3, min(n // 3, len(ex))
    n0 = n - n1 - n2
    rows: dict[str, list[Any]] = {"path": [], "op": [], "offset": [], "length": [],
                                  "t0": [], "t1": [], "thread_id": []}

    def add(path: Any, op: Any, offset: Any, length: Any, t0: Any, t1: Any, tid: Any,
            reason: str, kind: str) -> None:
        m = len(t0)
        for name, v in zip(rows, (path, op, offset, length, t0, t1, tid), strict=True):
            rows[name].append(np.broadcast_to(np.asarray(v), (m,)))
        acc = job.unattr.setdefault((reason, kind), [0.0, 0.0, 0.0])
        acc[0] += float(np.sum(np.broadcast_to(length, (m,))))
        acc[1] += m
        acc[2] += float(np.sum(t1 - t0))

    span = (wk.setup + 1 * MS, wk.teardown - 1 * MS)
    t = np.sort(rng.integers(*span, n0))
    add("<STDERR>", "write", 0, rng.integers(60, 240, n0), t, t + rng.integers(2, 30, n0) * US,
        np.uint64(wk.main_tid), "outside any task execution" if len(ex) else
        "worker without task windows", "event-loop")
    t = np.sort(rng.integers(*span, n1))
    spill = np.array([f"{wk.local_dir}/storage/spill-{i:06d}" for i in range(n1)],
                     dtype=object)
    add(spill, np.where(np.arange(n1) % 2, "read", "write"), 0,
        rng.integers(1 << 16, 1 << 22, n1), t, t + rng.integers(50, 900, n1) * US,
        np.uint64(wk.offload_tid), "worker local directory (spill)", "other-thread")
    pe = ex[np.sort(rng.choice(len(ex), size=n2, replace=False))]
    g = job.gap[pe]
    t0 = job.start[pe] - (3 * g) // 4
    add("/data/shared/index.bin", "read", 4096 * np.arange(len(pe)), 4096, t0,
        job.start[pe] - g // 2, wk.tids[job.thread[pe]], "outside any task execution",
        "executor-outside-task")
    # collector clock markers (event loop), DXT start == marker local_time_ns
    mt = job.samples(wk) + 30 * US
    m = len(mt)
    add(job.marker_path(wk), "write", len(MARKER_BYTES) * np.arange(m), len(MARKER_BYTES),
        mt, mt + 9 * US, np.uint64(wk.main_tid), "collector clock marker", "event-loop")
    cols = {name: np.concatenate(v) if v else np.zeros(0) for name, v in rows.items()}
    return pl.DataFrame({
        "path": pl.Series(cols["path"].astype(str), dtype=pl.String),
        "op": pl.Series(cols["op"].astype(str), dtype=pl.String),
        "offset": cols["offset"].astype(np.int64), "length": cols["length"].astype(np.int64),
        "t0": cols["t0"].astype(np.int64), "t1": cols["t1"].astype(np.int64),
        "thread_id": pl.Series(cols["thread_id"].astype(np.uint64), dtype=pl.UInt64)})


def scheduler_segments(job: Job) -> pl.DataFrame:
    t = job.sched_setup + np.array([5 * MS, 6 * MS, 40 * MS], dtype=np.int64)
    length = np.array([20, 20, 4])
    tid = np.uint64(0x7F00_1234_5000)
    acc = job.unattr.setdefault(("scheduler process", "other-thread"), [0.0, 0.0, 0.0])
    acc[0] += float(length.sum())
    acc[1] += 3
    acc[2] += float(3 * 15 * US)
    return pl.DataFrame({"path": ["<STDOUT>", "<STDOUT>", "/tmp/tmpq1w2e3r4"],
                         "op": ["write"] * 3, "offset": [0, 20, 0], "length": length,
                         "t0": t, "t1": t + 15 * US,
                         "thread_id": pl.Series([tid] * 3, dtype=pl.UInt64)})


def write_log(job: Job, seg: pl.DataFrame, *, host: str, pid: int, delay_ns: int,
              start_true: int, end_true: int, exe: str) -> Path:
    """``seg`` times (t0, t1) are true times; Darshan records them on the process's clock
    (true − delay) shifted by −darshan_offset, relative to the job start."""
    from testing.darshan_writer import default_log_name, write_log

    start = start_true - delay_ns - job.darshan_offset
    rel0 = seg["t0"].to_numpy() - delay_ns - job.darshan_offset - start
    rel1 = seg["t1"].to_numpy() - delay_ns - job.darshan_offset - start
    for rel in (rel0, rel1):  # the reader's rint(s * 1e9) must give back the exact ns
        if len(rel) and not np.array_equal(np.rint((rel / 1e9) * 1e9).astype(np.int64),
                                           rel):
            raise ValueError("run too long for exact float seconds in DXT")
    seg = seg.select("path", "op", "offset", "length", "thread_id").with_columns(
        start_s=rel0 / 1e9, end_s=rel1 / 1e9)
    path = job.folder / "darshan" / default_log_name("synth", "python", pid, start)
    return write_log(path, seg, host=host, pid=pid, start_ns=start,
                     end_ns=end_true - delay_ns - job.darshan_offset, exe=exe)
