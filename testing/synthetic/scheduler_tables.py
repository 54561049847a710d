"""The scheduler's process folder: scheduler_transitions, task_startstops, task_dependencies,
cluster_events, proc.json and its closing record."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from correlate.schema import run as raw
from testing.synthetic.job import MS, SCHED_HOST, SEC, US, Job
from testing.synthetic.parts import PartWriter, float_str, flush_index, nulls, write_proc

# scheduler/worker transition row kinds: (start, finish)
_S_KINDS = (("released", "waiting"), ("waiting", "queued"), ("queued", "processing"),
            ("waiting", "processing"), ("processing", "memory"), ("memory", "released"),
            ("released", "forgotten"), ("memory", "forgotten"))


def write_scheduler(job: Job) -> None:
    pdir = job.folder / "procs" / f"scheduler-{SCHED_HOST}-{job.sched_pid}"
    pdir.mkdir(parents=True, exist_ok=True)
    flushes = job.flushes(job.sched_setup, job.sched_close)
    writer = PartWriter(pdir, flushes, job.run_format)
    addr = pa.array([wk.address for wk in job.workers])
    tid_of = np.array([wk.tids for wk in job.workers])  # [worker, thread]
    _transitions(job, writer, flushes, addr, tid_of)
    _startstops(job, writer, addr, tid_of)
    client = f"Client-{uuid.UUID(int=int(job.rng.integers(0, 2**62)) << 64 | 0x11f1)}"
    _dependencies(job, writer, client)
    _cluster_events(job, writer, client)
    rows = writer.write()
    write_proc(pdir, {
        "format_version": job.run_format, "pid": job.sched_pid, "host": SCHED_HOST,
        "started_ns": job.sched_setup - 2 * US, "anchor_time_ns": job.sched_setup,
        "anchor_perf_counter_ns": 3_599 * SEC, "role": "scheduler",
        "address": "tcp://10.0.0.1:8786"},
        {"closed_ns": job.sched_close, "rows": rows, "dropped": dict.fromkeys(rows, 0),
         "hook_errors": {}}, job.run_format)
    for name, n in rows.items():
        job.rows[name] = job.rows.get(name, 0) + n


def _transition_rows(job: Job) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(execution, time, kind index into ``_S_KINDS``, stimulus: the finishing task's stop
    time, or -1 update-graph, -2 the client) of every scheduler transition, in time order."""
    E = job.E
    idx = np.arange(E, dtype=np.int64)
    root, final = job.prefix == 0, job.final
    t_g = job.t_graph_key
    parts = [
        (idx, t_g, 0, np.full(E, -1)),
        (idx[root], t_g[root] + 5 * US, 1, np.full(int(root.sum()), -1)),
        (idx[root], job.t_proc[root], 2, job.t_proc[root]),
        (idx[~root], job.t_proc[~root], 3, job.stop[job.dep[~root]]),
        (idx, job.t_mem, 4, job.stop),
        (idx[~final], job.t_release[~final], 5, job.stop[job.next[~final]]),
        (idx[~final], job.t_forgot[~final], 6, job.stop[job.next[~final]]),
        (idx[final], job.t_release[final], 7, np.full(int(final.sum()), -2)),
    ]
    key = np.concatenate([p[0] for p in parts])
    t = np.concatenate([p[1] for p in parts])
    kind = np.concatenate([np.full(len(p[0]), p[2], np.int8) for p in parts])
    stim = np.concatenate([p[3] for p in parts])
    order = np.argsort(t, kind="stable")
    return key[order], t[order], kind[order], stim[order]


