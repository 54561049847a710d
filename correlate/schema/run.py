"""Raw capture tables of the run folder (``procs/<role>-<host>-<pid>/<table>.arrows``),
written by ``collectors`` and read by ``correlate.sources.run_folder``.

Run format 3 (``collectors.sink``): one Arrow IPC *stream* per table and process
(``<table>.arrows``, uncompressed): the schema message, then one record batch per flush,
appended for the life of the process, so a process writes a constant number of files. Columns
are the table's in order: 64-bit integers, doubles and UTF-8 text (Enum columns as text), except
those of ``STRING_IDS``, which hold 32-bit ids into the process's ``strings.arrows`` (``STRINGS``:
the id-th row holds the text; ids are written before any batch that uses them). A process
killed while it appends leaves a torn tail after its last complete batch; readers stop there.
``<table>.snapshot.arrow`` (an Arrow IPC file, string ids too) holds a cumulative table that
each flush replaces.

Earlier formats, still read: 2 wrote each flush's rows of a table as an Arrow IPC file
``<table>/part-NNNNNN.arrow`` (``snapshot.arrow`` beside them), with text inline; 1 the same as
``part-NNNNNN.parquet``.

Clocks: ``local_*_ns`` = the recording process's ``time.time_ns()``; ``reported_*_ns`` = what
Dask reported in ``startstops`` (worker clock + ``scheduler_delay`` for compute and transfer,
raw worker clock for disk-read/disk-write).
"""

from __future__ import annotations

from correlate.schema.table import Column, Table

#: run-folder subfolder for Darshan's memory-mapped logs (DARSHAN_MMAP_LOGPATH), beside
#: ``darshan/``, whose complete logs ``correlate`` reads: these are the records of processes
#: that did not close their log (``collectors.darshan_after`` removes the empty ones)
MMAP_FOLDER = "darshan-mmap"
#: executables whose processes Darshan does not instrument (``APP_EXCLUDE``, Darshan 3.4.0 and
#: later: POSIX extended regexes matched against the first word of the process's command line,
#: argv[0] as the script ran it, with or without a path): a batch script's short helper
#: commands and the launchers that start the workers, whose logs are noise beside the Dask
#: processes' own. Python interpreters (the scheduler, the workers, the client) never match.
HELPER_APPS = ("sleep", "uname", "hostname", "date", "env", "cat", "echo", "printf", "true",
               "false", "test", "seq", "expr", "id", "whoami", "basename", "dirname",
               "readlink", "realpath", "mkdir", "rmdir", "rm", "cp", "mv", "ln", "ls",
               "touch", "chmod", "tee", "head", "tail", "cut", "tr", "sort", "uniq", "wc",
               "grep", "egrep", "sed", "awk", "gawk", "xargs", "find", "which", "nproc",
               "ps", "kill", "pgrep", "timeout", "bash", "sh", "dash", "zsh", "ssh",
               "mpiexec", "mpirun", "mpiexec.hydra", "hydra_pmi_proxy", "srun", "aprun",
               "pbsdsh", "qstat", "squeue", "scontrol")
#: the ``APP_EXCLUDE`` regex of ``HELPER_APPS`` (one regex: no comma, no space)
APP_EXCLUDE = "(^|/)(" + "|".join(a.replace(".", "\\.") for a in HELPER_APPS) + ")$"
#: the suffix of run format 2's parts (run format 1's: ``.parquet``)
PART_SUFFIX = ".arrow"
#: run format 3: a table's stream, and its snapshot, in the process folder
STREAM_SUFFIX = ".arrows"
SNAPSHOT_SUFFIX = ".snapshot.arrow"
#: each process's description, written at its start; its clean close adds the closing record
#: (rows, drops per table and reason, …) as the field CLOSED_FIELD
PROC_JSON, CLOSED_FIELD = "proc.json", "closed"
#: older collectors wrote the closing record as closed.json, into bytes reserved at start in
#: CLOSED_RESERVE_NAME where the folder was full (blank: not written), left under that name
#: where the folder refused the rename
CLOSED_JSON, CLOSED_RESERVE_NAME = "closed.json", ".closed.json.reserve"

