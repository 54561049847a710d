"""What ``correlate`` writes into its output folder (``RUN_DIR/correlated/`` by default).

Reports read only these tables (plus ``summary.json``), never the raw sources.

Attribution methods (column ``attribution``):

- ``exact-thread``: the segment's pthread id equals the execution's thread id, same host and
  process, and the segment's midpoint lies inside the execution window. One segment → one task.
- ``inferred-thread``: as exact-thread, but the execution's thread was not recorded (imported
  runs): it was inferred from the segments' pthread ids — the only execution that could be on
  that thread at that instant, each executor thread running one task at a time
  (``correlate/attribution/threads.py``). One segment → one task.
- ``helper-context``: issued by a library's helper thread (not an executor thread, not the event
  loop) on a file that the execution's context opened on that same thread (the collector's
  record of Python-level opens, carried to helper threads by ``contextvars``). Whole.
- ``helper-file``: a helper thread's segment on a file that the executions overlapping it
  touched themselves (on their own thread, or an open in their context); whole for one such
  execution, shared in proportion to the overlap among several.
- ``helper-shared``: as helper-file, for a segment that several executions overlapping it had
  touched the file of (concurrent readers of one file through pyarrow's I/O pool): shared in
  proportion to the overlap, since no evidence separates them; ``summary.json`` (and the
  warnings) say per file with how many concurrent readers.
- ``stdio-file`` (task_files and tasks only): bytes a process moved through C stdio
  (``fread``/``fwrite``, numpy's ``tofile``/``fromfile``), which Darshan counts per file but DXT
  does not trace, given whole to the one execution of that process whose context opened the
  file in Python (``correlate/attribution/stdio.py``). No segment, no time of its own.
- ``counter-file`` (task_files and tasks only): a process whose Darshan log has no DXT: a
  file's POSIX counter bytes given whole to the one execution that opened the file (the record
  of opens) and whose window holds the file's first and last call (``correlate/attribution/counters.py``).
- ``helper-split``: a helper thread's segment that no file links to a task, split across the
  executions of its process that overlap it, as window-split does.
- ``window-split``: no thread ids on one side; the segment is split across the executions of the
  same process that overlap it in time, in proportion to the overlap (bytes and ops may then be
  fractional). The part outside every window stays unattributed.
- ``stdio-split``: as stdio-file, for a file that several executions of the process opened:
  shared in proportion to how often each opened it.
- ``stdio-reassigned``: a C stdio record that contradicts the record of opens (its first or
  last call lies in no window of the executions that opened the file for it, or the file was
  opened only for the other operation: the runtime names an ``fdopen``'d stream from its
  descriptor table), given to the evident owners among its openers and the executions of the
  process that opened a file for that operation and got no stdio bytes of their own: the one
  whose window holds its calls, whole, or those whose own files' sizes add up to its bytes,
  each its size (a file's size taken only from records consistent with its opens, or, where
  its read and write records both hold misfiled streams, the size both leave it when they
  agree to the byte). Named in a warning.
- ``stdio-refiled``: as stdio-reassigned, for the bytes given to an evident owner that did not
  open the record's file: filed under the one file it opened for that operation whose own
  record is missing or inconsistent (the record of opens), not under Darshan's name for them.
- ``counter-split``: as counter-file, for a file whose openers' windows do not single one out:
  the counters' span (first to last call) shared by time among the openers running in it,
  weighted by the process's HEATMAP bins where the log has them; the part of the span no
  opener ran in stays unattributed. An estimate.
- ``counter-window``: no record of opens (imported runs): the counters' span shared by the same
  time rule among every execution of the process running in it. An estimate: nothing says
  which of them touched the file.
- ``inconsistent-split``: a C stdio record as for stdio-reassigned where no owner is evident:
  shared by time among those candidates running during its calls; the rest unattributed.
  Named in a warning.
- ``p2p-shuffle``: a write into a P2P shuffle's disk buffer (``<local_directory>/shuffle-<id>-
  <run>/``) that the worker itself issued (event loop or offload thread, no task's thread):
  given whole to that shuffle's barrier task ``shuffle-barrier-<id>``, its owner
  (``correlate/attribution/p2p.py``); which transfer task sent the bytes is not recorded. Not thread-exact.
  Accounted at the barrier in ``task_files`` only: the shuffle's bytes (``summary.json``
  ``shuffles``), not the barrier's own reads, writes or I/O time in ``tasks``.
- ``none``: the execution has no I/O attributed (or no I/O data exists for its process); a
  segment given to no execution (its reason is in ``unattributed``).
- ``spill`` (segments only): a read or write of a Dask spill file, given to no execution; the
  key it belongs to is counted in ``tasks`` (``spilled_bytes`` …).

The methods are listed from the most to the least exact; an execution's ``attribution`` is the
least exact method that gave it I/O (else the best its process allowed).
"""

