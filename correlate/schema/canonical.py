"""Canonical frames: what every source adapter hands to the engine.

Our own run folders, the Mofka-Dask CSV folders and the MiniApp outputs are all turned into
these tables (plus ``io_segments``/``io_file_counters``/``darshan_logs`` from
``schema.darshan``); the engine (align, attribute, summarize) only ever sees these.

Clock naming: ``local_*_ns`` is the clock of the process that recorded the value (for a worker's
execution window, the worker host's clock); ``reported_*_ns`` is what Dask reported in startstops
(worker clock + ``scheduler_delay`` for compute/transfer, raw worker clock for disk-read/write);
``*_ns`` without prefix is the aligned run timeline (the scheduler's clock), added by
``correlate.timeline.align``.
"""

from __future__ import annotations

from correlate.schema.run import SCHEDULER_ARRIVALS, SENDER_NOTES, SPAN_METRICS_RAW
from correlate.schema.table import Column, Table

ROLES = "scheduler,worker,nanny,client,other"
WINDOW_SOURCES = "executor-hook,worker-transitions,task-stream,startstops"

PROCESSES = Table(
    "processes",
    "One row per process that contributed data (Dask processes and Darshan-only processes).",
    (
        Column("host", "String", "short host name, as Darshan records it", nullable=False),
        Column("pid", "Int64", "process id (null when the source does not know it)"),
        Column("role", f"Enum:{ROLES}", "what the process was in the Dask cluster", nullable=False),
        Column("worker", "String", "worker address (tcp://ip:port) for worker processes"),
        Column("name", "String", "worker name or executable"),
        Column("nthreads", "Int64", "executor threads of a worker"),
        Column("main_thread_id", "UInt64", "threading.get_ident() of the event-loop thread"),
        Column("local_directory", "String", "worker local directory (spill files live below it)"),
        Column("closed_cleanly", "Boolean", "wrote its closing record; null when unknown"),
        Column("match", "String", "how this process was matched to a worker (e.g. 'pid', "
               "'thread-id', 'single-host', 'unmatched')"),
    ),
    sort_by=("host", "pid", "worker"),
)

EXECUTIONS = Table(
    "executions",
    "One row per task execution attempt (a task that ran twice has two rows).",
    (
        Column("key", "Categorical", "Dask key, rendered by correlate.frames.keys.key_str",
               nullable=False),
        Column("prefix", "String", "task prefix (key name without token)"),
        Column("group", "String", "task group name"),
        Column("worker", "String", "worker address"),
        Column("host", "String", "host of the worker process"),
        Column("pid", "Int64", "worker process id"),
        Column("thread_id", "UInt64", "threading.get_ident() of the executing thread"),
        Column("execution_seq", "Int64", "per-process number of the execution when known"),
        Column("local_start_ns", "Int64", "start of the execution, worker clock", nullable=False),
        Column("local_stop_ns", "Int64", "end of the execution, worker clock", nullable=False),
        Column("cpu_s", "Float64", "thread CPU seconds of the execution (null when not measured)"),
        Column("status", "String", "ok, error, cancelled, …"),
        Column("window_source", f"Enum:{WINDOW_SOURCES}", "where the window came from"),
    ),
    sort_by=("host", "pid", "local_start_ns", "key"),
)

TRANSITIONS = Table(
    "transitions",
    "Task state transitions seen by the scheduler and by the workers. Unknown states are kept.",
    (
        Column("key", "Categorical", "Dask key", nullable=False),
        Column("side", "Enum:scheduler,worker", "who recorded it", nullable=False),
        Column("worker", "String", "worker address (worker side: the recording worker)"),
        Column("host", "String", "host of the recording process"),
        Column("pid", "Int64", "recording process"),
        Column("start", "Categorical", "state before", nullable=False),
        Column("finish", "Categorical", "state after", nullable=False),
        Column("stimulus_id", "String", "Dask stimulus id"),
        Column("thread_id", "UInt64", "executing thread (scheduler processing->memory only)"),
        Column("nbytes", "Int64", "result size (scheduler processing->memory only)"),
        Column("local_time_ns", "Int64", "time of the transition, recording process clock",
               nullable=False),
    ),
    sort_by=("local_time_ns", "side", "key", "start", "finish"),
)

STARTSTOPS = Table(
    "startstops",
    "Every startstops entry Dask reported for a task (compute, transfer, disk-read, disk-write…).",
    (
        Column("key", "Categorical", "Dask key", nullable=False),
        Column("worker", "String", "worker that reported it"),
        Column("action", "String", "compute, transfer, disk-read, disk-write, deserialize",
               nullable=False),
        Column("source", "String", "peer worker for transfers"),
        Column("reported_start_ns", "Int64", "worker clock + scheduler_delay (compute/transfer); "
               "raw worker clock (disk-*)", nullable=False),
        Column("reported_stop_ns", "Int64", "same clock as reported_start_ns", nullable=False),
    ),
    sort_by=("reported_start_ns", "key", "action"),
)

