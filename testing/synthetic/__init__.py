"""Synthetic but schema-exact run folders of any size, with known expected totals.

``write_run(folder, workers=W, threads=T, executions=E, segments=S)`` writes what ``collect``
would have written for a Dask job of E task executions on W worker processes × T threads: the
manifest, ``darshan.conf``, one ``procs/<role>-<host>-<pid>/`` folder per process (proc.json,
closed.json and ``<table>/part-NNNNNN.parquet`` parts cut at the collector's flush times, in its
part numbering, with its Arrow schemas and zstd), clock-marker files and genuine ``.darshan``
logs (written through libdarshan-util by ``testing.darshan_writer``, one per process, DXT v2
with pthread ids) holding S DXT segments in all. It returns an ``Expected`` with what
``correlate`` must find: per-execution bytes/ops (exact), unattributed I/O by reason, CPU per
worker, profile rows and clock offsets.

The job it describes: a chain graph ``prefixes[0] → prefixes[1] → …`` over chunks (chunk c of
every prefix runs on worker ``c % W``, so there are no worker-to-worker transfers; the client
gathers the final results at the end), executed phase by phase. On each executor thread the
executions of a phase run back to back with 20–200 µs gaps, so executions on one thread never
overlap. Every task segment lies inside its execution's window on the same pid/thread, so
exact-thread attribution is exact. Unattributed on purpose, with known totals:

- ``collector clock marker``: the collector's marker writes (event-loop thread), one per clock
  sample; their DXT start equals the marker's ``local_time_ns`` minus ``darshan_offset_ns``, so
  alignment finds exactly that offset (0 by default) with uncertainty 0;
- ``outside any task execution``: ``<STDERR>`` writes of the event loop and reads by executor
  threads in the gap before one of their executions (``worker without task windows`` for a
  worker that ran no task at all, when executions < workers);
- ``worker local directory (spill)``: spill writes/reads under the worker's local directory by
  another (offload) thread;
- ``scheduler process``: three writes in the scheduler's own log.

Scheduler rows carry ``prefix``/``group`` only when the key was still known to the scheduler at
the flush that wrote the row (as the real plugin does), so short-lived keys have none.

Everything is generated with numpy/pyarrow column operations (no Python loop per row or per
segment); Darshan logs are written in a thread pool (libdarshan-util's compression runs without
the GIL) while the process tables are generated.

    python -m testing.synthetic OUT --executions 100000 --segments 1000000 --workers 8 --threads 4
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from correlate.schema import RUN_FORMAT_VERSION, Table
from correlate.schema import run as raw

#: collectors.worker_plugin.MARKER_BYTES (not imported: that module imports distributed)
MARKER_BYTES = b"dask-correlate-clock-marker\n"
DEFAULT_PREFIXES = ("load-chunk", "transform", "store-chunk")
START_NS = 1_790_000_000_000_000_000
#: the scheduler runs on a head node of its own: every worker clock is estimated (a worker on
#: the scheduler's host would share its clock, offset 0)
SCHED_HOST = "head"
US, MS, SEC = 1_000, 1_000_000, 1_000_000_000
SITE = "/opt/venv/lib/python3.11/site-packages"
WORKER_EXE = ("/opt/venv/bin/python -c from multiprocessing.spawn import spawn_main; "
              "spawn_main(tracker_fd=5, pipe_handle=7) --multiprocessing-fork")
SIZES = np.array([4096, 16384, 65536, 262144, 1048576], dtype=np.int64)
SIZE_P = np.array([0.3, 0.25, 0.25, 0.15, 0.05])
#: per-execution functions of the Yappi profile (module, name, file, line); the task's own
#: function (``pipeline.<prefix>``) and a helper are added per prefix
WRAPPERS = (("worker", "_run_task", f"{SITE}/distributed/worker.py", 2760),
            ("worker", "_run_task_simple", f"{SITE}/distributed/worker.py", 2794),
            ("_task_spec", "Task.__call__", f"{SITE}/dask/_task_spec.py", 753))
PIPELINE = "/home/user/jobs/pipeline.py"

# scheduler/worker transition row kinds: (start, finish)
_S_KINDS = (("released", "waiting"), ("waiting", "queued"), ("queued", "processing"),
            ("waiting", "processing"), ("processing", "memory"), ("memory", "released"),
            ("released", "forgotten"), ("memory", "forgotten"))
_W_KINDS = (("released", "waiting"), ("waiting", "ready"), ("ready", "executing"),
            ("executing", "memory"), ("memory", "released"), ("released", "forgotten"))


@dataclass(frozen=True)
class Expected:
    """What ``correlate`` must report for the generated run. Byte and op counts are exact;
    times (``*_s``) are exact sums of integer nanoseconds, compare them with a tolerance."""

    folder: str
    workers: int
    threads: int
    hosts: int
    executions: int
    segments: int
    task_segments: int
    executions_with_io: int
    files: int
    duration_s: float
    #: all DXT segments: bytes, ops, io_time_s
    total: dict[str, float]
    #: task I/O (exact-thread): bytes, ops, read/write bytes and ops, io_time_s
    attributed: dict[str, float]
    unattributed: dict[str, float]
    unattributed_by_reason: dict[str, dict[str, float]]
    unattributed_by_thread_kind: dict[str, dict[str, float]]
    per_prefix: dict[str, dict[str, float]]
    #: task_cpu_s, task_wall_s, per_worker [{host, pid, process_cpu_s, task_cpu_s,
    #: outside_tasks_cpu_s}]
    cpu: dict[str, Any]
    #: rows (worker_func_stats), task_rows (tagged with an execution = task_functions rows),
    #: task_ncall, untagged_rows
    profile: dict[str, int]
    #: the clock offsets correlate must estimate: [{host, pid, domain, offset_ns}]
    clocks: list[dict[str, Any]]
    #: rows written per run-folder table (all processes)
    rows: dict[str, int]
    #: one row per execution: key, prefix, host, pid, thread_id, execution_seq, cpu_s,
    #: read_bytes, write_bytes, read_ops, write_ops, io_time_s
    per_execution: pl.DataFrame = field(repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("per_execution")
        return out


@dataclass
class _Worker:
    index: int
    host: str
    ip: str
    pid: int
    port: int
    delay_ns: int  # scheduler clock − worker clock
    main_tid: int
    offload_tid: int
    tids: np.ndarray  # executor thread ids (uint64), one per thread
    local_dir: str
    process_start: int  # true (scheduler-clock) times below
    setup: int
    teardown: int = 0

    @property
    def address(self) -> str:
        return f"tcp://{self.ip}:{self.port}"

    @property
    def dirname(self) -> str:
        return f"worker-{self.host}-{self.pid}"


# ---- small helpers ---------------------------------------------------------------------------


def _group_starts(sorted_ids: np.ndarray) -> np.ndarray:
    """Boolean mask of the first row of each run of equal ids."""
    first = np.ones(len(sorted_ids), dtype=bool)
    first[1:] = sorted_ids[1:] != sorted_ids[:-1]
    return first


def _rank_within(sorted_ids: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal ids (ids sorted)."""
    idx = np.arange(len(sorted_ids), dtype=np.int64)
    start = np.where(_group_starts(sorted_ids), idx, 0)
    return idx - np.maximum.accumulate(start) if len(idx) else idx


