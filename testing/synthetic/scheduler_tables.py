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
from testing.synthetic.parts import PartWriter, Window, chunk_rows, float_str, nulls, write_proc

# scheduler/worker transition row kinds: (start, finish)
_S_KINDS = (("released", "waiting"), ("waiting", "queued"), ("queued", "processing"),
            ("waiting", "processing"), ("processing", "memory"), ("memory", "released"),
            ("released", "forgotten"), ("memory", "forgotten"))


def write_scheduler(job: Job) -> None:
    pdir = job.folder / "procs" / f"scheduler-{SCHED_HOST}-{job.sched_pid}"
    pdir.mkdir(parents=True, exist_ok=True)
    flushes = job.flushes(job.sched_setup, job.sched_close)
    writer = PartWriter(pdir, flushes, job.run_format, chunk_rows(job.E))
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


#: times before and after any row's
_NEVER, _ALWAYS = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def _transition_rows(job: Job, after: int = _NEVER, upto: int = _ALWAYS
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(execution, time, kind index into ``_S_KINDS``, stimulus: the finishing task's stop
    time, or -1 update-graph, -2 the client) of the scheduler transitions at times after
    ``after`` up to ``upto``, in the table's order: by time, then kind, then execution. Asked
    flush by flush, only one flush's rows are ever laid out (the submission's flush holds a
    row of every execution, the later ones their share of the rest)."""
    root, final = job.prefix == 0, job.final

    def const(v: int) -> Any:
        return lambda i: np.full(len(i), v)

    # (kind, the executions that have it or None for all, its time per execution, stimulus)
    parts = [
        (None, lambda: job.t_graph_key, const(-1)),
        (root, lambda: job.t_graph_key + 5 * US, const(-1)),
        (root, lambda: job.t_proc, lambda i: job.t_proc[i]),
        (~root, lambda: job.t_proc, lambda i: job.stop[job.dep[i]]),
        (None, lambda: job.t_mem, lambda i: job.stop[i]),
        (~final, lambda: job.t_release, lambda i: job.stop[job.next[i]]),
        (~final, lambda: job.t_forgot, lambda i: job.stop[job.next[i]]),
        (final, lambda: job.t_release, const(-2)),
    ]
    keys, times, kinds, stims = [], [], [], []
    for kind, (has, time, stim) in enumerate(parts):
        t_all = time()
        inside = (t_all > after) & (t_all <= upto)
        i = np.flatnonzero(inside if has is None else inside & has)
        keys.append(i)
        times.append(t_all[i])
        kinds.append(np.full(len(i), kind, np.int8))
        stims.append(stim(i))
    key, t = np.concatenate(keys), np.concatenate(times)
    kind_, stim_ = np.concatenate(kinds), np.concatenate(stims)
    order = np.argsort(t, kind="stable")
    return key[order], t[order], kind_[order], stim_[order]


def _transitions(job: Job, writer: PartWriter, flushes: np.ndarray, addr: pa.Array,
                 tid_of: np.ndarray) -> None:
    fl = np.concatenate([flushes, [job.sched_close]])
    bounds = np.concatenate([[_NEVER], flushes, [_ALWAYS]])
    s_start = pa.array([a for a, _ in _S_KINDS])
    s_finish = pa.array([b for _, b in _S_KINDS])
    ug = f"update-graph-{job.graph_t / 1e9}"
    cr = f"client-releases-keys-{job.release_t / 1e9}"
    last: dict[int, tuple[np.ndarray, ...]] = {}

    def rows(k: int) -> tuple[np.ndarray, ...]:
        """Flush k's rows (key, time, kind, stimulus, alive), kept for the details table."""
        if k not in last:
            last.clear()
            key, t, kind, stim = _transition_rows(job, int(bounds[k]), int(bounds[k + 1]))
            # prefix/group only while the key is alive at the flush that writes the row
            last[k] = (key, t, kind, stim, fl[k] < job.t_forgot[key])
        return last[k]

    def transitions(k: np.ndarray, t: np.ndarray, kd: np.ndarray, st: np.ndarray,
                    alive: np.ndarray) -> list[Any]:
        ka, kda = pa.array(k), pa.array(kd)
        mem = kd == 4
        pa_mem = pa.array(mem)
        tf = pc.binary_join_element_wise("task-finished-", float_str(np.maximum(st, 0)), "")
        stim_col = pc.if_else(pa.array(st >= 0), tf,
                              pc.if_else(pa.array(st == -1), ug, cr))
        al = pa.array(alive)
        none = pa.scalar(None, pa.string())
        p = pa.array(job.prefix[k])
        tids = tid_of[job.worker[k], job.thread[k]]
        return [t, job.keys.take(ka),
                pc.if_else(al, job.prefix_names.take(p), none),
                pc.if_else(al, job.groups.take(p), none),
                s_start.take(kda), s_finish.take(kda), stim_col,
                pc.if_else(pa_mem, addr.take(pa.array(job.worker[k])), none),
                pa.array(tids, mask=~mem, type=pa.uint64()),
                pa.array(job.nbytes[k], mask=~mem, type=pa.int64())]

    def window(k: int) -> Window:
        r = rows(k)
        return len(r[0]), lambda lo, hi: transitions(*(a[lo:hi] for a in r))

    if job.run_format == 2:
        writer.add_windows(raw.SCHEDULER_TRANSITIONS, window)
        return

    # run format 3: the task-finished message's worker, thread and size as details
    def columns(k: int) -> Window:
        n, build = window(k)
        return n, lambda lo, hi: build(lo, hi)[:7]

    def details(k: int) -> Window:
        r = rows(k)
        done = np.flatnonzero(r[2] == 4)

        def build(lo: int, hi: int) -> list[Any]:
            c = transitions(*(a[done[lo:hi]] for a in r))
            return [c[0], c[1], *c[7:]]

        return len(done), build

    writer.add_windows(raw.SCHEDULER_TRANSITIONS_3, columns)
    writer.add_windows(raw.TRANSITION_DETAILS, details)


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