_T = Column("local_time_ns", "Int64", "when the hook ran, this process's clock", nullable=False)
_KEY = Column("key", "String", "Dask key (correlate.frames.keys.key_str)", nullable=False)
#: the key of the tables the engine joins by key (transitions, executions, startstops,
#: dependencies, transfer keys, annotations): a key is in many of their rows, each row keeping
#: a code of it
_CODED_KEY = Column("key", "Categorical", _KEY.doc, nullable=False)

SCHEDULER_TRANSITIONS = Table(
    "scheduler_transitions", "Every task transition seen by the scheduler.",
    (_T, _CODED_KEY,
     Column("prefix", "Categorical", "task prefix name"),
     Column("group", "Categorical", "task group name"),
     Column("start", "Categorical", "state before", nullable=False),
     Column("finish", "Categorical", "state after", nullable=False),
     Column("stimulus_id", "String", "Dask stimulus id"),
     Column("worker", "String", "worker address (processing->memory)"),
     Column("thread_id", "UInt64", "executing thread (processing->memory)"),
     Column("nbytes", "Int64", "result size (processing->memory)")),
    sort_by=("local_time_ns", "key"))

TASK_STARTSTOPS = Table(
    "task_startstops", "One row per startstops entry Dask reported with a transition.",
    (_T, _CODED_KEY,
     Column("worker", "String", "reporting worker"),
     Column("thread_id", "UInt64", "executing thread"),
     Column("action", "String", "compute, transfer, disk-read, disk-write, …", nullable=False),
     Column("reported_start_ns", "Int64", "see module doc", nullable=False),
     Column("reported_stop_ns", "Int64", "see module doc", nullable=False),
     Column("source", "String", "peer worker of a transfer")),
    sort_by=("local_time_ns", "key", "action"))

TASK_DEPENDENCIES = Table(
    "task_dependencies", "Graph edges from update_graph (key depends on depends_on).",
    (_T, _CODED_KEY,
     Column("depends_on", "Categorical", "dependency key"),
     Column("client", "String", "submitting client")),
    sort_by=("local_time_ns", "key", "depends_on"))

TASK_ANNOTATIONS = Table(
    "task_annotations", "Each task's span and annotations, read once per submitted graph "
    "(update_graph).",
    (_T, _CODED_KEY,
     Column("span_id", "String", "Dask span id (the last of annotations['span']['ids'])"),
     Column("annotations", "String", "the task's other annotations (priority, retries, "
            "resources, the user's own), JSON with sorted keys; null: none")),
    sort_by=("local_time_ns", "key"))

SPANS_RAW = Table(
    "spans", "Dask's spans (distributed.span), a snapshot of the scheduler's spans extension "
    "that each flush replaces.",
    (Column("span_id", "String", "span id", nullable=False),
     Column("name", "String", "the span's name path, JSON list of its tags", nullable=False),
     Column("parent_id", "String", "enclosing span (null: a root)")),
    sort_by=("span_id",))

SPAN_METRICS_RAW = Table(
    "span_metrics", "Dask's fine performance metrics per span (Dask's "
    "cumulative_worker_metrics: the span's and its children's), a snapshot that each flush "
    "replaces.",
    (Column("span_id", "String", "span id", nullable=False),
     Column("context", "String", "execute, gather-dep, get-data, …", nullable=False),
     Column("prefix", "String", "task prefix (execute context)"),
     Column("activity", "String", "thread-cpu, thread-noncpu, disk-read, …", nullable=False),
     Column("unit", "String", "seconds, bytes, count", nullable=False),
     Column("value", "Float64", "cumulative value", nullable=False)),
    sort_by=("span_id", "context", "prefix", "activity", "unit"))

CLUSTER_EVENTS = Table(
    "cluster_events", "Workers and clients joining and leaving (scheduler side).",
    (_T,
     Column("event", "Enum:add_worker,remove_worker,add_client,remove_client,worker_paused,"
            "worker_resumed", "what happened (a worker paused: it reached its memory "
            "pause fraction and runs no task until it is resumed)", nullable=False),
     Column("address", "String", "worker address or client id", nullable=False),
     Column("name", "String", "worker name"),
     Column("host", "String", "worker host (from its address)"),
     Column("pid", "Int64", "worker process id"),
     Column("nthreads", "Int64", "worker threads"),
     Column("memory_limit", "Int64", "worker memory limit, bytes")),
    sort_by=("local_time_ns", "event", "address"))