def _flush_index(times: np.ndarray, flushes: np.ndarray) -> np.ndarray:
    """Index of the flush that writes a row appended at ``times`` (len(flushes) = close)."""
    return np.searchsorted(flushes, times, side="left")


def _write(path: Path, table: Table, arrays: list[Any]) -> None:
    schema = table.arrow_schema()
    cols = [a if isinstance(a, pa.Array | pa.ChunkedArray) else pa.array(a, type=f.type)
            for a, f in zip(arrays, schema, strict=True)]
    cols = [c.cast(f.type) if c.type != f.type else c for c, f in zip(cols, schema, strict=True)]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_arrays(cols, schema=schema), path, compression="zstd")


_OPS = pl.Series(["read", "write"], dtype=pl.String)


def _nulls(n: int, type_: pa.DataType) -> pa.Array:
    return pa.nulls(n, type=type_)


def _json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))


def _float_str(ns: np.ndarray) -> pa.Array:
    """Epoch seconds as text, the way Dask's stimulus ids print ``time()``."""
    return pc.cast(pa.array(ns / 1e9), pa.string())


class _PartWriter:
    """Cuts each table at the collector's flush times and numbers parts like ``ProcessSink``:
    one counter per process, incremented per non-empty table part, tables in sink order within
    each flush."""

    def __init__(self, proc_dir: Path, flushes: np.ndarray) -> None:
        self.proc_dir = proc_dir
        self.flushes = flushes
        self.tables: list[tuple[Table, np.ndarray, Callable[[int, int], list[Any]]]] = []

    def add(self, table: Table, append_times: np.ndarray,
            build: Callable[[int, int], list[Any]]) -> None:
        """``append_times`` sorted; ``build(lo, hi)`` returns the columns of rows lo..hi."""
        self.tables.append((table, append_times, build))

    def write(self) -> dict[str, int]:
        cuts = [np.searchsorted(_flush_index(t, self.flushes),
                                np.arange(len(self.flushes) + 2)) for _, t, _ in self.tables]
        part, rows = 0, {}
        for k in range(len(self.flushes) + 1):
            for (table, _t, build), cut in zip(self.tables, cuts, strict=True):
                lo, hi = int(cut[k]), int(cut[k + 1])
                if hi > lo:
                    part += 1
                    _write(self.proc_dir / table.name / f"part-{part:06d}.parquet", table,
                           build(lo, hi))
        for table, t, _ in self.tables:
            rows[table.name] = len(t)
        return rows


# ---- the generator ---------------------------------------------------------------------------


