"""I/O attribution: every Darshan record of the run given to the task executions that made it,
or left unattributed with its reason.

The door is ``attribute(frames, executions, windows, worker_clocks, sink, mapper) ->
Attribution`` (``pipeline``). ``driver`` runs the per-process pass over the DXT segments (a
partition per process, locally or on a Dask cluster): ``exact`` (exact-thread, window-split),
then ``threads`` (threads inferred for executions recorded without thread ids), ``helpers``
(helper threads: by context or file), ``p2p`` (a P2P shuffle's shard writes to its barrier
task) and ``spill`` (the worker's spill store, by key). ``untraced`` then adds what DXT does
not trace: C stdio (``stdio``) and the POSIX counters of logs without DXT (``counters``). What
several methods use (``IOAttribution``, splitting a call over windows, the reasons I/O belongs
to no task, sharing a counter record's bytes in time) is in ``shares``; ``local_dir`` names the
files of a worker's local directory; ``doubtful`` the records whose file name is doubtful.

The methods are one table, ``correlate.schema.methods`` (label, exactness, destination, rank:
its place; step: its pass's place), from which the ``attribution`` Enum and every list of
methods derive. A new method is a module here whose pass registers itself under the method's
label (``passes``: over each partition's DXT segments, or once over what DXT does not trace),
and a row in that table.
"""

from correlate.attribution.pipeline import Attribution, attribute

__all__ = ["Attribution", "attribute"]