SCHEDULER_ARRIVALS = Table(
    "scheduler_arrivals", "Keys that entered the scheduler's memory without an execution: "
    "Dask's Scheduler.update_data (client.scatter, direct or through the scheduler, and a "
    "task's own scatter), one row per key and worker holding it.",
    (_T, _KEY,
     Column("worker", "String", "worker that holds the data"),
     Column("nbytes", "Int64", "size as Dask knows it (the worker's sizeof; null: not given)"),
     Column("client", "String", "the sending client's id (null: not given)"),
     Column("client_address", "String", "the sending client's address as the scheduler's "
            "stream to it has it (null: no stream open to that client)")),
    sort_by=("local_time_ns", "key", "worker"))

SENDER_NOTES = Table(
    "sender_notes", "What a client said about the data it sends (collectors.api: "
    "declare_sender, scatter), logged through Dask's events (topic dask-correlate-sender).",
    (_T,
     Column("client", "String", "the client's id", nullable=False),
     Column("rank", "Int64", "the sender's rank (null: not said)"),
     Column("key", "String", "a key it scattered (null: a declaration of the client's rank)"),
     Column("step", "String", "the step it named for the key (null: not named)"),
     Column("send_s", "Float64", "how long its scatter call took, the client's own clock")),
    sort_by=("local_time_ns", "client", "key"))

EXECUTIONS_RAW = Table(
    "task_executions", "One row per task execution, timed on the executing thread itself.",
    (Column("execution_seq", "Int64", "per process; also the profile tag", nullable=False),
     _CODED_KEY,
     Column("thread_id", "UInt64", "threading.get_ident() == pthread_self()", nullable=False),
     Column("native_thread_id", "Int64", "threading.get_native_id() (Linux tid)"),
     Column("local_start_ns", "Int64", "time.time_ns() before the task function",
            nullable=False),
     Column("local_stop_ns", "Int64", "time.time_ns() after it", nullable=False),
     Column("thread_cpu_ns", "Int64", "time.thread_time_ns() delta across the call"),
     Column("status", "String", "ok, error")),
    sort_by=("execution_seq",))

WORKER_TRANSITIONS = Table(
    "worker_transitions", "Every task transition seen by a worker, worker clock (Dask gives a "
    "worker plugin no stimulus id: run formats 1 and 2 wrote an always-null stimulus_id).",
    (_T, _CODED_KEY,
     Column("start", "Categorical", "state before", nullable=False),
     Column("finish", "Categorical", "state after", nullable=False)),
    sort_by=("local_time_ns", "key"))

TRANSFERS_RAW = Table(
    "worker_transfers", "Incoming and outgoing transfers from Dask's transfer logs, read through "
    "its monotonic counters (entries lost to the bounded logs are counted in the process's "
    "closing record).",
    (Column("transfer_seq", "Int64", "per process", nullable=False),
     Column("direction", "Enum:incoming,outgoing", "as seen by this worker", nullable=False),
     Column("peer", "String", "other worker (null: a client)"),
     Column("total_bytes", "Int64", "bytes of the keys"),
     Column("compressed_bytes", "Int64", "bytes on the wire (outgoing)"),
     Column("reported_start_ns", "Int64", "worker clock + scheduler_delay"),
     Column("reported_stop_ns", "Int64", "worker clock + scheduler_delay"),
     Column("nkeys", "Int64", "keys in the transfer"),
     Column("scheduler_delay_ns", "Int64", "the scheduler_delay Dask added to this entry's "
            "times, where the entry gives it exactly (outgoing: from Dask's unshifted middle); "
            "null otherwise (and in runs recorded before it)")),
    sort_by=("transfer_seq",))

TRANSFER_KEYS_RAW = Table(
    "worker_transfer_keys", "Keys carried by each transfer.",
    (Column("transfer_seq", "Int64", "→ worker_transfers", nullable=False), _CODED_KEY,
     Column("nbytes", "Int64", "size of the key")),
    sort_by=("transfer_seq", "key"))