class _Run:
    def __init__(self, folder: Path, *, workers: int, threads: int, executions: int,
                 segments: int, prefixes: Sequence[str], hosts: int, seed: int, profile: str,
                 flush_interval_s: float, darshan_offset_ns: int,
                 files_per_prefix: int | None, outside_share: float) -> None:
        if workers < 1 or threads < 1 or executions < 1 or not prefixes or hosts < 1:
            raise ValueError("workers, threads, executions, hosts and prefixes must be ≥ 1")
        if profile not in ("yappi", "yappi-cpu", "off"):
            raise ValueError("profile must be yappi, yappi-cpu or off")
        self.folder = folder.resolve()
        self.W, self.T, self.E, self.S = workers, threads, executions, segments
        self.prefixes = tuple(prefixes)
        self.P = len(self.prefixes)
        self.hosts = min(hosts, workers)
        self.seed = seed
        self.profile = profile
        self.interval = int(flush_interval_s * SEC)
        self.darshan_offset = int(darshan_offset_ns)
        self.files_per_prefix = files_per_prefix
        self.outside_share = outside_share
        self.rng = np.random.default_rng(seed)
        self.t0 = START_NS + seed * 3_600 * SEC
        self.rows: dict[str, int] = {}
        self.unattr: dict[tuple[str, str], list[float]] = {}

    # -- layout -------------------------------------------------------------------------------

    def layout(self) -> None:
        rng, W, T, P, E = self.rng, self.W, self.T, self.P, self.E
        n_p = np.array([E // P + (p < E % P) for p in range(P)], dtype=np.int64)
        self.n_p = n_p
        self.offsets = np.concatenate([[0], np.cumsum(n_p)])
        prefix = np.repeat(np.arange(P, dtype=np.int64), n_p)
        chunk = np.arange(E, dtype=np.int64) - self.offsets[prefix]
        self.prefix, self.chunk = prefix, chunk
        self.worker = (chunk % W).astype(np.int64)
        self.thread = ((chunk // W) % T).astype(np.int64)
        tokens = [hashlib.md5(f"{self.seed}-{p}-{name}".encode()).hexdigest()
                  for p, name in enumerate(self.prefixes)]
        self.groups = pa.array([f"{name}-{tok}" for name, tok in zip(self.prefixes, tokens,
                                                                     strict=True)])
        self.prefix_names = pa.array(list(self.prefixes))
        self.keys = pc.binary_join_element_wise(
            "('", self.groups.take(pa.array(prefix)), "', ", pc.cast(pa.array(chunk),
                                                                     pa.string()), ")", "")
        # processes
        self.sched_pid = 20_000 + 7 * self.seed % 1000
        self.sched_start = self.t0 + 300 * MS
        self.sched_setup = self.sched_start + 600 * MS
        self.workers: list[_Worker] = []
        for w in range(W):
            h = w % self.hosts
            pstart = self.t0 + 1 * SEC + w * 20 * MS
            base = 0x7F00_0000_0000 + int(rng.integers(0, 1 << 28)) * 0x1000  # like ASLR
            tids = np.array([base + 0x7000_0000 - (t + 1) * 0xC0_2000 for t in range(T)],
                            dtype=np.uint64)
            self.workers.append(_Worker(
                index=w, host=f"node{h}", ip=f"10.0.{h // 250}.{h % 250 + 1}",
                pid=self.sched_pid + 8 + 5 * w, port=40_000 + 37 * w,
                delay_ns=(1 if w % 2 else -1) * (w + 1) * 731 * US, main_tid=base + 0x7FFF_F000,
                offload_tid=base + 0x7000_0000 - (T + 1) * 0xC0_2000, tids=tids,
                local_dir="/tmp/dask-scratch-space/worker-"
                          + hashlib.md5(f"{self.seed}-worker-{w}".encode()).hexdigest()[:8],
                process_start=pstart, setup=pstart + 600 * MS))
        self.client_t = max(wk.setup for wk in self.workers) + 100 * MS
        self.graph_t = self.client_t + 200 * MS
        self._phases()

    def _phases(self) -> None:
        rng, W, T, E = self.rng, self.W, self.T, self.E
        start = np.empty(E, dtype=np.int64)
        dur = np.empty(E, dtype=np.int64)
        gap = np.empty(E, dtype=np.int64)
        step = max(1, 10 * MS // E)
        phase_start = self.graph_t + E * step + 20 * MS
        for p in range(self.P):
            lo, hi = int(self.offsets[p]), int(self.offsets[p + 1])
            c = self.chunk[lo:hi]
            slot = (c % W) * T + (c // W) % T
            n = hi - lo
            if not n:
                continue
            d = rng.integers((1 + p % 3) * MS, (4 + 3 * (p % 3)) * MS, n)
            g = rng.integers(20 * US, 200 * US, n)
            order = np.argsort(slot, kind="stable")  # chunks ascending within a slot
            stepd = (g + d)[order]
            cs = np.cumsum(stepd)
            first = _group_starts(slot[order])
            base = np.maximum.accumulate(np.where(first, cs - stepd, 0))
            s = np.empty(n, dtype=np.int64)
            s[order] = phase_start + cs - base - d[order]
            start[lo:hi], dur[lo:hi], gap[lo:hi] = s, d, g
            phase_start = int((s + d).max()) + 1 * MS
        self.start, self.dur, self.gap = start, dur, gap
        self.stop = start + dur
        self.cpu = (dur * rng.uniform(0.3, 0.95, E)).astype(np.int64)
        self.nbytes = rng.integers(1024, 1 << 20, E)
        # per-process execution_seq: start order within the worker
        order = np.lexsort((start, self.worker))
        self.seq = np.empty(E, dtype=np.int64)
        self.seq[order] = _rank_within(self.worker[order]) + 1
        # scheduler timeline (true = scheduler clock)
        self.t_graph_key = self.graph_t + np.arange(E, dtype=np.int64) * step
        self.t_mem = self.stop + 100 * US
        has_dep = self.prefix > 0
        dep = np.where(has_dep, np.arange(E) - (self.offsets[self.prefix] -
                                               self.offsets[np.maximum(self.prefix - 1, 0)]), -1)
        self.dep = dep
        self.t_proc = np.where(has_dep, self.t_mem[np.maximum(dep, 0)] + 20 * US,
                               start - 150 * US)
        nxt = np.full(E, -1, dtype=np.int64)
        nxt[dep[has_dep]] = np.flatnonzero(has_dep)
        self.next = nxt
        self.final = nxt < 0
        last_stop = int(self.stop.max())
        self.gather_t = last_stop + 5 * MS
        # client gathers the final results: batches of ≤1000 keys per worker
        fin = np.flatnonzero(self.final)
        fin = fin[np.lexsort((self.chunk[fin], self.worker[fin]))]
        self.fin = fin
        self.fin_batch = _rank_within(self.worker[fin]) // 1000
        nb = int(self.fin_batch.max()) + 1 if len(fin) else 0
        self.release_t = self.gather_t + nb * MS + 10 * MS
        self.t_release = np.where(self.final, 0, self.t_mem[np.maximum(nxt, 0)] + 10 * US)
        rank_final = np.cumsum(self.final) - 1
        self.t_release = np.where(self.final, self.release_t + rank_final * step,
                                  self.t_release)
        self.t_forgot = np.where(self.final, self.t_release, self.t_release + 5 * US)
        for wk in self.workers:
            wk.teardown = int(self.t_release.max()) + 200 * MS + 3 * MS * wk.index
        self.sched_close = max(wk.teardown for wk in self.workers) + 100 * MS
        self.end = self.sched_close + 300 * MS

    # -- segment budget -----------------------------------------------------------------------

    def samples(self, wk: _Worker) -> np.ndarray:
        half = max(self.interval // 2, 1)
        n = (wk.teardown - wk.setup - 1) // half + 1
        return np.concatenate([wk.setup + half * np.arange(n, dtype=np.int64), [wk.teardown]])

    def budget(self) -> None:
        self.n_markers = [len(self.samples(wk)) for wk in self.workers]
        self.n_sched = 3
        n_out = max(3 * self.W, int(round(self.S * self.outside_share)))
        self.n_out = [n_out // self.W + (w < n_out % self.W) for w in range(self.W)]
        fixed = sum(self.n_markers) + self.n_sched + n_out
        self.n_task = self.S - fixed
        if self.n_task < 0:
            raise ValueError(f"segments={self.S} is less than the {fixed} segments outside "
                             "tasks this run needs (markers, scheduler, outside-task I/O)")
        self.k = self.rng.multinomial(self.n_task, np.full(self.E, 1.0 / self.E))
        fpp = self.files_per_prefix or 1000
        self.fpp = np.minimum(self.n_p, fpp)
        self.file_offsets = np.concatenate([[0], np.cumsum(self.fpp)])
        self.paths = pl.Series("path", [
            f"/data/{name}/part-{f:05d}.bin" for p, name in enumerate(self.prefixes)
            for f in range(int(self.fpp[p]))], dtype=pl.String)
        # read share of a prefix's segments: first prefix reads, last writes, between mixed
        self.read_share = (np.linspace(1.0, 0.0, self.P) if self.P > 1 else np.array([0.5]))
        E = self.E
        self.ex_read_bytes = np.zeros(E)
        self.ex_write_bytes = np.zeros(E)
        self.ex_read_ops = np.zeros(E)
        self.ex_write_ops = np.zeros(E)
        self.ex_io_ns = np.zeros(E)

    # -- Darshan ------------------------------------------------------------------------------

    def worker_segments(self, wk: _Worker) -> pl.DataFrame:
        """All DXT segments of one worker process (task, outside-task and markers)."""
        rng = self.rng
        ex = np.flatnonzero(self.worker == wk.index)
        ex = ex[np.argsort(self.start[ex], kind="stable")]
        k = self.k[ex]
        e = np.repeat(ex, k)
        j = _rank_within(e) if len(e) else e
        kk = np.repeat(k, k)
        s, d = self.start[e], self.dur[e]
        lo = s + (j * d) // kk
        width = s + ((j + 1) * d) // kk - lo
        t0 = lo + (width * rng.uniform(0.0, 0.25, len(e))).astype(np.int64)
        t1 = lo + (width * rng.uniform(0.5, 1.0, len(e))).astype(np.int64)
        p = self.prefix[e]
        is_read = rng.random(len(e)) < self.read_share[p]
        length = SIZES[rng.choice(len(SIZES), size=len(e), p=SIZE_P)]
        off = np.cumsum(length) - length
        off -= np.repeat(off[np.cumsum(k) - k], k) if len(e) else off
        c = self.chunk[e]
        off += (c // self.fpp[p]) * (1 << 32)
        path_id = self.file_offsets[p] + c % self.fpp[p]
        tid = wk.tids[self.thread[e]]
        # exact expectations per execution
        lw = length.astype(np.float64)
        self.ex_read_bytes += np.bincount(e, lw * is_read, self.E)
        self.ex_write_bytes += np.bincount(e, lw * ~is_read, self.E)
        self.ex_read_ops += np.bincount(e, is_read.astype(np.float64), self.E)
        self.ex_write_ops += np.bincount(e, (~is_read).astype(np.float64), self.E)
        self.ex_io_ns += np.bincount(e, (t1 - t0).astype(np.float64), self.E)
        task = pl.DataFrame({
            "path": self.paths.gather(path_id), "op": _OPS.gather(pl.Series(is_read.astype(np.uint8) ^ 1)),
            "offset": off, "length": length, "t0": t0, "t1": t1,
            "thread_id": pl.Series(tid, dtype=pl.UInt64)})
        other = self._outside(wk, ex)
        seg = pl.concat([task, other], how="vertical_relaxed")
        return seg

    def _outside(self, wk: _Worker, ex: np.ndarray) -> pl.DataFrame:
        rng = self.rng
        n = self.n_out[wk.index]
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
            acc = self.unattr.setdefault((reason, kind), [0.0, 0.0, 0.0])
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
        g = self.gap[pe]
        t0 = self.start[pe] - (3 * g) // 4
        add("/data/shared/index.bin", "read", 4096 * np.arange(len(pe)), 4096, t0,
            self.start[pe] - g // 2, wk.tids[self.thread[pe]], "outside any task execution",
            "executor-outside-task")
        # collector clock markers (event loop), DXT start == marker local_time_ns
        mt = self.samples(wk) + 30 * US
        m = len(mt)
        add(self.marker_path(wk), "write", len(MARKER_BYTES) * np.arange(m), len(MARKER_BYTES),
            mt, mt + 9 * US, np.uint64(wk.main_tid), "collector clock marker", "event-loop")
        cols = {name: np.concatenate(v) if v else np.zeros(0) for name, v in rows.items()}
        return pl.DataFrame({
            "path": pl.Series(cols["path"].astype(str), dtype=pl.String),
            "op": pl.Series(cols["op"].astype(str), dtype=pl.String),
            "offset": cols["offset"].astype(np.int64), "length": cols["length"].astype(np.int64),
            "t0": cols["t0"].astype(np.int64), "t1": cols["t1"].astype(np.int64),
            "thread_id": pl.Series(cols["thread_id"].astype(np.uint64), dtype=pl.UInt64)})

    def marker_path(self, wk: _Worker) -> str:
        return str(self.folder / "darshan" / "markers" / f"{wk.host}-{wk.pid}")

    def write_log(self, seg: pl.DataFrame, *, host: str, pid: int, delay_ns: int,
                  start_true: int, end_true: int, exe: str) -> Path:
        """``seg`` times (t0, t1) are true times; Darshan records them on the process's clock
        (true − delay) shifted by −darshan_offset, relative to the job start."""
        from testing.darshan_writer import default_log_name, write_log

        start = start_true - delay_ns - self.darshan_offset
        rel0 = seg["t0"].to_numpy() - delay_ns - self.darshan_offset - start
        rel1 = seg["t1"].to_numpy() - delay_ns - self.darshan_offset - start
        for rel in (rel0, rel1):  # the reader's rint(s * 1e9) must give back the exact ns
            if len(rel) and not np.array_equal(np.rint((rel / 1e9) * 1e9).astype(np.int64),
                                               rel):
                raise ValueError("run too long for exact float seconds in DXT")
        seg = seg.select("path", "op", "offset", "length", "thread_id").with_columns(
            start_s=rel0 / 1e9, end_s=rel1 / 1e9)
        path = self.folder / "darshan" / default_log_name("synth", "python", pid, start)
        return write_log(path, seg, host=host, pid=pid, start_ns=start,
                         end_ns=end_true - delay_ns - self.darshan_offset, exe=exe)

    def scheduler_segments(self) -> pl.DataFrame:
        t = self.sched_setup + np.array([5 * MS, 6 * MS, 40 * MS], dtype=np.int64)
        length = np.array([20, 20, 4])
        tid = np.uint64(0x7F00_1234_5000)
        acc = self.unattr.setdefault(("scheduler process", "other-thread"), [0.0, 0.0, 0.0])
        acc[0] += float(length.sum())
        acc[1] += 3
        acc[2] += float(3 * 15 * US)
        return pl.DataFrame({"path": ["<STDOUT>", "<STDOUT>", "/tmp/tmpq1w2e3r4"],
                             "op": ["write"] * 3, "offset": [0, 20, 0], "length": length,
                             "t0": t, "t1": t + 15 * US,
                             "thread_id": pl.Series([tid] * 3, dtype=pl.UInt64)})

    # -- worker tables ------------------------------------------------------------------------

    def write_worker(self, wk: _Worker) -> tuple[float, float, int]:
        """The worker's process folder; returns (process_cpu_s, task_cpu_s, func_stats rows)."""
        pdir = self.folder / "procs" / wk.dirname
        pdir.mkdir(parents=True, exist_ok=True)
        loc = -wk.delay_ns  # true → worker clock
        n_flush = max(0, (wk.teardown - wk.setup - 1) // self.interval)
        flushes = wk.setup + self.interval * np.arange(1, n_flush + 1, dtype=np.int64)
        writer = _PartWriter(pdir, flushes)
        ex = np.flatnonzero(self.worker == wk.index)
        # task_executions, appended at stop
        ex = ex[np.argsort(self.stop[ex], kind="stable")]
        tids = wk.tids[self.thread[ex]]
        native = wk.pid + 20 + self.thread[ex]

        def executions(lo: int, hi: int) -> list[Any]:
            i = ex[lo:hi]
            return [self.seq[i], self.keys.take(pa.array(i)), tids[lo:hi], native[lo:hi],
                    self.start[i] + loc, self.stop[i] + loc, self.cpu[i],
                    pa.repeat("ok", hi - lo)]

        writer.add(raw.EXECUTIONS_RAW, self.stop[ex], executions)
        # worker_transitions
        t_rw = self.t_proc[ex] + 50 * US
        wt = np.stack([t_rw, t_rw + 5 * US, self.start[ex] - 20 * US, self.stop[ex] + 30 * US,
                       self.t_release[ex] + 50 * US, self.t_release[ex] + 55 * US]).ravel()
        wkind = np.repeat(np.arange(6, dtype=np.int8), len(ex))
        wkey = np.tile(ex, 6)
        order = np.argsort(wt, kind="stable")
        wt, wkind, wkey = wt[order], wkind[order], wkey[order]
        w_start = pa.array([a for a, _ in _W_KINDS])
        w_finish = pa.array([b for _, b in _W_KINDS])

        def transitions(lo: int, hi: int) -> list[Any]:
            kd = pa.array(wkind[lo:hi])
            return [wt[lo:hi] + loc, self.keys.take(pa.array(wkey[lo:hi])), w_start.take(kd),
                    w_finish.take(kd), _nulls(hi - lo, pa.string())]

        writer.add(raw.WORKER_TRANSITIONS, wt, transitions)
        # outgoing transfers to the client (read by the periodic callback after they end)
        samples = self.samples(wk)
        fin = self.fin[self.worker[self.fin] == wk.index]
        batch = self.fin_batch[self.worker[self.fin] == wk.index]
        nb = int(batch.max()) + 1 if len(batch) else 0
        tr_start = self.gather_t + np.arange(nb, dtype=np.int64) * MS
        nkeys = np.bincount(batch, minlength=nb)
        total = np.bincount(batch, self.nbytes[fin], minlength=nb).astype(np.int64)
        tr_stop = tr_start + 500 * US + nkeys * US
        tr_seen = samples[np.minimum(np.searchsorted(samples, tr_stop), len(samples) - 1)]
        seqs = np.arange(1, nb + 1, dtype=np.int64)
        writer.add(raw.TRANSFERS_RAW, tr_seen, lambda lo, hi: [
            seqs[lo:hi], pa.repeat("outgoing", hi - lo), _nulls(hi - lo, pa.string()),
            total[lo:hi], total[lo:hi] + 600 + 40 * nkeys[lo:hi], tr_start[lo:hi],
            tr_stop[lo:hi], nkeys[lo:hi]])
        key_seen = tr_seen[batch] if nb else np.zeros(0, dtype=np.int64)
        writer.add(raw.TRANSFER_KEYS_RAW, key_seen, lambda lo, hi: [
            batch[lo:hi] + 1, self.keys.take(pa.array(fin[lo:hi])), self.nbytes[fin[lo:hi]]])
        # clock samples: the first one before any heartbeat (Dask's defaults 0.0 / 0.001)
        m = len(samples)
        noise = self.rng.integers(-300, 301, m) * US
        delay_s = np.round((wk.delay_ns + noise) / 1e9, 6)
        latency = np.round(self.rng.uniform(0.001, 0.04, m), 6)
        delay_s[0], latency[0] = 0.0, 0.001
        # what correlate estimates: the median of the distinct samples after the first
        distinct = np.unique(delay_s[delay_s != 0.0])
        self._worker_clocks.append({"host": wk.host, "pid": wk.pid, "domain": "worker",
                                    "offset_ns": int(np.rint(np.median(distinct) * 1e9)),
                                    "true_offset_ns": wk.delay_ns, "samples": len(distinct)})
        stops = self.stop[ex]  # sorted
        task_cpu_cum = np.concatenate([[0], np.cumsum(self.cpu[ex])])
        done = task_cpu_cum[np.searchsorted(stops, samples, side="right")] / 1e9
        proc_cpu = np.floor((0.5 + done + 0.02 * (samples - wk.setup) / 1e9) * 100) / 100
        anchor_perf = 3_600 * SEC + wk.index * 70 * MS
        perf = anchor_perf + (samples - wk.setup)
        writer.add(raw.CLOCK_SAMPLES_RAW, samples, lambda lo, hi: [
            samples[lo:hi] + loc, perf[lo:hi], delay_s[lo:hi], latency[lo:hi],
            proc_cpu[lo:hi]])
        mt = samples + 30 * US
        mpath = self.marker_path(wk)
        writer.add(raw.CLOCK_MARKERS_RAW, mt, lambda lo, hi: [
            mt[lo:hi] + loc, pa.repeat(mpath, hi - lo),
            len(MARKER_BYTES) * np.arange(lo, hi), np.full(hi - lo, len(MARKER_BYTES))])
        rows = writer.write()
        Path(mpath).parent.mkdir(parents=True, exist_ok=True)
        Path(mpath).write_bytes(MARKER_BYTES * m)
        nfs = self.func_stats(wk, pdir, ex, m)
        rows["worker_func_stats"] = nfs
        _json(pdir / "proc.json", {
            "format_version": RUN_FORMAT_VERSION, "pid": wk.pid, "host": wk.host,
            "started_ns": wk.setup + loc - 1 * US, "anchor_time_ns": wk.setup + loc,
            "anchor_perf_counter_ns": anchor_perf, "role": "worker", "address": wk.address,
            "name": str(wk.index), "nthreads": self.T, "memory_limit": 4 * 1024 ** 3,
            "local_directory": wk.local_dir, "main_thread_id": wk.main_tid,
            "profile": self.profile})
        _json(pdir / "closed.json", {
            "closed_ns": wk.teardown + loc + 2 * MS, "rows": rows,
            "dropped": dict.fromkeys(rows, 0), "hook_errors": {}, "executions_not_timed": 0,
            "transfers_lost_to_dask_log_limit": {"incoming": 0, "outgoing": 0}})
        for name, n in rows.items():
            self.rows[name] = self.rows.get(name, 0) + n
        return float(proc_cpu[-1]), float(self.cpu[ex].sum() / 1e9), nfs

    def func_stats(self, wk: _Worker, pdir: Path, ex: np.ndarray, n_samples: int) -> int:
        if self.profile == "off":
            return 0
        ex = np.sort(ex)
        n, F = len(ex), 5
        p = self.prefix[ex]
        fn = [name.replace("-", "_") for name in self.prefixes]
        funcs = ([*WRAPPERS] + [("pipeline", f, PIPELINE, 20 + 30 * i) for i, f in enumerate(fn)]
                 + [("pipeline", f"_{f}_block", PIPELINE, 35 + 30 * i) for i, f in enumerate(fn)]
                 + [("worker", "Worker.heartbeat", f"{SITE}/distributed/worker.py", 1291),
                    ("batched", "BatchedSend._background_send", f"{SITE}/distributed/batched.py",
                     88),
                    ("threadpoolexecutor", "_worker",
                     f"{SITE}/distributed/threadpoolexecutor.py", 40)])
        P = self.P
        fid = np.stack([np.zeros(n, np.int64), np.ones(n, np.int64), np.full(n, 2),
                        3 + p, 3 + P + p]).T.ravel()
        d = np.repeat(self.dur[ex] / 1e9, F)
        clock_scale = np.repeat(self.cpu[ex] / np.maximum(self.dur[ex], 1), F) if \
            self.profile == "yappi-cpu" else 1.0
        slot = np.tile(np.arange(F), n)
        ncall = np.where(slot == 4, self.rng.integers(1, 21, n * F), 1)
        share_tot = np.array([0.999, 0.998, 0.997, 0.99, 0.6])[slot]
        share_sub = np.array([2e-4, 3e-4, 5e-4, 0.39, 0.6])[slot]
        # untagged rows: the event loop and each executor thread's loop (execution_seq 0)
        life = (wk.teardown - wk.setup) / 1e9
        u_fid = np.array([3 + 2 * P, 4 + 2 * P] + [5 + 2 * P] * self.T)
        u_tid = np.concatenate([[wk.main_tid, wk.main_tid], wk.tids]).astype(np.uint64)
        u_ncall = np.array([n_samples, n_samples * 3] + [1] * self.T)
        u_ttot = np.array([0.002 * n_samples, 0.01 * life] + [life * 0.9] * self.T)
        fid_all = np.concatenate([fid, u_fid])
        tid_all = np.concatenate([np.repeat(wk.tids[self.thread[ex]], F), u_tid])
        seq_all = np.concatenate([np.repeat(self.seq[ex], F), np.zeros(len(u_fid), np.int64)])
        ncall_all = np.concatenate([ncall, u_ncall])
        ttot = np.concatenate([d * share_tot * clock_scale, u_ttot])
        tsub = np.concatenate([d * share_sub * clock_scale, u_ttot * 0.1])
        f = pa.array(fid_all)
        col = [pa.array([x[i] for x in funcs]) for i in range(4)]
        rows = len(fid_all)
        clock = "cpu" if self.profile == "yappi-cpu" else "wall"
        _write(pdir / raw.FUNC_STATS_RAW.name / "snapshot.parquet", raw.FUNC_STATS_RAW, [
            pa.repeat("yappi", rows), pa.repeat(clock, rows), tid_all, seq_all,
            col[0].take(f), col[1].take(f), col[2].take(f), col[3].take(f), ncall_all,
            ttot, tsub])
        self.prof_task_rows += n * F
        self.prof_task_ncall += int(ncall.sum())
        self.prof_untagged += len(u_fid)
        return rows

    # -- scheduler tables ---------------------------------------------------------------------

    def write_scheduler(self) -> None:
        pdir = self.folder / "procs" / f"scheduler-{SCHED_HOST}-{self.sched_pid}"
        pdir.mkdir(parents=True, exist_ok=True)
        n_flush = max(0, (self.sched_close - self.sched_setup - 1) // self.interval)
        flushes = self.sched_setup + self.interval * np.arange(1, n_flush + 1, dtype=np.int64)
        writer = _PartWriter(pdir, flushes)
        E = self.E
        idx = np.arange(E, dtype=np.int64)
        root, final = self.prefix == 0, self.final
        t_g = self.t_graph_key
        parts = [  # (keys, time, kind, stimulus time or -1 (update-graph) / -2 (client))
            (idx, t_g, 0, np.full(E, -1)),
            (idx[root], t_g[root] + 5 * US, 1, np.full(int(root.sum()), -1)),
            (idx[root], self.t_proc[root], 2, self.t_proc[root]),
            (idx[~root], self.t_proc[~root], 3, self.stop[self.dep[~root]]),
            (idx, self.t_mem, 4, self.stop),
            (idx[~final], self.t_release[~final], 5, self.stop[self.next[~final]]),
            (idx[~final], self.t_forgot[~final], 6, self.stop[self.next[~final]]),
            (idx[final], self.t_release[final], 7, np.full(int(final.sum()), -2)),
        ]
        key = np.concatenate([p[0] for p in parts])
        t = np.concatenate([p[1] for p in parts])
        kind = np.concatenate([np.full(len(p[0]), p[2], np.int8) for p in parts])
        stim = np.concatenate([p[3] for p in parts])
        del parts
        order = np.argsort(t, kind="stable")
        key, t, kind, stim = key[order], t[order], kind[order], stim[order]
        del order
        # prefix/group only while the key is alive at the flush that writes the row
        fl = np.concatenate([flushes, [self.sched_close]])
        alive = fl[_flush_index(t, flushes)] < self.t_forgot[key]
        s_start = pa.array([a for a, _ in _S_KINDS])
        s_finish = pa.array([b for _, b in _S_KINDS])
        ug = f"update-graph-{self.graph_t / 1e9}"
        cr = f"client-releases-keys-{self.release_t / 1e9}"
        addr = pa.array([wk.address for wk in self.workers])
        tid_of = np.array([wk.tids for wk in self.workers])  # [worker, thread]

        def transitions(lo: int, hi: int) -> list[Any]:
            k, kd, st = key[lo:hi], kind[lo:hi], stim[lo:hi]
            ka, kda = pa.array(k), pa.array(kd)
            mem = kd == 4
            pa_mem = pa.array(mem)
            tf = pc.binary_join_element_wise("task-finished-", _float_str(np.maximum(st, 0)), "")
            stim_col = pc.if_else(pa.array(st >= 0), tf,
                                  pc.if_else(pa.array(st == -1), ug, cr))
            al = pa.array(alive[lo:hi])
            none = pa.scalar(None, pa.string())
            p = pa.array(self.prefix[k])
            tids = tid_of[self.worker[k], self.thread[k]]
            return [t[lo:hi], self.keys.take(ka),
                    pc.if_else(al, self.prefix_names.take(p), none),
                    pc.if_else(al, self.groups.take(p), none),
                    s_start.take(kda), s_finish.take(kda), stim_col,
                    pc.if_else(pa_mem, addr.take(pa.array(self.worker[k])), none),
                    pa.array(tids, mask=~mem, type=pa.uint64()),
                    pa.array(self.nbytes[k], mask=~mem, type=pa.int64()),
                    _nulls(hi - lo, pa.string())]

        writer.add(raw.SCHEDULER_TRANSITIONS, t, transitions)
        ss = np.argsort(self.t_mem, kind="stable")
        t_ss = self.t_mem[ss]

        def startstops(lo: int, hi: int) -> list[Any]:
            i = ss[lo:hi]
            return [t_ss[lo:hi], self.keys.take(pa.array(i)),
                    addr.take(pa.array(self.worker[i])), tid_of[self.worker[i], self.thread[i]],
                    pa.repeat("compute", hi - lo), self.start[i], self.stop[i],
                    _nulls(hi - lo, pa.string())]

        writer.add(raw.TASK_STARTSTOPS, t_ss, startstops)
        client = f"Client-{uuid.UUID(int=int(self.rng.integers(0, 2**62)) << 64 | 0x11f1)}"
        t_dep = np.full(E, self.graph_t)
        writer.add(raw.TASK_DEPENDENCIES, t_dep, lambda lo, hi: [
            t_dep[lo:hi], self.keys.take(pa.array(idx[lo:hi])),
            pc.if_else(pa.array(self.dep[lo:hi] >= 0),
                       self.keys.take(pa.array(np.maximum(self.dep[lo:hi], 0))),
                       pa.scalar(None, pa.string())),
            pa.repeat(client, hi - lo)])
        ev = ([(wk.setup + 50 * MS, "add_worker", wk.address, str(wk.index), wk.ip, wk.pid,
                self.T, 4 * 1024 ** 3) for wk in self.workers]
              + [(self.client_t, "add_client", client, None, None, None, None, None),
                 (self.release_t + 5 * MS, "remove_client", client, None, None, None, None,
                  None)]
              + [(wk.teardown + 3 * MS, "remove_worker", wk.address, None, None, None, None,
                  None) for wk in self.workers])
        ev.sort(key=lambda r: r[0])
        ev_t = np.array([r[0] for r in ev], dtype=np.int64)
        writer.add(raw.CLUSTER_EVENTS, ev_t, lambda lo, hi: [
            [r[i] for r in ev[lo:hi]] for i in range(8)])
        rows = writer.write()
        _json(pdir / "proc.json", {
            "format_version": RUN_FORMAT_VERSION, "pid": self.sched_pid, "host": SCHED_HOST,
            "started_ns": self.sched_setup - 2 * US, "anchor_time_ns": self.sched_setup,
            "anchor_perf_counter_ns": 3_599 * SEC, "role": "scheduler",
            "address": "tcp://10.0.0.1:8786"})
        _json(pdir / "closed.json", {"closed_ns": self.sched_close, "rows": rows,
                                     "dropped": dict.fromkeys(rows, 0), "hook_errors": {}})
        for name, n in rows.items():
            self.rows[name] = self.rows.get(name, 0) + n

    # -- everything ---------------------------------------------------------------------------

    def write(self) -> Expected:
        self.prof_task_rows = self.prof_task_ncall = self.prof_untagged = 0
        self._worker_clocks: list[dict[str, Any]] = []
        self.layout()
        self.budget()
        (self.folder / "darshan").mkdir(parents=True, exist_ok=True)
        (self.folder / "procs").mkdir(parents=True, exist_ok=True)
        self.write_meta_start()
        cpu_rows = []
        with ThreadPoolExecutor(max_workers=2) as pool:
            pending: list[Future] = []

            def submit(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
                while len(pending) >= 2:  # bounded: at most two logs' segments alive
                    pending.pop(0).result()
                pending.append(pool.submit(fn, *args, **kwargs))

            submit(self.write_log, self.scheduler_segments(), host=SCHED_HOST, pid=self.sched_pid,
                   delay_ns=0, start_true=self.sched_start, end_true=self.sched_close,
                   exe="python job.py")
            for wk in self.workers:
                seg = self.worker_segments(wk)
                submit(self.write_log, seg, host=wk.host, pid=wk.pid, delay_ns=wk.delay_ns,
                       start_true=wk.process_start, end_true=wk.teardown + 50 * MS,
                       exe=WORKER_EXE)
                del seg
                proc_cpu, task_cpu, _ = self.write_worker(wk)
                cpu_rows.append({"host": wk.host, "pid": wk.pid, "process_cpu_s": proc_cpu,
                                 "task_cpu_s": task_cpu,
                                 "outside_tasks_cpu_s": proc_cpu - task_cpu})
            empty = pl.DataFrame(schema={"path": pl.String, "op": pl.String,
                                         "offset": pl.Int64, "length": pl.Int64,
                                         "t0": pl.Int64, "t1": pl.Int64,
                                         "thread_id": pl.UInt64})
            submit(self.write_log, empty, host=SCHED_HOST, pid=self.sched_pid + 1,
                   delay_ns=0, start_true=self.sched_start + 2 * SEC,
                   end_true=self.sched_start + 2 * SEC + 3 * MS, exe="uname -p")
            self.write_scheduler()
            for f in pending:
                f.result()
        self.write_meta_end()
        return self.expected(cpu_rows)

    def write_darshan_conf(self) -> None:
        from collectors.darshan_env import CONFIG, EXCLUDE_MODULES

        prefixes = sorted({"/opt/venv", "/usr/local/lib/python3.11",
                           str(self.folder / "procs")})
        excludes = "\n".join(f"NAME_EXCLUDE ^{p.replace('.', chr(92) + '.')} {EXCLUDE_MODULES}"
                             for p in prefixes)
        (self.folder / "darshan.conf").write_text(CONFIG.format(excludes=excludes,
                                                                mods=EXCLUDE_MODULES))

    def write_meta_start(self) -> None:
        self.write_darshan_conf()
        self.manifest = {
            "format_version": RUN_FORMAT_VERSION,
            "run_id": hashlib.md5(f"synthetic-{self.seed}-{self.E}-{self.S}".encode()).hexdigest(),
            "command": ["python", "job.py"], "cwd": "/home/user/jobs",
            "started_ns": self.t0, "ended_ns": None, "exit_code": None,
            "launcher_host": SCHED_HOST, "cores": self.W * self.T, "python": "3.11.7",
            "platform": "Linux-synthetic-x86_64-with-glibc2.36",
            "versions": _versions(),
            "collector_options": {"darshan": "/opt/darshan/lib/libdarshan.so",
                                  "flush_interval_s": self.interval / SEC,
                                  "profile": self.profile},
            "darshan": {"reason": "--darshan", "runtime": "/opt/darshan/lib/libdarshan.so"},
            "job_environment": {}, "dask_config": {}, "unknown": {},
            "synthetic": {"generator": "testing.synthetic", "workers": self.W,
                          "threads": self.T, "executions": self.E, "segments": self.S,
                          "prefixes": list(self.prefixes), "hosts": self.hosts,
                          "seed": self.seed, "darshan_offset_ns": self.darshan_offset},
        }
        _json(self.folder / "manifest.json", self.manifest)

    def write_meta_end(self) -> None:
        procs = sorted(p.name for p in (self.folder / "procs").iterdir() if p.is_dir())
        self.manifest.update(ended_ns=self.end, exit_code=0, processes=procs,
                             processes_not_closed=[],
                             hosts=sorted({p.split("-", 1)[1].rsplit("-", 1)[0]
                                           for p in procs}))
        _json(self.folder / "manifest.json", self.manifest)

    def expected(self, cpu_rows: list[dict[str, Any]]) -> Expected:
        E = self.E
        io = {"read_bytes": float(self.ex_read_bytes.sum()),
              "write_bytes": float(self.ex_write_bytes.sum()),
              "read_ops": float(self.ex_read_ops.sum()),
              "write_ops": float(self.ex_write_ops.sum()),
              "io_time_s": float(self.ex_io_ns.sum()) / 1e9}
        attributed = {"bytes": io["read_bytes"] + io["write_bytes"],
                      "ops": io["read_ops"] + io["write_ops"], **io}
        by_reason: dict[str, dict[str, float]] = {}
        by_kind: dict[str, dict[str, float]] = {}
        for (reason, kind), (b, o, t) in sorted(self.unattr.items()):
            for d, k in ((by_reason, reason), (by_kind, kind)):
                acc = d.setdefault(k, {"bytes": 0.0, "ops": 0.0, "io_time_s": 0.0})
                acc["bytes"] += b
                acc["ops"] += o
                acc["io_time_s"] += t / 1e9
        un = {m: sum(v[m] for v in by_reason.values()) for m in ("bytes", "ops", "io_time_s")}
        total = {m: attributed[m] + un[m] for m in ("bytes", "ops", "io_time_s")}
        wk_of = self.worker
        hosts = np.array([wk.host for wk in self.workers])
        pids = np.array([wk.pid for wk in self.workers])
        tids = np.array([wk.tids for wk in self.workers])
        per = pl.DataFrame({
            "key": self.keys, "prefix": self.prefix_names.take(pa.array(self.prefix)),
            "host": hosts[wk_of], "pid": pids[wk_of],
            "thread_id": pl.Series(tids[wk_of, self.thread], dtype=pl.UInt64),
            "execution_seq": self.seq, "cpu_s": self.cpu / 1e9,
            "duration_s": self.dur / 1e9,
            "read_bytes": self.ex_read_bytes, "write_bytes": self.ex_write_bytes,
            "read_ops": self.ex_read_ops, "write_ops": self.ex_write_ops,
            "io_time_s": self.ex_io_ns / 1e9})
        per_prefix = {
            r["prefix"]: {k: v for k, v in r.items() if k != "prefix"}
            for r in per.group_by("prefix").agg(
                executions=pl.len(), read_bytes=pl.col("read_bytes").sum(),
                write_bytes=pl.col("write_bytes").sum(), read_ops=pl.col("read_ops").sum(),
                write_ops=pl.col("write_ops").sum(), cpu_s=pl.col("cpu_s").sum(),
                wall_s=pl.col("duration_s").sum()).sort("prefix").iter_rows(named=True)}
        per = per.drop("duration_s")
        clocks = []
        for wk in self.workers:
            samples = self.samples(wk)
            clocks.append({"host": wk.host, "pid": wk.pid, "domain": "darshan",
                           "offset_ns": self.darshan_offset, "uncertainty_ns": 0,
                           "samples": len(samples)})
        clocks += self._worker_clocks
        clocks.sort(key=lambda r: (r["host"], r["pid"], r["domain"]))
        return Expected(
            folder=str(self.folder), workers=self.W, threads=self.T, hosts=self.hosts,
            executions=E, segments=self.S, task_segments=self.n_task,
            executions_with_io=int((self.k > 0).sum()),
            files=int(self.paths.len()), duration_s=(self.end - self.t0) / 1e9,
            total=total, attributed=attributed, unattributed=un,
            unattributed_by_reason=by_reason, unattributed_by_thread_kind=by_kind,
            per_prefix=per_prefix,
            cpu={"task_cpu_s": float(self.cpu.sum()) / 1e9,
                 "task_wall_s": float(self.dur.sum()) / 1e9, "per_worker": cpu_rows},
            profile={"rows": self.rows.get("worker_func_stats", 0),
                     "task_rows": self.prof_task_rows, "task_ncall": self.prof_task_ncall,
                     "untagged_rows": self.prof_untagged},
            clocks=clocks, rows=dict(sorted(self.rows.items())), per_execution=per)


def _versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for d in ("dask-correlate", "dask", "distributed", "yappi", "darshan", "numpy", "pyarrow"):
        try:
            out[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            out[d] = None
    return out


def write_run(folder: Path | str, *, workers: int = 2, threads: int = 2,
              executions: int = 1000, segments: int = 10_000,
              prefixes: Sequence[str] = DEFAULT_PREFIXES, hosts: int = 1, seed: int = 0,
              profile: str = "yappi", flush_interval_s: float = 5.0,
              darshan_offset_ns: int = 0, files_per_prefix: int | None = None,
              outside_share: float = 0.001) -> Expected:
    """Write a synthetic run folder (see the module doc) and return what correlate must find.

    ``segments`` counts every DXT segment in every log: the task segments plus the ones outside
    tasks (``max(3 × workers, outside_share × segments)`` outside-task segments, one marker per
    worker clock sample and three scheduler writes). ``files_per_prefix`` (default
    ``min(chunks, 1000)``) data files per prefix; ``hosts`` spreads workers over that many
    hosts; ``darshan_offset_ns`` puts Darshan's clock that far behind the worker clocks (the
    markers let correlate find it exactly)."""
    folder = Path(folder)
    if (folder / "manifest.json").exists():
        raise FileExistsError(f"{folder} already holds a run")
    run = _Run(folder, workers=workers, threads=threads, executions=executions,
               segments=segments, prefixes=prefixes, hosts=hosts, seed=seed, profile=profile,
               flush_interval_s=flush_interval_s, darshan_offset_ns=darshan_offset_ns,
               files_per_prefix=files_per_prefix, outside_share=outside_share)
    return run.write()


def without_thread_ids(run: Path, copy: Path) -> Path:
    """``run`` as Darshan before 3.5 would have logged it, in ``copy``: every log rewritten with
    the same DXT segments in layout v1-32, which has no pthread id (correlate then splits each
    segment over the task windows it overlaps, so ``Expected``'s per-execution figures no longer
    apply; the totals do); the rest of the folder is linked. Reuses a copy already there."""
    from correlate.sources import darshan_logs
    from testing.darshan_writer import write_log

    if (copy / "manifest.json").exists():
        return copy
    (copy / "darshan").mkdir(parents=True)
    for item in run.iterdir():
        if item.name != "darshan":
            (copy / item.name).symlink_to(item.resolve())
    for item in (run / "darshan").iterdir():
        if item.is_dir():
            (copy / "darshan" / item.name).symlink_to(item.resolve())
    logs = darshan_logs.load([run / "darshan"], segments=False).darshan_logs
    for log in logs.iter_rows(named=True):
        rel = [((pl.col(c) - log["start_ns"]) / 1e9).alias(a)
               for c, a in (("local_start_ns", "start_s"), ("local_stop_ns", "end_s"))]
        seg = darshan_logs.read_segments(log["log"]).select(
            "path", pl.col("op").cast(pl.String), "offset", "length", "thread_id", *rel)
        write_log(copy / "darshan" / Path(log["log"]).name, seg, host=log["host"],
                  pid=log["pid"], start_ns=log["start_ns"], end_ns=log["end_ns"],
                  exe=log["exe"], layout="v1-32")
    return copy


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testing.synthetic",
                                 description="write a synthetic run folder; print the expected "
                                             "totals as JSON")
    ap.add_argument("out", type=Path)
    ap.add_argument("--executions", type=int, default=1000)
    ap.add_argument("--segments", type=int, default=None, help="default: 10 × executions")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hosts", type=int, default=1)
    ap.add_argument("--prefixes", default=",".join(DEFAULT_PREFIXES),
                    help="comma-separated task prefixes (a chain graph)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", choices=("yappi", "yappi-cpu", "off"), default="yappi")
    ap.add_argument("--flush-interval", type=float, default=5.0)
    ap.add_argument("--darshan-offset-ns", type=int, default=0)
    ap.add_argument("--expected", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    exp = write_run(args.out, workers=args.workers, threads=args.threads,
                    executions=args.executions,
                    segments=args.segments if args.segments is not None else 10 * args.executions,
                    prefixes=[p for p in args.prefixes.split(",") if p], hosts=args.hosts,
                    seed=args.seed, profile=args.profile, flush_interval_s=args.flush_interval,
                    darshan_offset_ns=args.darshan_offset_ns)
    text = json.dumps(exp.to_json(), indent=1)
    if args.expected:
        args.expected.write_text(text + "\n")
    print(text)
    print(f"generated in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
