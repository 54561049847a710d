"""A worker's process folder: task_executions, worker_transitions, transfers and their keys,
clock samples and markers (run format 3: on the samples' rows), the profile snapshot, proc.json
and its closing record."""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from collectors.worker_plugin import MARKER_BYTES
from correlate.schema import run as raw
from testing.synthetic.job import MS, SEC, US, Job, Worker
from testing.synthetic.parts import PartWriter, chunk_rows, nulls, write_proc

#: where the profile's Dask functions live: this interpreter's site-packages
SITE = sysconfig.get_paths()["purelib"]

#: per-execution functions of the Yappi profile (module, name, file, line); the task's own
#: function (``pipeline.<prefix>``) and a helper are added per prefix
WRAPPERS = (("worker", "_run_task", f"{SITE}/distributed/worker.py", 2760),
            ("worker", "_run_task_simple", f"{SITE}/distributed/worker.py", 2794),
            ("_task_spec", "Task.__call__", f"{SITE}/dask/_task_spec.py", 753))

PIPELINE = "/home/user/jobs/pipeline.py"

_W_KINDS = (("released", "waiting"), ("waiting", "ready"), ("ready", "executing"),
            ("executing", "memory"), ("memory", "released"), ("released", "forgotten"))


def write_worker(job: Job, wk: Worker) -> tuple[float, float, int]:
    """The worker's process folder; returns (process_cpu_s, task_cpu_s, func_stats rows)."""
    pdir = job.folder / "procs" / wk.dirname
    pdir.mkdir(parents=True, exist_ok=True)
    loc = -wk.delay_ns  # true → worker clock
    ex = np.flatnonzero(job.worker == wk.index)
    writer = PartWriter(pdir, job.flushes(wk.setup, wk.teardown), job.run_format,
                        chunk_rows(len(ex)))
    ex = ex[np.argsort(job.stop[ex], kind="stable")]  # rows are appended at stop
    samples = job.samples(wk)
    _executions(job, wk, writer, ex, loc)
    _transitions(job, writer, ex, loc)
    _transfers(job, wk, writer, samples)
    proc_cpu, anchor_perf = _clock(job, wk, writer, ex, samples, loc)
    nfs = func_stats(job, wk, writer, ex, len(samples))
    rows = writer.write()
    mpath = Path(job.marker_path(wk))
    mpath.parent.mkdir(parents=True, exist_ok=True)
    mpath.write_bytes(MARKER_BYTES * len(samples))
    rows["worker_func_stats"] = nfs
    write_proc(pdir, {
        "format_version": job.run_format, "pid": wk.pid, "host": wk.host,
        "started_ns": wk.setup + loc - 1 * US, "anchor_time_ns": wk.setup + loc,
        "anchor_perf_counter_ns": anchor_perf, "role": "worker", "address": wk.address,
        "name": str(wk.index), "nthreads": job.T, "memory_limit": 4 * 1024 ** 3,
        "local_directory": wk.local_dir, "main_thread_id": wk.main_tid,
        "profile": job.profile}, {
        "closed_ns": wk.teardown + loc + 2 * MS, "rows": rows,
        "dropped": dict.fromkeys(rows, 0), "hook_errors": {}, "executions_not_timed": 0,
        "transfers_lost_to_dask_log_limit": {"incoming": 0, "outgoing": 0}}, job.run_format)
    for name, n in rows.items():
        job.rows[name] = job.rows.get(name, 0) + n
    return float(proc_cpu[-1]), float(job.cpu[ex].sum() / 1e9), nfs


def _executions(job: Job, wk: Worker, writer: PartWriter, ex: np.ndarray, loc: int) -> None:
    """task_executions: ``ex`` in stop order."""
    tids = wk.tids[job.thread[ex]]
    native = wk.pid + 20 + job.thread[ex]

    def executions(lo: int, hi: int) -> list[Any]:
        i = ex[lo:hi]
        return [job.seq[i], job.keys.take(pa.array(i)), tids[lo:hi], native[lo:hi],
                job.start[i] + loc, job.stop[i] + loc, job.cpu[i],
                pa.repeat("ok", hi - lo)]

    writer.add(raw.EXECUTIONS_RAW, job.stop[ex], executions)


