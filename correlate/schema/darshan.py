"""Tables decoded from Darshan logs (``correlate.sources.darshan_logs``).

Times are absolute ns since the epoch on the clock of the host that wrote the log:
``job start (start_time_sec, start_time_nsec) + relative segment time``. Darshan's own clock
base can be off the process's ``time.time()`` by milliseconds; ``correlate.timeline.align`` corrects it
with the collectors' marker writes.
"""

from __future__ import annotations

from correlate.schema.table import Column, Table

DXT_LAYOUTS = "v1-32,v2-40,modified-96"

DARSHAN_LOGS = Table(
    "darshan_logs",
    "One row per Darshan log read (or attempted).",
    (
        Column("log", "Categorical", "log file path", nullable=False),
        Column("exe", "String", "command line recorded by Darshan"),
        Column("host", "String", "host name from the DXT records (null: log has no DXT)"),
        Column("pid", "Int64", "process id (from the file name; jobid in non-MPI logs)"),
        Column("jobid", "Int64", "Darshan job id"),
        Column("uid", "Int64", "user id"),
        Column("nprocs", "Int64", "processes in the job (1 for non-MPI logs)"),
        Column("start_ns", "Int64", "job start, host clock, ns since epoch"),
        Column("end_ns", "Int64", "job end, host clock, ns since epoch"),
        Column("darshan_version", "String", "library version from the job metadata (lib_ver)"),
        Column("log_format_version", "String", "log format version string, e.g. 3.41"),
        Column("modules", "List:String", "modules with data in the log"),
        Column("modules_failed", "List:String", "modules that could not be read, with why"),
        Column("modules_partial", "List:String", "modules Darshan flagged partial: it ran out of "
               "memory for them, so some records (or DXT segments) were never written"),
        Column("partial", "Boolean", "Darshan ran out of memory for some module, or the file "
               "is a .darshan_partial", nullable=False),
        Column("dxt_layout", f"Enum:{DXT_LAYOUTS}", "DXT segment layout (null: no DXT)"),
        Column("segment_count", "Int64", "DXT segments decoded"),
        Column("dxt_untraced_ops", "Int64", "POSIX reads/writes the DXT trace lacks (Darshan's "
               "DXT memory was full: see `collect --dxt-segments`; 2 MiB in a Darshan "
               "left at its defaults); 0 = complete"),
    ),
    sort_by=("log",),
)

IO_SEGMENTS = Table(
    "io_segments",
    "One row per DXT segment (one read or write call).",
    (
        Column("host", "String", "host name recorded in the DXT record"),
        Column("pid", "Int64", "process id of the log"),
        Column("rank", "Int64", "MPI rank (0 for non-MPI)"),
        Column("record_id", "UInt64", "Darshan record id of the file"),
        Column("path", "String", "file path (null: name record missing)"),
        Column("module", "Enum:DXT_POSIX,DXT_MPIIO", "DXT module", nullable=False),
        Column("op", "Enum:read,write", "operation", nullable=False),
        Column("offset", "Int64", "file offset"),
        Column("length", "Int64", "bytes requested (0-length reads at EOF are common)"),
        Column("local_start_ns", "Int64", "absolute start, log host clock", nullable=False),
        Column("local_stop_ns", "Int64", "absolute end, log host clock", nullable=False),
        Column("thread_id", "UInt64", "pthread_self() of the caller (null: layout v1)"),
        Column("segment_index", "Int64", "index within the record and op"),
        Column("log", "Categorical", "log file path (one per log: stored once)"),
    ),
    sort_by=("host", "pid", "local_start_ns", "record_id", "op", "segment_index"),
)

IO_FILE_COUNTERS = Table(
    "io_file_counters",
    "Per-file counters of the POSIX and STDIO modules (what Darshan keeps without DXT).",
    (
        Column("host", "String", "host (from DXT records of the same log, else null)"),
        Column("pid", "Int64", "process id of the log"),
        Column("rank", "Int64", "MPI rank (-1: shared record)"),
        Column("record_id", "UInt64", "Darshan record id"),
        Column("path", "String", "file path"),
        Column("module", "Enum:POSIX,STDIO", "module", nullable=False),
        Column("opens", "Int64", "open calls"),
        Column("read_ops", "Int64", "read calls"),
        Column("write_ops", "Int64", "write calls"),
        Column("read_bytes", "Int64", "bytes read"),
        Column("write_bytes", "Int64", "bytes written"),
        Column("read_time_s", "Float64", "cumulative time in reads"),
        Column("write_time_s", "Float64", "cumulative time in writes"),
        Column("meta_time_s", "Float64", "cumulative time in metadata calls"),
        Column("first_read_ns", "Int64", "start of the first read, host clock, ns since epoch "
               "(null: no read, or not recorded)"),
        Column("last_read_ns", "Int64", "end of the last read (as first_read_ns)"),
        Column("first_write_ns", "Int64", "start of the first write (as first_read_ns)"),
        Column("last_write_ns", "Int64", "end of the last write (as first_read_ns)"),
        Column("log", "Categorical", "log file path"),
    ),
    sort_by=("log", "module", "record_id", "rank"),
)

ALL = (DARSHAN_LOGS, IO_SEGMENTS, IO_FILE_COUNTERS)