TRANSFERS = Table(
    "transfers",
    "Data transfers between workers (and to clients), one row per transfer (deduplicated).",
    (
        Column("transfer_id", "Int64", "unique within the run", nullable=False),
        Column("direction", "Enum:incoming,outgoing", "as seen by the recording worker",
               nullable=False),
        Column("worker", "String", "the recording worker"),
        Column("host", "String", "host of the recording worker"),
        Column("pid", "Int64", "recording worker process"),
        Column("peer", "String", "the other worker (null: a client)"),
        Column("total_bytes", "Int64", "bytes of the keys transferred"),
        Column("compressed_bytes", "Int64", "bytes on the wire (outgoing only)"),
        Column("reported_start_ns", "Int64", "worker clock + scheduler_delay"),
        Column("reported_stop_ns", "Int64", "worker clock + scheduler_delay"),
        Column("scheduler_delay_ns", "Int64", "the scheduler_delay in reported_start/stop, "
               "where the source gives it exactly (null: estimated from the worker's samples)"),
    ),
    sort_by=("transfer_id",),
)

TRANSFER_KEYS = Table(
    "transfer_keys",
    "Which keys each transfer carried.",
    (
        Column("transfer_id", "Int64", "→ transfers.transfer_id", nullable=False),
        Column("key", "Categorical", "Dask key", nullable=False),
        Column("nbytes", "Int64", "size of that key"),
    ),
    sort_by=("transfer_id", "key"),
)

DEPENDENCIES = Table(
    "dependencies",
    "Task graph edges: key depends on depends_on.",
    (
        Column("key", "Categorical", "dependent task", nullable=False),
        Column("depends_on", "Categorical", "dependency", nullable=False),
        Column("client", "Categorical", "submitting client"),
        Column("local_time_ns", "Int64", "submit time, scheduler clock"),
    ),
    sort_by=("key", "depends_on"),
)

#: what a profile row's ``ncall`` counts
NCALL_KIND = "Enum:calls,samples"

FUNC_STATS = Table(
    "func_stats",
    "Profile rows per (process, thread, execution, function).",
    (
        Column("host", "String", "host"),
        Column("pid", "Int64", "process"),
        Column("thread_id", "UInt64", "thread (null: aggregated over threads)"),
        Column("execution_seq", "Int64", "execution in that process (null: outside any task "
               "or not splittable)"),
        Column("module", "String", "module of the function"),
        Column("name", "String", "function name", nullable=False),
        Column("file", "String", "source file"),
        Column("line", "Int64", "first line"),
        Column("ncall", "Int64", "calls, or stack samples (see ncall_kind)"),
        Column("ttot_s", "Float64", "inclusive time"),
        Column("tsub_s", "Float64", "exclusive time"),
        Column("clock", "Enum:wall,cpu", "clock of ttot/tsub"),
        Column("ncall_kind", NCALL_KIND, "what ncall counts: calls (a deterministic profiler: "
               "Yappi, pstats) or samples (the stack sampler: not calls)"),
    ),
    sort_by=("host", "pid", "thread_id", "execution_seq", "file", "line", "name"),
)

CLOCK_SAMPLES = Table(
    "clock_samples",
    "Clock relations of a worker process: its local time and Dask's scheduler_delay estimate.",
    (
        Column("host", "String", "host", nullable=False),
        Column("pid", "Int64", "process", nullable=False),
        Column("local_time_ns", "Int64", "worker clock", nullable=False),
        Column("scheduler_delay_s", "Float64", "Dask's estimate of scheduler clock − worker clock"),
        Column("latency_s", "Float64", "round-trip latency to the scheduler (uncertainty)"),
        Column("process_cpu_s", "Float64", "user+system CPU of the whole process so far"),
    ),
    sort_by=("host", "pid", "local_time_ns"),
)

HOST_LOAD = Table(
    "host_load",
    "The host's load during the run, as every recording process sampled it (start, flushes).",
    (
        Column("host", "String", "host", nullable=False),
        Column("pid", "Int64", "the process that sampled", nullable=False),
        Column("local_time_ns", "Int64", "that process's clock", nullable=False),
        Column("load1", "Float64", "1-minute load average"),
        Column("runnable_count", "Int64", "processes running or runnable at that instant"),
        Column("cpus", "Int64", "CPUs of the host"),
        Column("host_busy_s", "Float64", "busy CPU time of all the host's CPUs since boot"),
        Column("process_cpu_s", "Float64", "user+system CPU of the sampling process so far"),
    ),
    sort_by=("host", "pid", "local_time_ns"),
)

