"""Writing a whole synthetic run folder (``write_run``) and what correlate must find in it
(``Expected``); ``without_thread_ids`` rewrites its logs as Darshan before 3.5."""

from __future__ import annotations

import hashlib
import platform
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from collectors import darshan_env
from correlate.schema import RUN_FORMAT_VERSION
from testing.synthetic.darshan import scheduler_segments, worker_segments, write_log
from testing.synthetic.job import DEFAULT_PREFIXES, MS, SCHED_HOST, SEC, Job
from testing.synthetic.parts import write_json
from testing.synthetic.scheduler_tables import write_scheduler
from testing.synthetic.worker_tables import write_worker

#: the exe Darshan logs for a worker process: this interpreter started by multiprocessing
WORKER_EXE = (f"{sys.executable} -c from multiprocessing.spawn import spawn_main; "
              "spawn_main(tracker_fd=5, pipe_handle=7) --multiprocessing-fork")
#: the darshan-runtime the manifest names (never loaded: the logs are written directly)
DARSHAN_RUNTIME = "/opt/darshan/lib/libdarshan.so"

#: ``Expected.per_execution`` is made up to this many executions (a row of each, with its key)
PER_EXECUTION_MAX = 2_000_000


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
    #: read_bytes, write_bytes, read_ops, write_ops, io_time_s; None above
    #: ``PER_EXECUTION_MAX`` executions (the totals above still hold)
    per_execution: pl.DataFrame | None = field(repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("per_execution")
        return out


def write_all(job: Job) -> Expected:
    job.layout()
    job.budget()
    (job.folder / "darshan").mkdir(parents=True, exist_ok=True)
    (job.folder / "procs").mkdir(parents=True, exist_ok=True)
    write_meta_start(job)
    cpu_rows = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        pending: list[Future] = []

        def submit(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
            while len(pending) >= 2:  # bounded: at most two logs' segments alive
                pending.pop(0).result()
            pending.append(pool.submit(fn, *args, **kwargs))

        submit(write_log, job, scheduler_segments(job), host=SCHED_HOST, pid=job.sched_pid,
               delay_ns=0, start_true=job.sched_start, end_true=job.sched_close,
               exe="python job.py")
        for wk in job.workers:
            seg = worker_segments(job, wk)
            submit(write_log, job, seg, host=wk.host, pid=wk.pid, delay_ns=wk.delay_ns,
                   start_true=wk.process_start, end_true=wk.teardown + 50 * MS,
                   exe=WORKER_EXE)
            del seg
            proc_cpu, task_cpu, _ = write_worker(job, wk)
            cpu_rows.append({"host": wk.host, "pid": wk.pid, "process_cpu_s": proc_cpu,
                             "task_cpu_s": task_cpu,
                             "outside_tasks_cpu_s": proc_cpu - task_cpu})
        empty = pl.DataFrame(schema={"path": pl.String, "op": pl.String,
                                     "offset": pl.Int64, "length": pl.Int64,
                                     "t0": pl.Int64, "t1": pl.Int64,
                                     "thread_id": pl.UInt64})
        submit(write_log, job, empty, host=SCHED_HOST, pid=job.sched_pid + 1,
               delay_ns=0, start_true=job.sched_start + 2 * SEC,
               end_true=job.sched_start + 2 * SEC + 3 * MS, exe="uname -p")
        write_scheduler(job)
        for f in pending:
            f.result()
    write_meta_end(job)
    return expected(job, cpu_rows)


def write_meta_start(job: Job) -> None:
    # darshan.conf as collect writes it: this interpreter's prefixes and the run's procs/ are
    # left out of the trace
    darshan_env.environment(DARSHAN_RUNTIME, job.folder)
    job.manifest = {
        "format_version": job.run_format,
        "run_id": hashlib.md5(f"synthetic-{job.seed}-{job.E}-{job.S}".encode()).hexdigest(),
        "command": ["python", "job.py"], "cwd": "/home/user/jobs",
        "started_ns": job.t0, "ended_ns": None, "exit_code": None,
        "launcher_host": SCHED_HOST, "cores": job.W * job.T, "python": platform.python_version(),
        "platform": "Linux-synthetic-x86_64-with-glibc2.36",
        "versions": _versions(),
        "collector_options": {"darshan": DARSHAN_RUNTIME,
                              "flush_interval_s": job.interval / SEC,
                              "profile": job.profile},
        "darshan": {"reason": "--darshan", "runtime": DARSHAN_RUNTIME},
        "job_environment": {}, "dask_config": {}, "unknown": {},
        "synthetic": {"generator": "testing.synthetic", "workers": job.W,
                      "threads": job.T, "executions": job.E, "segments": job.S,
                      "prefixes": list(job.prefixes), "hosts": job.hosts,
                      "seed": job.seed, "darshan_offset_ns": job.darshan_offset},
    }
    write_json(job.folder / "manifest.json", job.manifest)


def write_meta_end(job: Job) -> None:
    procs = sorted(p.name for p in (job.folder / "procs").iterdir() if p.is_dir())
    job.manifest.update(ended_ns=job.end, exit_code=0, processes=procs,
                         processes_not_closed=[],
                         hosts=sorted({p.split("-", 1)[1].rsplit("-", 1)[0]
                                       for p in procs}))
    write_json(job.folder / "manifest.json", job.manifest)


def expected(job: Job, cpu_rows: list[dict[str, Any]]) -> Expected:
    E = job.E
    io = {"read_bytes": float(job.ex_read_bytes.sum()),
          "write_bytes": float(job.ex_write_bytes.sum()),
          "read_ops": float(job.ex_read_ops.sum()),
          "write_ops": float(job.ex_write_ops.sum()),
          "io_time_s": float(job.ex_io_ns.sum()) / 1e9}
    attributed = {"bytes": io["read_bytes"] + io["write_bytes"],
                  "ops": io["read_ops"] + io["write_ops"], **io}
    by_reason: dict[str, dict[str, float]] = {}
    by_kind: dict[str, dict[str, float]] = {}
    for (reason, kind), (b, o, t) in sorted(job.unattr.items()):
        for d, k in ((by_reason, reason), (by_kind, kind)):
            acc = d.setdefault(k, {"bytes": 0.0, "ops": 0.0, "io_time_s": 0.0})
            acc["bytes"] += b
            acc["ops"] += o
            acc["io_time_s"] += t / 1e9
    un = {m: sum(v[m] for v in by_reason.values()) for m in ("bytes", "ops", "io_time_s")}
    total = {m: attributed[m] + un[m] for m in ("bytes", "ops", "io_time_s")}
    per = pl.DataFrame({
        "prefix": job.prefix_names.take(pa.array(job.prefix)), "cpu_s": job.cpu / 1e9,
        "duration_s": job.dur / 1e9, "read_bytes": job.ex_read_bytes,
        "write_bytes": job.ex_write_bytes, "read_ops": job.ex_read_ops,
        "write_ops": job.ex_write_ops})
    if E <= PER_EXECUTION_MAX:
        wk_of = job.worker
        hosts = np.array([wk.host for wk in job.workers])
        pids = np.array([wk.pid for wk in job.workers])
        tids = np.array([wk.tids for wk in job.workers])
        per = pl.DataFrame({
            "key": job.keys, "prefix": per["prefix"], "host": hosts[wk_of],
            "pid": pids[wk_of], "thread_id": pl.Series(tids[wk_of, job.thread], dtype=pl.UInt64),
            "execution_seq": job.seq, "cpu_s": per["cpu_s"], "duration_s": per["duration_s"],
            "read_bytes": job.ex_read_bytes, "write_bytes": job.ex_write_bytes,
            "read_ops": job.ex_read_ops, "write_ops": job.ex_write_ops,
            "io_time_s": job.ex_io_ns / 1e9})
    per_prefix = {
        r["prefix"]: {k: v for k, v in r.items() if k != "prefix"}
        for r in per.group_by("prefix").agg(
            executions=pl.len(), read_bytes=pl.col("read_bytes").sum(),
            write_bytes=pl.col("write_bytes").sum(), read_ops=pl.col("read_ops").sum(),
            write_ops=pl.col("write_ops").sum(), cpu_s=pl.col("cpu_s").sum(),
            wall_s=pl.col("duration_s").sum()).sort("prefix").iter_rows(named=True)}
    per_execution = per.drop("duration_s") if E <= PER_EXECUTION_MAX else None
    clocks = []
    for wk in job.workers:
        samples = job.samples(wk)
        clocks.append({"host": wk.host, "pid": wk.pid, "domain": "darshan",
                       "offset_ns": job.darshan_offset, "uncertainty_ns": 0,
                       "samples": len(samples)})
    clocks += job.worker_clocks
    clocks.sort(key=lambda r: (r["host"], r["pid"], r["domain"]))
    return Expected(
        folder=str(job.folder), workers=job.W, threads=job.T, hosts=job.hosts,
        executions=E, segments=job.S, task_segments=job.n_task,
        executions_with_io=int((job.k > 0).sum()),
        files=int(job.paths.len()), duration_s=(job.end - job.t0) / 1e9,
        total=total, attributed=attributed, unattributed=un,
        unattributed_by_reason=by_reason, unattributed_by_thread_kind=by_kind,
        per_prefix=per_prefix,
        cpu={"task_cpu_s": float(job.cpu.sum()) / 1e9,
             "task_wall_s": float(job.dur.sum()) / 1e9, "per_worker": cpu_rows},
        profile={"rows": job.rows.get("worker_func_stats", 0),
                 "task_rows": job.prof_task_rows, "task_ncall": job.prof_task_ncall,
                 "untagged_rows": job.prof_untagged},
        clocks=clocks, rows=dict(sorted(job.rows.items())), per_execution=per_execution)


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
              outside_share: float = 0.001, run_format: int = RUN_FORMAT_VERSION) -> Expected:
    """Write a synthetic run folder (see the module doc) and return what correlate must find.

    ``segments`` counts every DXT segment in every log: the task segments plus the ones outside
    tasks (``max(3 × workers, outside_share × segments)`` outside-task segments, one marker per
    worker clock sample and three scheduler writes). ``files_per_prefix`` (default
    ``min(chunks, 1000)``) data files per prefix; ``hosts`` spreads workers over that many
    hosts; ``run_format`` 2 writes the parts of that format instead of streams;
    ``darshan_offset_ns`` puts Darshan's clock that far behind the worker clocks (the
    markers let correlate find it exactly)."""
    folder = Path(folder)
    if (folder / "manifest.json").exists():
        raise FileExistsError(f"{folder} already holds a run")
    job = Job(folder, workers=workers, threads=threads, executions=executions,
               segments=segments, prefixes=prefixes, hosts=hosts, seed=seed, profile=profile,
               flush_interval_s=flush_interval_s, darshan_offset_ns=darshan_offset_ns,
               files_per_prefix=files_per_prefix, outside_share=outside_share)
    job.run_format = run_format  # 3, or 2 (Arrow IPC parts, text inline)
    return write_all(job)


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