CLOCK_SAMPLES_RAW = Table(
    "worker_clock_samples", "Clock and CPU samples of a worker process (every flush).",
    (_T,
     Column("perf_counter_ns", "Int64", "time.perf_counter_ns() at the same instant"),
     Column("scheduler_delay_s", "Float64", "Dask's scheduler clock − worker clock estimate"),
     Column("latency_s", "Float64", "round trip to the scheduler"),
     Column("process_cpu_s", "Float64", "user+system CPU of the whole process so far")),
    sort_by=("local_time_ns",))

HOST_LOAD_RAW = Table(
    "host_load_samples", "The host's load, sampled by every worker process at its start and "
    "every flush (collectors.host_load); null: not known on this system.",
    (_T,
     Column("load1", "Float64", "1-minute load average"),
     Column("runnable_count", "Int64", "processes running or runnable at that instant"),
     Column("cpus", "Int64", "CPUs of the host (os.cpu_count)"),
     Column("host_busy_s", "Float64", "CPU time all CPUs of the host spent busy since boot "
            "(/proc/stat: user, nice, system, irq, softirq, steal)"),
     Column("process_cpu_s", "Float64", "user+system CPU of this process so far")),
    sort_by=("local_time_ns",))

CLOCK_MARKERS_RAW = Table(
    "worker_clock_markers", "Marker writes at known times, for aligning Darshan's clock.",
    (_T,
     Column("path", "String", "marker file", nullable=False),
     Column("offset", "Int64", "file offset written", nullable=False),
     Column("length", "Int64", "bytes written", nullable=False)),
    sort_by=("offset",))

FUNC_STATS_RAW = Table(
    "worker_func_stats", "Function profile per (thread, execution, function); a full snapshot "
    "(each new part replaces the previous one).",
    (Column("profiler", "Enum:yappi,sample", "yappi (deterministic) or the stack sampler",
            nullable=False),
     Column("clock", "Enum:wall,cpu", "clock of ttot/tsub", nullable=False),
     Column("thread_id", "UInt64", "thread"),
     Column("execution_seq", "Int64", "execution (0: outside any task)"),
     Column("module", "String", "module"),
     Column("name", "String", "function name", nullable=False),
     Column("file", "String", "source file"),
     Column("line", "Int64", "first line"),
     Column("ncall", "Int64", "calls (yappi) or samples (sampler)"),
     Column("ttot_s", "Float64", "inclusive time"),
     Column("tsub_s", "Float64", "exclusive time")),
    sort_by=("thread_id", "execution_seq", "file", "line", "name"))

FILE_OPENS_RAW = Table(
    "task_file_opens", "Files opened at the Python level (``open``/``os.open`` audit events) "
    "while an execution's context was current, on any thread: its own, or a library's helper "
    "thread that inherited the context (asyncio.to_thread, zarr's and fsspec's I/O loops).",
    (_T,
     Column("execution_seq", "Int64", "→ task_executions.execution_seq", nullable=False),
     Column("thread_id", "UInt64", "threading.get_ident() of the opening thread", nullable=False),
     Column("path", "String", "absolute path as opened", nullable=False),
     Column("access", "Enum:read,write,read-write", "what the open allows (mode or flags; "
            "null: neither said)")),
    sort_by=("local_time_ns", "execution_seq"))

COROUTINE_SLICES_RAW = Table(
    "coroutine_slices", "Active slices of coroutine task executions: the steps in which the "
    "task's coroutine ran on the event loop (between awaits), clipped to its execution window.",
    (Column("execution_seq", "Int64", "→ task_executions.execution_seq", nullable=False),
     Column("local_start_ns", "Int64", "step start, time.time_ns()", nullable=False),
     Column("local_stop_ns", "Int64", "step end", nullable=False),
     Column("thread_cpu_ns", "Int64", "event-loop thread CPU in the step (prorated when "
            "clipped)")),
    sort_by=("execution_seq", "local_start_ns"))

STRINGS = Table(
    "strings", "Run format 3: a process's repeated text, written once; the columns of "
    "STRING_IDS hold the id.",
    (Column("id", "Int32", "the row's position in the process's strings", nullable=False),
     Column("text", "String", "the text", nullable=False)),
    sort_by=("id",))

