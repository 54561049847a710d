"""``trace.json``: the run in Perfetto's UI (Chrome trace-event JSON).

``perfetto`` writes the trace (``write_trace``): a process per Dask process, a track per
thread, the executions, their I/O, counters and the scheduler's instants; ``encode`` holds the
event encoders every track uses; ``arrivals_track`` (data that entered Dask from outside) and
``critical_path_track`` (the chain of executions that set the task window) add a process each.

A new track is a module here that builds its events with ``encode``'s functions and is called
from ``perfetto.build_events``.
"""
