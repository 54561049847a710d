"""The job a synthetic run describes: processes, task executions on a chain graph, their
times, and the DXT segment budget."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_PREFIXES = ("load-chunk", "transform", "store-chunk")

START_NS = 1_790_000_000_000_000_000

#: the scheduler runs on a head node of its own: every worker clock is estimated (a worker on
#: the scheduler's host would share its clock, offset 0)
SCHED_HOST = "head"

US, MS, SEC = 1_000, 1_000_000, 1_000_000_000

SIZES = np.array([4096, 16384, 65536, 262144, 1048576], dtype=np.int64)

SIZE_P = np.array([0.3, 0.25, 0.25, 0.15, 0.05])


@dataclass
class Worker:
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


def group_starts(sorted_ids: np.ndarray) -> np.ndarray:
    """Boolean mask of the first row of each run of equal ids."""
    first = np.ones(len(sorted_ids), dtype=bool)
    first[1:] = sorted_ids[1:] != sorted_ids[:-1]
    return first


def rank_within(sorted_ids: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal ids (ids sorted)."""
    idx = np.arange(len(sorted_ids), dtype=np.int64)
    start = np.where(group_starts(sorted_ids), idx, 0)
    return idx - np.maximum.accumulate(start) if len(idx) else idx


class Job:
    """The job a synthetic run describes: its processes, task executions and their times
    (``layout``), and the DXT segment budget (``budget``); the writers read it and add what
    correlate must find to its accumulators."""

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
        #: run format the process folders are written in (write_run may set 2)
        self.run_format = 3
        self.interval = int(flush_interval_s * SEC)
        self.darshan_offset = int(darshan_offset_ns)
        self.files_per_prefix = files_per_prefix
        self.outside_share = outside_share
        self.rng = np.random.default_rng(seed)
        self.t0 = START_NS + seed * 3_600 * SEC
        # what correlate must find, added to by the writers
        self.rows: dict[str, int] = {}
        self.unattr: dict[tuple[str, str], list[float]] = {}
        self.prof_task_rows = self.prof_task_ncall = self.prof_untagged = 0
        self.worker_clocks: list[dict[str, Any]] = []

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
        self.workers: list[Worker] = []
        for w in range(W):
            h = w % self.hosts
            pstart = self.t0 + 1 * SEC + w * 20 * MS
            base = 0x7F00_0000_0000 + int(rng.integers(0, 1 << 28)) * 0x1000  # like ASLR
            tids = np.array([base + 0x7000_0000 - (t + 1) * 0xC0_2000 for t in range(T)],
                            dtype=np.uint64)
            self.workers.append(Worker(
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
            first = group_starts(slot[order])
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
        self.seq[order] = rank_within(self.worker[order]) + 1
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
        self.fin_batch = rank_within(self.worker[fin]) // 1000
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

    def samples(self, wk: Worker) -> np.ndarray:
        half = max(self.interval // 2, 1)
        n = (wk.teardown - wk.setup - 1) // half + 1
        return np.concatenate([wk.setup + half * np.arange(n, dtype=np.int64), [wk.teardown]])

    def flushes(self, setup: int, close: int) -> np.ndarray:
        """The collector's flush times of a process alive from ``setup`` to ``close``."""
        n = max(0, (close - setup - 1) // self.interval)
        return setup + self.interval * np.arange(1, n + 1, dtype=np.int64)

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

    def marker_path(self, wk: Worker) -> str:
        return str(self.folder / "darshan" / "markers" / f"{wk.host}-{wk.pid}")