TRANSITION_DETAILS = Table(
    "scheduler_transition_details", "Run format 3: what a scheduler transition brought besides "
    "its stimulus (the task-finished message of processing->memory), one row per transition "
    "that brought any; the reader joins it back onto scheduler_transitions on "
    "(local_time_ns, key).",
    (_T, _KEY,
     Column("worker", "String", "worker address"),
     Column("thread_id", "UInt64", "executing thread"),
     Column("nbytes", "Int64", "result size")),
    sort_by=("local_time_ns", "key"))

#: run format 3's scheduler transitions: without the columns that only the task-finished
#: message fills (one transition in five or six), written in TRANSITION_DETAILS instead
SCHEDULER_TRANSITIONS_3 = Table(
    SCHEDULER_TRANSITIONS.name, SCHEDULER_TRANSITIONS.doc,
    tuple(c for c in SCHEDULER_TRANSITIONS.columns
          if c.name not in ("worker", "thread_id", "nbytes")),
    sort_by=SCHEDULER_TRANSITIONS.sort_by)

#: run format 3's worker clock samples: the Darshan clock marker each sample writes right after
#: it (when markers are on) rides on the sample's row, not in a stream of its own (a file less
#: per worker); the reader splits the markers back out (``CARRIED``)
CLOCK_SAMPLES_3 = Table(
    CLOCK_SAMPLES_RAW.name, CLOCK_SAMPLES_RAW.doc,
    (*CLOCK_SAMPLES_RAW.columns,
     Column("marker_time_ns", "Int64", "when the sample's marker was written (null: none)"),
     Column("marker_path", "String", "marker file"),
     Column("marker_offset", "Int64", "file offset written"),
     Column("marker_length", "Int64", "bytes written")),
    sort_by=CLOCK_SAMPLES_RAW.sort_by)

#: run format 3: tables whose rows may carry a row of another table (table -> (the other,
#: its column -> the carrier's)); a row carries one where any of those columns is not null
CARRIED: dict[str, tuple[Table, dict[str, str]]] = {
    "worker_clock_samples": (CLOCK_MARKERS_RAW, {
        "local_time_ns": "marker_time_ns", "path": "marker_path", "offset": "marker_offset",
        "length": "marker_length"})}


def _holding(table: Table, *others: Table) -> Table:
    """Run format 3's ``table`` as stored when the rows of ``others`` are written in its file:
    with their columns it does not have (null on its own rows)."""
    names = set(table.names)
    extra = [Column(c.name, c.dtype, f"({o.name}) {c.doc}") for o in others for c in o.columns
             if c.name not in names]
    return Table(table.name, table.doc, (*table.columns, *extra), sort_by=table.sort_by)


#: run format 3's files holding other tables' rows (``IN_FILE_OF``): a worker's clock samples'
#: stream its host load samples (a sample always has its perf_counter_ns), the scheduler's
#: cluster events' stream the client's sender notes, the spans' snapshot the span metrics
CLOCK_SAMPLES_STORED = _holding(CLOCK_SAMPLES_3, HOST_LOAD_RAW)
CLUSTER_EVENTS_3 = _holding(CLUSTER_EVENTS, SENDER_NOTES)
SPANS_3 = _holding(SPANS_RAW, SPAN_METRICS_RAW)

#: run format 3: tables whose rows are written in another table's file (its stream, or its
#: snapshot), as rows of their own (a file fewer per process): table -> (the other as stored,
#: its column that is null on exactly these rows). The table's columns are all among the
#: other's, of the same types. A coroutine task's active slices go with the executions (an
#: execution always has a key); the few sender notes with the cluster events (an event always
#: has its kind); the span metrics with the spans (a span always has a name)
IN_FILE_OF: dict[str, tuple[Table, str]] = {
    "host_load_samples": (CLOCK_SAMPLES_STORED, "perf_counter_ns"),
    "coroutine_slices": (EXECUTIONS_RAW, "key"),
    "sender_notes": (CLUSTER_EVENTS_3, "event"),
    "span_metrics": (SPANS_3, "name")}