CLOCK_MARKERS = Table(
    "clock_markers",
    "Marker writes made at known local times, found again in the process's DXT trace.",
    (
        Column("host", "String", "host", nullable=False),
        Column("pid", "Int64", "process", nullable=False),
        Column("path", "String", "marker file path", nullable=False),
        Column("offset", "Int64", "file offset of the marker write", nullable=False),
        Column("length", "Int64", "bytes written", nullable=False),
        Column("local_time_ns", "Int64", "time.time_ns() just before the write", nullable=False),
    ),
    sort_by=("host", "pid", "offset"),
)

FILE_OPENS = Table(
    "file_opens",
    "Files an execution's context opened, on the thread that opened them (helper threads "
    "included): what ties a library's helper-thread I/O to the task it served.",
    (
        Column("host", "String", "host", nullable=False),
        Column("pid", "Int64", "process", nullable=False),
        Column("thread_id", "UInt64", "opening thread", nullable=False),
        Column("execution_seq", "Int64", "execution in that process", nullable=False),
        Column("path", "String", "absolute path", nullable=False),
        Column("local_time_ns", "Int64", "time of the open, process clock", nullable=False),
        Column("access", "Enum:read,write,read-write", "what the open allows (null: unknown, "
               "e.g. runs recorded before it was kept)"),
    ),
    sort_by=("host", "pid", "thread_id", "local_time_ns", "path"),
)

EXECUTION_SLICES = Table(
    "execution_slices",
    "Active slices of coroutine executions: when the task's coroutine ran on the event loop.",
    (
        Column("host", "String", "host", nullable=False),
        Column("pid", "Int64", "process", nullable=False),
        Column("execution_seq", "Int64", "execution in that process", nullable=False),
        Column("local_start_ns", "Int64", "slice start, process clock", nullable=False),
        Column("local_stop_ns", "Int64", "slice end, process clock", nullable=False),
        Column("cpu_s", "Float64", "event-loop thread CPU in the slice"),
    ),
    sort_by=("host", "pid", "execution_seq", "local_start_ns"),
)

TASK_LABELS = Table(
    "task_labels",
    "Each task's Dask span and annotations (one row per key).",
    (
        Column("key", "Categorical", "Dask key", nullable=False),
        Column("span_id", "String", "Dask span id"),
        Column("annotations", "String", "other annotations, JSON with sorted keys"),
    ),
    sort_by=("key",),
)

SPAN_TREE = Table(
    "span_tree",
    "Dask's spans (distributed.span): id, name path, parent.",
    (
        Column("span_id", "String", "span id", nullable=False),
        Column("span", "String", "name path, its tags joined by ' / '", nullable=False),
        Column("parent_id", "String", "enclosing span (null: a root)"),
    ),
    sort_by=("span", "span_id"),
)

#: as the collectors record them (the same columns: no adapter reshapes them)
SPAN_DASK_METRICS = Table(
    "span_dask_metrics",
    "Dask's fine performance metrics per span, the span's subtree included.",
    SPAN_METRICS_RAW.columns, sort_by=SPAN_METRICS_RAW.sort_by)

#: as the collectors record them (the same columns: no adapter reshapes them)
DATA_ARRIVALS = Table(
    "data_arrivals",
    "Keys that entered Dask's memory without an execution, as the scheduler learnt of them "
    "(scheduler clock).", SCHEDULER_ARRIVALS.columns, sort_by=SCHEDULER_ARRIVALS.sort_by)

SENDERS = Table(
    "senders",
    "What clients said about the data they send: their rank, and per scattered key its step "
    "and the scatter call's duration.", SENDER_NOTES.columns, sort_by=SENDER_NOTES.sort_by)

WORKER_PAUSES = Table(
    "worker_pauses",
    "When each worker was paused by Dask's memory manager (its memory reached the pause "
    "fraction: it starts no task until it is resumed), scheduler clock.",
    (
        Column("worker", "String", "worker address", nullable=False),
        Column("start_ns", "Int64", "paused (scheduler clock)", nullable=False),
        Column("stop_ns", "Int64", "resumed (null: paused until its records end)"),
    ),
    sort_by=("worker", "start_ns"),
)

REJECTS = Table(
    "rejects",
    "Input records that were not used, with the reason (nothing is dropped silently).",
    (
        Column("source", "String", "adapter (darshan, run-folder, mofka-csv, …)", nullable=False),
        Column("file", "String", "file the records came from"),
        Column("reason", "String", "why they were not used", nullable=False),
        Column("count", "Int64", "number of records", nullable=False),
    ),
    sort_by=("source", "file", "reason"),
)

ALL = (PROCESSES, EXECUTIONS, TRANSITIONS, STARTSTOPS, TRANSFERS, TRANSFER_KEYS, DEPENDENCIES,
       FUNC_STATS, CLOCK_SAMPLES, CLOCK_MARKERS, HOST_LOAD, FILE_OPENS, EXECUTION_SLICES,
       TASK_LABELS, SPAN_TREE, SPAN_DASK_METRICS, DATA_ARRIVALS, SENDERS, WORKER_PAUSES,
       REJECTS)