from __future__ import annotations

from correlate.schema import methods
from correlate.schema.canonical import NCALL_KIND
from correlate.schema.findings import CRITICAL_PATH, FINDINGS
from correlate.schema.table import Column, Table

#: the methods' Enum, from the one table of methods (``correlate.schema.methods``)
ATTRIBUTION = methods.ENUM

TASKS = Table(
    "tasks",
    "One row per task execution with its CPU, I/O, waiting and transfers.",
    (
        Column("execution_id", "Int64", "unique per run (deterministic order)", nullable=False),
        Column("key", "String", "Dask key", nullable=False),
        Column("prefix", "String", "task prefix"),
        Column("group", "String", "Dask task group, as the scheduler named it or, for a task "
               "forgotten before its names were logged, from the key by Dask's own rule "
               "(distributed.utils.key_split_group)"),
        Column("span", "String", "Dask span name path, tags joined by ' / ' (distributed.span; "
               "'default' for tasks outside any span; null: not recorded)"),
        Column("span_id", "String", "Dask span id"),
        Column("annotations", "String", "the task's other Dask annotations (dask.annotate: "
               "priority, retries, resources, the user's own), JSON with sorted keys"),
        Column("worker", "String", "worker address"),
        Column("host", "String", "worker host"),
        Column("pid", "Int64", "worker process id"),
        Column("thread_id", "UInt64", "executing thread"),
        Column("thread_inferred", "Boolean", "thread_id was not recorded but inferred from "
               "the DXT pthread ids (correlate/attribution/threads.py)"),
        Column("start_ns", "Int64", "start on the aligned run timeline (scheduler clock)"),
        Column("stop_ns", "Int64", "stop on the aligned run timeline"),
        Column("local_start_ns", "Int64", "start, worker clock"),
        Column("local_stop_ns", "Int64", "stop, worker clock"),
        Column("duration_s", "Float64", "stop − start"),
        Column("awaiting_s", "Float64", "coroutine task: time its coroutine was suspended "
               "between its active slices on the event loop (null: ran on a thread)"),
        Column("cpu_s", "Float64", "thread CPU seconds of the execution (null: not measured)"),
        Column("read_bytes", "Float64", "bytes read (fractional only for window-split)"),
        Column("write_bytes", "Float64", "bytes written (the execution's own: P2P shard "
               "writes accounted at a barrier are in task_files and summary shuffles)"),
        Column("read_ops", "Float64", "read operations"),
        Column("write_ops", "Float64", "write operations"),
        Column("io_time_s", "Float64", "time inside I/O calls"),
        Column("attribution", ATTRIBUTION, "how the I/O of this row was attributed"),
        Column("wait_dependencies_s", "Float64", "scheduler: waiting → processing/queued"),
        Column("wait_queued_s", "Float64", "scheduler: queued → processing"),
        Column("wait_thread_s", "Float64", "worker: ready → executing while every executor "
               "thread of its worker ran a task (its worker's memory pauses and free-thread "
               "time excluded)"),
        Column("wait_paused_s", "Float64", "worker: ready → executing while its worker was "
               "paused by Dask's memory manager (null: no pause in that wait)"),
        Column("wait_free_thread_s", "Float64", "worker: ready → executing while a thread of "
               "its worker was free: the worker's event loop had not handed it over (null: "
               "the worker's thread count was not recorded)"),
        Column("wait_external_s", "Float64", "waiting for data from outside Dask "
               "(scattered or external-state dependencies)"),
        Column("spilled_bytes", "Float64", "bytes of this task's result written to a spill "
               "file (DXT; on its key's last execution, null on its others; null: no DXT)"),
        Column("spill_write_s", "Float64", "time writing them"),
        Column("spill_writes", "Int64", "times its result was written to disk"),
        Column("unspilled_bytes", "Float64", "bytes of its result read back from disk"),
        Column("unspill_read_s", "Float64", "time reading them back"),
        Column("input_read_back_s", "Float64", "Dask's disk-read time for this execution's "
               "inputs, before it ran"),
        Column("transfer_s", "Float64", "time of incoming transfers for this task's inputs"),
        Column("transfer_bytes", "Int64", "bytes of this task's inputs fetched from peers"),
        Column("transfer_sources", "String", "peer workers the inputs came from (comma list)"),
        Column("status", "String", "how the execution ended: ok, error, or handed back "
               "before its end (not a run of its task): rescheduled (Dask's Reschedule), "
               "cancelled (released while running); lost: ran to an end on a worker that then died, "
               "its result released with it and its task run again (correlate/timeline/lost.py)"),
        Column("window_source", "String", "where the execution window came from "
               "(scheduler-startstops: a row from the scheduler's records of an execution "
               "its worker died before writing)"),
    ),
    sort_by=("execution_id",),
)