def _transitions(job: Job, writer: PartWriter, flushes: np.ndarray, addr: pa.Array,
                 tid_of: np.ndarray) -> None:
    key, t, kind, stim = _transition_rows(job)
    # prefix/group only while the key is alive at the flush that writes the row
    fl = np.concatenate([flushes, [job.sched_close]])
    alive = fl[flush_index(t, flushes)] < job.t_forgot[key]
    s_start = pa.array([a for a, _ in _S_KINDS])
    s_finish = pa.array([b for _, b in _S_KINDS])
    ug = f"update-graph-{job.graph_t / 1e9}"
    cr = f"client-releases-keys-{job.release_t / 1e9}"

    def transitions(lo: int, hi: int) -> list[Any]:
        k, kd, st = key[lo:hi], kind[lo:hi], stim[lo:hi]
        ka, kda = pa.array(k), pa.array(kd)
        mem = kd == 4
        pa_mem = pa.array(mem)
        tf = pc.binary_join_element_wise("task-finished-", float_str(np.maximum(st, 0)), "")
        stim_col = pc.if_else(pa.array(st >= 0), tf,
                              pc.if_else(pa.array(st == -1), ug, cr))
        al = pa.array(alive[lo:hi])
        none = pa.scalar(None, pa.string())
        p = pa.array(job.prefix[k])
        tids = tid_of[job.worker[k], job.thread[k]]
        return [t[lo:hi], job.keys.take(ka),
                pc.if_else(al, job.prefix_names.take(p), none),
                pc.if_else(al, job.groups.take(p), none),
                s_start.take(kda), s_finish.take(kda), stim_col,
                pc.if_else(pa_mem, addr.take(pa.array(job.worker[k])), none),
                pa.array(tids, mask=~mem, type=pa.uint64()),
                pa.array(job.nbytes[k], mask=~mem, type=pa.int64())]

    if job.run_format == 2:
        writer.add(raw.SCHEDULER_TRANSITIONS, t, transitions)
        return
    # run format 3: the task-finished message's worker, thread and size as details
    writer.add(raw.SCHEDULER_TRANSITIONS_3, t, lambda lo, hi: transitions(lo, hi)[:7])
    done = np.flatnonzero(kind == 4)

    def details(lo: int, hi: int) -> list[Any]:
        rows = transitions(int(done[lo]), int(done[hi - 1]) + 1)
        pick = pa.array(kind[done[lo]:done[hi - 1] + 1] == 4)
        return [pc.filter(c if isinstance(c, pa.Array) else pa.array(c), pick)
                for c in (rows[0], rows[1], *rows[7:])]

    writer.add(raw.TRANSITION_DETAILS, t[done], details)


def _startstops(job: Job, writer: PartWriter, addr: pa.Array, tid_of: np.ndarray) -> None:
    ss = np.argsort(job.t_mem, kind="stable")
    t_ss = job.t_mem[ss]

    def startstops(lo: int, hi: int) -> list[Any]:
        i = ss[lo:hi]
        return [t_ss[lo:hi], job.keys.take(pa.array(i)),
                addr.take(pa.array(job.worker[i])), tid_of[job.worker[i], job.thread[i]],
                pa.repeat("compute", hi - lo), job.start[i], job.stop[i],
                nulls(hi - lo, pa.string())]

    writer.add(raw.TASK_STARTSTOPS, t_ss, startstops)


def _dependencies(job: Job, writer: PartWriter, client: str) -> None:
    idx = np.arange(job.E, dtype=np.int64)
    t_dep = np.full(job.E, job.graph_t)
    writer.add(raw.TASK_DEPENDENCIES, t_dep, lambda lo, hi: [
        t_dep[lo:hi], job.keys.take(pa.array(idx[lo:hi])),
        pc.if_else(pa.array(job.dep[lo:hi] >= 0),
                   job.keys.take(pa.array(np.maximum(job.dep[lo:hi], 0))),
                   pa.scalar(None, pa.string())),
        pa.repeat(client, hi - lo)])


def _cluster_events(job: Job, writer: PartWriter, client: str) -> None:
    ev = ([(wk.setup + 50 * MS, "add_worker", wk.address, str(wk.index), wk.ip, wk.pid,
            job.T, 4 * 1024 ** 3) for wk in job.workers]
          + [(job.client_t, "add_client", client, None, None, None, None, None),
             (job.release_t + 5 * MS, "remove_client", client, None, None, None, None,
              None)]
          + [(wk.teardown + 3 * MS, "remove_worker", wk.address, None, None, None, None,
              None) for wk in job.workers])
    ev.sort(key=lambda r: r[0])
    ev_t = np.array([r[0] for r in ev], dtype=np.int64)
    writer.add(raw.CLUSTER_EVENTS, ev_t, lambda lo, hi: [
        [r[i] for r in ev[lo:hi]] for i in range(8)])
