"""I/O attribution: every Darshan record of the run given to the task executions that made it,
or left unattributed with its reason.

``driver`` runs the per-process pass over the DXT segments (a partition per process, locally or
on a Dask cluster): ``exact`` (exact-thread, window-split), then ``threads`` (threads inferred
for executions recorded without thread ids), ``helpers`` (helper threads: by context or file),
``p2p`` (a P2P shuffle's shard writes to its barrier task) and ``spill`` (the worker's spill
store, by key). ``untraced`` then adds what DXT does not trace: C stdio (``stdio``) and the
POSIX counters of logs without DXT (``counters``). What several methods use (the method labels'
type, ``IOAttribution``, splitting a call over windows, the reasons I/O belongs to no task,
sharing a counter record's bytes in time) is in ``shares``; ``local_dir`` names the files of a
worker's local directory.

A new method is a module here whose function takes and returns an ``IOAttribution`` (or, for
counter-based evidence, task_files and unattributed rows), called from ``driver`` or
``untraced``; its label is added to the ``attribution`` Enum of ``correlate.schema.outputs``.
"""