TASK_FILES = Table(
    "task_files",
    "I/O per execution × file × operation × attribution method.",
    (
        Column("execution_id", "Int64", "→ tasks.execution_id", nullable=False),
        Column("key", "String", "Dask key", nullable=False),
        Column("path", "String", "file"),
        Column("op", "Enum:read,write", "operation", nullable=False),
        Column("bytes", "Float64", "bytes"),
        Column("ops", "Float64", "operations"),
        Column("io_time_s", "Float64", "time inside the calls"),
        Column("attribution", ATTRIBUTION, "method"),
    ),
    sort_by=("execution_id", "path", "op", "attribution"),
)

TASK_FUNCTIONS = Table(
    "task_functions",
    "Profile per execution × function.",
    (
        Column("execution_id", "Int64", "→ tasks.execution_id", nullable=False),
        Column("key", "String", "Dask key", nullable=False),
        Column("module", "String", "module"),
        Column("name", "String", "function", nullable=False),
        Column("file", "String", "source file"),
        Column("line", "Int64", "line"),
        Column("ncall", "Int64", "calls, or stack samples (see ncall_kind)"),
        Column("tsub_s", "Float64", "exclusive time"),
        Column("ttot_s", "Float64", "inclusive time"),
        Column("clock", "Enum:wall,cpu", "clock"),
        Column("ncall_kind", NCALL_KIND, "what ncall counts: calls (Yappi, pstats) or samples "
               "(the stack sampler)"),
    ),
    sort_by=("execution_id", "tsub_s", "file", "line", "name"),
)

UNATTRIBUTED = Table(
    "unattributed",
    "I/O that no task execution explains, grouped by why.",
    (
        Column("host", "String", "host"),
        Column("pid", "Int64", "process"),
        Column("role", "String", "role of the process (worker, nanny, client, other, unknown)"),
        Column("thread_kind", "String", "event-loop, executor-outside-task, other-thread, "
               "no-thread-id"),
        Column("reason", "String", "why it is not attributed", nullable=False),
        Column("path", "String", "file"),
        Column("op", "Enum:read,write", "operation"),
        Column("bytes", "Float64", "bytes"),
        Column("ops", "Float64", "operations"),
        Column("io_time_s", "Float64", "time inside the calls"),
    ),
    sort_by=("host", "pid", "reason", "thread_kind", "path", "op"),
)

CLOCKS = Table(
    "clocks",
    "Offset of each process clock onto the run timeline, with uncertainty.",
    (
        Column("host", "String", "host", nullable=False),
        Column("pid", "Int64", "process"),
        Column("domain", "Enum:worker,darshan", "which clock", nullable=False),
        Column("offset_ns", "Int64", "add to local times to get the aligned / corrected time",
               nullable=False),
        Column("uncertainty_ns", "Int64", "half-width of the uncertainty (null: unknown)"),
        Column("method", "String", "how it was estimated", nullable=False),
        Column("samples", "Int64", "number of observations used"),
    ),
    sort_by=("host", "pid", "domain"),
)

SEGMENTS = Table(
    "segments",
    "Every DXT segment on the run timeline with the execution that holds (most of) it; what the "
    "timeline views and the trace draw. Written as a parquet dataset: `segments.parquet` is a "
    "folder of one file per attribution partition (whole processes, in host and pid order, "
    "each written where its partition ran: on a cluster's workers with `--cluster`), which "
    "polars, pyarrow, pandas and Dask read as one table (DuckDB: "
    "`segments.parquet/*.parquet`).",
    (
        Column("seg_id", "Int64", "row of the input segment table", nullable=False),
        Column("host", "String", "host"),
        Column("pid", "Int64", "process"),
        Column("thread_id", "UInt64", "issuing thread (null: layout without thread ids)"),
        Column("path", "String", "file"),
        Column("op", "Enum:read,write", "operation"),
        Column("offset", "Int64", "file offset"),
        Column("length", "Int64", "bytes"),
        Column("start_ns", "Int64", "start on the run timeline"),
        Column("stop_ns", "Int64", "end on the run timeline"),
        Column("execution_id", "Int64", "execution holding the largest share (null: none)"),
        Column("attributed_weight", "Float64", "share of the segment attributed to executions"),
        Column("attribution", ATTRIBUTION, "the helper rule that attributed it, else the "
               "method its process allowed"),
    ),
    sort_by=("host", "pid", "thread_id", "start_ns", "seg_id"),
)

