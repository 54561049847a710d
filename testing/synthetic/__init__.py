"""Synthetic but schema-exact run folders of any size, with known expected totals.

``write_run(folder, workers=W, threads=T, executions=E, segments=S)`` writes what ``collect``
would have written for a Dask job of E task executions on W worker processes × T threads: the
manifest, ``darshan.conf``, one ``procs/<role>-<host>-<pid>/`` folder per process (proc.json
with its closing record, and a ``<table>.arrows`` stream per table with a record batch per
collector flush, text as ids into ``strings.arrows``, run format 3; ``run_format=2`` writes
format 2's ``<table>/part-NNNNNN.arrow`` parts and closed.json instead), clock-marker files
and genuine ``.darshan`` logs (written through libdarshan-util by ``testing.darshan_writer``,
one per process, DXT v2 with pthread ids) holding S DXT segments in all. It returns an ``Expected`` with what
``correlate`` must find: per-execution bytes/ops (exact; a row per execution up to
``PER_EXECUTION_MAX`` = 2M executions, totals and per-prefix sums at any size), unattributed
I/O by reason, CPU per worker, profile rows and clock offsets.

Memory: the job (a few numpy arrays of E values) is laid out whole; the tables are not. A
process whose tables cover more than ``STREAM_EXECUTIONS`` = 200k executions is written flush by
flush, a chunk of rows at a time, its strings appended per flush with the collectors' bound (the
tables read back the same as from the all-at-once write, which smaller runs keep byte for byte);
the scheduler's transitions are laid out one flush at a time.

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

Modules: ``job`` (the job: processes, executions, times, segment budget), ``darshan`` (the DXT
segments and logs), ``worker_tables`` and ``scheduler_tables`` (each process folder's tables),
``parts`` (parquet parts the way the collector cuts them), ``run`` (the whole folder and
``Expected``), ``cli``.
"""

from __future__ import annotations

from collectors.worker_plugin import MARKER_BYTES
from testing.synthetic.cli import main
from testing.synthetic.job import DEFAULT_PREFIXES
from testing.synthetic.run import Expected, without_thread_ids, write_run

__all__ = ["DEFAULT_PREFIXES", "MARKER_BYTES", "Expected", "main", "without_thread_ids",
           "write_run"]