#: run format 3's tables as stored where that differs from ``RUN_TABLES`` by more than string
#: ids (other tables' columns)
STORED_3 = (CLOCK_SAMPLES_STORED, CLUSTER_EVENTS_3, SPANS_3)

#: run format 3: tables whose rows have details in another (the reader joins them back on
#: the columns given)
DETAILS: dict[str, tuple[Table, tuple[str, ...]]] = {
    "scheduler_transitions": (TRANSITION_DETAILS, ("local_time_ns", "key"))}

#: run format 3: pairs of text columns whose values go together, written as one string id
#: (name -> the two columns): its text is the two joined by PAIR_SEP, a missing one written
#: as PAIR_NULL; both missing: a null id
PAIRS: dict[str, dict[str, tuple[str, str]]] = {
    "scheduler_transitions": {"states": ("start", "finish"), "names": ("prefix", "group")},
    "worker_transitions": {"states": ("start", "finish")}}
PAIR_SEP, PAIR_NULL = "\x1f", "\x00"

#: the text columns run format 3 writes as ids into ``STRINGS`` (those whose values repeat)
STRING_IDS: dict[str, tuple[str, ...]] = {
    "scheduler_transitions": ("key", "stimulus_id"),
    "scheduler_transition_details": ("key", "worker"),
    "task_startstops": ("key", "worker", "action", "source"),
    "task_dependencies": ("key", "depends_on", "client"),
    "task_annotations": ("key", "span_id", "annotations"),
    "task_executions": ("key", "status"),
    "worker_transitions": ("key",),
    "worker_transfers": ("direction", "peer"),
    "worker_transfer_keys": ("key",),
    "worker_clock_markers": ("path",),
    "worker_clock_samples": ("marker_path",),
    "worker_func_stats": ("profiler", "clock", "module", "name", "file"),
    "task_file_opens": ("path", "access"),
}

RUN_TABLES = (SCHEDULER_TRANSITIONS, TASK_STARTSTOPS, TASK_DEPENDENCIES, TASK_ANNOTATIONS,
              SPANS_RAW, SPAN_METRICS_RAW, CLUSTER_EVENTS, SCHEDULER_ARRIVALS, SENDER_NOTES,
              EXECUTIONS_RAW, WORKER_TRANSITIONS, TRANSFERS_RAW, TRANSFER_KEYS_RAW,
              CLOCK_SAMPLES_RAW, CLOCK_MARKERS_RAW, FUNC_STATS_RAW, FILE_OPENS_RAW,
              COROUTINE_SLICES_RAW, HOST_LOAD_RAW)
#: tables only run format 3 writes
FORMAT3_TABLES = (TRANSITION_DETAILS,)

#: the columns of any raw table that hold instants (ns since the epoch, a process's clock or
#: the scheduler's): ``correlate`` rejects a row where one lies far outside its process's own
#: span (``correlate.sources.time_span``)
INSTANTS = ("local_time_ns", "local_start_ns", "local_stop_ns", "reported_start_ns",
            "reported_stop_ns", "marker_time_ns")
#: the columns of any raw table that hold durations in seconds: one that is not a finite
#: number, or longer (either sign) than its process's span, is rejected the same way
DURATIONS = ("ttot_s", "tsub_s")
ALL = (*RUN_TABLES, *FORMAT3_TABLES, STRINGS)


def stored_columns(table: Table) -> list[tuple[str, str]]:
    """Run format 3's columns of ``table`` (as written: ``SCHEDULER_TRANSITIONS_3`` for the
    scheduler's transitions) on disk, in order: (name, dtype), dtype ``"id"`` for a string id
    (``STRING_IDS``; ``PAIRS``: a pair where its first column was)."""
    pairs = PAIRS.get(table.name, {})
    first = {a: name for name, (a, _b) in pairs.items()}
    second = {b for _a, b in pairs.values()}
    ids = STRING_IDS.get(table.name, ())
    out = []
    for c in table.columns:
        if c.name in second:
            continue
        if c.name in first:
            out.append((first[c.name], "id"))
        else:
            out.append((c.name, "id" if c.name in ids else c.dtype))
    return out