EVENTS = Table(
    "events",
    "Task transitions (scheduler and worker side) on the run timeline.",
    (
        Column("time_ns", "Int64", "run timeline", nullable=False),
        Column("side", "Enum:scheduler,worker", "who recorded it", nullable=False),
        Column("key", "String", "Dask key", nullable=False),
        Column("worker", "String", "worker address"),
        Column("host", "String", "host of the recording process"),
        Column("pid", "Int64", "recording process"),
        Column("start", "String", "state before", nullable=False),
        Column("finish", "String", "state after", nullable=False),
        Column("stimulus_id", "String", "Dask stimulus id"),
    ),
    sort_by=("time_ns", "side", "key", "start", "finish"),
)

SLICES = Table(
    "slices",
    "Active slices of coroutine executions: when the task's coroutine ran on the event loop "
    "(between awaits); what the timelines draw for such an execution.",
    (
        Column("execution_id", "Int64", "→ tasks.execution_id", nullable=False),
        Column("start_ns", "Int64", "slice start on the run timeline", nullable=False),
        Column("stop_ns", "Int64", "slice end on the run timeline", nullable=False),
        Column("cpu_s", "Float64", "event-loop thread CPU in the slice"),
    ),
    sort_by=("execution_id", "start_ns"),
)

ARRIVALS = Table(
    "arrivals",
    "Data that entered Dask from outside (written only when a run has some): each key "
    "scattered into a worker (Scheduler.update_data) or brought to memory from a state Dask "
    "does not define (the DEISA fork's external tasks), one row per key and worker "
    "(correlate/timeline/arrivals.py, docs/in-situ.md).",
    (
        Column("time_ns", "Int64", "when the scheduler learnt of it, run timeline",
               nullable=False),
        Column("key", "String", "Dask key", nullable=False),
        Column("step", "String", "the step the sender named, else the key's Dask task group",
               nullable=False),
        Column("worker", "String", "worker holding it (null: not recorded)"),
        Column("nbytes", "Int64", "size as Dask knows it (null: not recorded)"),
        Column("client", "String", "sending client's id (null: not recorded)"),
        Column("client_address", "String", "sending client's address (null: not recorded)"),
        Column("rank", "Int64", "sender's rank, as the client said (null: not said)"),
        Column("send_s", "Float64", "the sender's scatter call, its own clock (null: not "
               "timed)"),
        Column("source", "Enum:update-data,external-state", "how Dask learnt of it",
               nullable=False),
    ),
    sort_by=("time_ns", "key", "worker"),
)

ARRIVAL_STEPS = Table(
    "arrival_steps",
    "Per step of arrivals: how they spread across senders and how long after the last one "
    "the analytics that used them ended (written only when a run has arrivals).",
    (
        Column("step", "String", "see arrivals.step", nullable=False),
        Column("keys", "Int64", "keys that arrived", nullable=False),
        Column("senders", "Int64", "distinct senders (rank, else client)"),
        Column("nbytes", "Int64", "bytes that arrived (null: a size not recorded)"),
        Column("first_ns", "Int64", "first arrival, run timeline", nullable=False),
        Column("last_ns", "Int64", "last arrival, run timeline", nullable=False),
        Column("spread_s", "Float64", "last − first arrival", nullable=False),
        Column("last_client", "String", "client whose data arrived last"),
        Column("last_rank", "Int64", "its rank (null: not said)"),
        Column("analytics_tasks", "Int64", "executions of tasks that take one of the step's "
               "keys as a direct input", nullable=False),
        Column("analytics_end_ns", "Int64", "the last of them to end (null: none ran)"),
        Column("lag_s", "Float64", "last arrival → analytics end (null: none ran)"),
        Column("wait_external_s", "Float64", "the longest wait_external_s of those tasks"),
    ),
    sort_by=("first_ns", "step"),
)

ALL = (TASKS, TASK_FILES, TASK_FUNCTIONS, UNATTRIBUTED, CLOCKS, SEGMENTS, EVENTS, SLICES,
       ARRIVALS, ARRIVAL_STEPS, CRITICAL_PATH, FINDINGS)
#: written only when a run has such data (docs/in-situ.md): their absence is no gap
OPTIONAL = (ARRIVALS, ARRIVAL_STEPS)
OPTIONAL_NAMES = tuple(t.name for t in OPTIONAL)
#: the output folder's tables that every run has, by name (``<name>.parquet``)
NAMES = tuple(t.name for t in ALL if t not in OPTIONAL)