def _transitions(job: Job, writer: PartWriter, ex: np.ndarray, loc: int) -> None:
    """worker_transitions: six per execution."""
    t_rw = job.t_proc[ex] + 50 * US
    wt = np.stack([t_rw, t_rw + 5 * US, job.start[ex] - 20 * US, job.stop[ex] + 30 * US,
                   job.t_release[ex] + 50 * US, job.t_release[ex] + 55 * US]).ravel()
    wkind = np.repeat(np.arange(6, dtype=np.int8), len(ex))
    wkey = np.tile(ex, 6)
    order = np.argsort(wt, kind="stable")
    wt, wkind, wkey = wt[order], wkind[order], wkey[order]
    w_start = pa.array([a for a, _ in _W_KINDS])
    w_finish = pa.array([b for _, b in _W_KINDS])

    def transitions(lo: int, hi: int) -> list[Any]:
        kd = pa.array(wkind[lo:hi])
        return [wt[lo:hi] + loc, job.keys.take(pa.array(wkey[lo:hi])), w_start.take(kd),
                w_finish.take(kd)]

    writer.add(raw.WORKER_TRANSITIONS, wt, transitions)


def _transfers(job: Job, wk: Worker, writer: PartWriter, samples: np.ndarray) -> None:
    """Outgoing transfers to the client and their keys (read by the periodic callback after
    they end)."""
    fin = job.fin[job.worker[job.fin] == wk.index]
    batch = job.fin_batch[job.worker[job.fin] == wk.index]
    nb = int(batch.max()) + 1 if len(batch) else 0
    tr_start = job.gather_t + np.arange(nb, dtype=np.int64) * MS
    nkeys = np.bincount(batch, minlength=nb)
    total = np.bincount(batch, job.nbytes[fin], minlength=nb).astype(np.int64)
    tr_stop = tr_start + 500 * US + nkeys * US
    tr_seen = samples[np.minimum(np.searchsorted(samples, tr_stop), len(samples) - 1)]
    seqs = np.arange(1, nb + 1, dtype=np.int64)
    writer.add(raw.TRANSFERS_RAW, tr_seen, lambda lo, hi: [
        seqs[lo:hi], pa.repeat("outgoing", hi - lo), nulls(hi - lo, pa.string()),
        total[lo:hi], total[lo:hi] + 600 + 40 * nkeys[lo:hi], tr_start[lo:hi],
        tr_stop[lo:hi], nkeys[lo:hi],
        nulls(hi - lo, pa.int64())])  # scheduler_delay_ns: as in runs recorded before it
    key_seen = tr_seen[batch] if nb else np.zeros(0, dtype=np.int64)
    writer.add(raw.TRANSFER_KEYS_RAW, key_seen, lambda lo, hi: [
        batch[lo:hi] + 1, job.keys.take(pa.array(fin[lo:hi])), job.nbytes[fin[lo:hi]]])


def _clock(job: Job, wk: Worker, writer: PartWriter, ex: np.ndarray, samples: np.ndarray,
           loc: int) -> tuple[np.ndarray, int]:
    """Clock samples and markers; returns the process CPU at each sample and the perf-counter
    anchor. The first sample comes before any heartbeat (Dask's defaults 0.0 / 0.001)."""
    m = len(samples)
    noise = job.rng.integers(-300, 301, m) * US
    delay_s = np.round((wk.delay_ns + noise) / 1e9, 6)
    latency = np.round(job.rng.uniform(0.001, 0.04, m), 6)
    delay_s[0], latency[0] = 0.0, 0.001
    # what correlate estimates: the median of the distinct samples after the first
    distinct = np.unique(delay_s[delay_s != 0.0])
    job.worker_clocks.append({"host": wk.host, "pid": wk.pid, "domain": "worker",
                              "offset_ns": int(np.rint(np.median(distinct) * 1e9)),
                              "true_offset_ns": wk.delay_ns, "samples": len(distinct)})
    stops = job.stop[ex]  # sorted
    task_cpu_cum = np.concatenate([[0], np.cumsum(job.cpu[ex])])
    done = task_cpu_cum[np.searchsorted(stops, samples, side="right")] / 1e9
    proc_cpu = np.floor((0.5 + done + 0.02 * (samples - wk.setup) / 1e9) * 100) / 100
    anchor_perf = 3_600 * SEC + wk.index * 70 * MS
    perf = anchor_perf + (samples - wk.setup)
    mt = samples + 30 * US
    mpath = job.marker_path(wk)

    def sample_columns(lo: int, hi: int) -> list[Any]:
        return [samples[lo:hi] + loc, perf[lo:hi], delay_s[lo:hi], latency[lo:hi],
                proc_cpu[lo:hi]]

    def marker_columns(lo: int, hi: int) -> list[Any]:
        return [mt[lo:hi] + loc, pa.repeat(mpath, hi - lo),
                len(MARKER_BYTES) * np.arange(lo, hi), np.full(hi - lo, len(MARKER_BYTES))]

    if writer.run_format == 3:  # each marker on the row of the sample it follows (CARRIED)
        writer.add(raw.CLOCK_SAMPLES_3, samples,
                   lambda lo, hi: sample_columns(lo, hi) + marker_columns(lo, hi))
        writer.counted(raw.CLOCK_MARKERS_RAW, m)
    else:
        writer.add(raw.CLOCK_SAMPLES_RAW, samples, sample_columns)
        writer.add(raw.CLOCK_MARKERS_RAW, mt, marker_columns)
    return proc_cpu, anchor_perf


