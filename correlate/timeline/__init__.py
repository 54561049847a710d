"""What happened when: the run's executions on one clock, how each ended and where the time
around them went.

The door is ``build(frames, executions, sink, progress) -> Timeline`` (``pipeline``): the
transitions read once, the ``events`` table written, and what the later stages need of them.
``align`` (clock offsets and their uncertainty, aligned timestamps; ``message_bounds`` bounds
them from the task messages), ``task_threads`` (which recorded executions are Dask's), ``lost``
(executions of workers that died), ``endings`` (how each execution ended), ``waits`` (where the
rest of a task's time went), ``arrivals`` (data that entered Dask from outside), ``coroutines``
(``async def`` executions' slices on the event loop), ``spans`` (figures per Dask span and per
annotation) and ``lifecycles`` (one object per task with its whole life).

A new question about the executions' times, order or endings is a module here: pure
functions over the canonical frames, called from ``pipeline`` when it reads the transitions
(a field of ``Timeline``), else from ``correlate.engine``.
"""

from correlate.timeline.pipeline import Timeline, build

__all__ = ["Timeline", "build"]