def func_stats(job: Job, wk: Worker, writer: PartWriter, ex: np.ndarray, n_samples: int
               ) -> int:
    if job.profile == "off":
        return 0
    ex = np.sort(ex)
    n, F = len(ex), 5
    p = job.prefix[ex]
    fn = [name.replace("-", "_") for name in job.prefixes]
    funcs = ([*WRAPPERS] + [("pipeline", f, PIPELINE, 20 + 30 * i) for i, f in enumerate(fn)]
             + [("pipeline", f"_{f}_block", PIPELINE, 35 + 30 * i) for i, f in enumerate(fn)]
             + [("worker", "Worker.heartbeat", f"{SITE}/distributed/worker.py", 1291),
                ("batched", "BatchedSend._background_send", f"{SITE}/distributed/batched.py",
                 88),
                ("threadpoolexecutor", "_worker",
                 f"{SITE}/distributed/threadpoolexecutor.py", 40)])
    P = job.P
    fid = np.stack([np.zeros(n, np.int64), np.ones(n, np.int64), np.full(n, 2),
                    3 + p, 3 + P + p]).T.ravel()
    d = np.repeat(job.dur[ex] / 1e9, F)
    clock_scale = np.repeat(job.cpu[ex] / np.maximum(job.dur[ex], 1), F) if \
        job.profile == "yappi-cpu" else 1.0
    slot = np.tile(np.arange(F), n)
    ncall = np.where(slot == 4, job.rng.integers(1, 21, n * F), 1)
    share_tot = np.array([0.999, 0.998, 0.997, 0.99, 0.6])[slot]
    share_sub = np.array([2e-4, 3e-4, 5e-4, 0.39, 0.6])[slot]
    # untagged rows: the event loop and each executor thread's loop (execution_seq 0)
    life = (wk.teardown - wk.setup) / 1e9
    u_fid = np.array([3 + 2 * P, 4 + 2 * P] + [5 + 2 * P] * job.T)
    u_tid = np.concatenate([[wk.main_tid, wk.main_tid], wk.tids]).astype(np.uint64)
    u_ncall = np.array([n_samples, n_samples * 3] + [1] * job.T)
    u_ttot = np.array([0.002 * n_samples, 0.01 * life] + [life * 0.9] * job.T)
    fid_all = np.concatenate([fid, u_fid])
    tid_all = np.concatenate([np.repeat(wk.tids[job.thread[ex]], F), u_tid])
    seq_all = np.concatenate([np.repeat(job.seq[ex], F), np.zeros(len(u_fid), np.int64)])
    ncall_all = np.concatenate([ncall, u_ncall])
    ttot = np.concatenate([d * share_tot * clock_scale, u_ttot])
    tsub = np.concatenate([d * share_sub * clock_scale, u_ttot * 0.1])
    f = pa.array(fid_all)
    col = [pa.array([x[i] for x in funcs]) for i in range(4)]
    rows = len(fid_all)
    clock = "cpu" if job.profile == "yappi-cpu" else "wall"
    writer.snapshot(raw.FUNC_STATS_RAW, [
        pa.repeat("yappi", rows), pa.repeat(clock, rows), tid_all, seq_all,
        col[0].take(f), col[1].take(f), col[2].take(f), col[3].take(f), ncall_all,
        ttot, tsub])
    job.prof_task_rows += n * F
    job.prof_task_ncall += int(ncall.sum())
    job.prof_untagged += len(u_fid)
    return rows
