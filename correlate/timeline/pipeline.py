"""The timeline of one run, the package's door (``correlate.timeline.build``): the transitions
read once (the largest raw table) and let go, and what is taken from them first: each
execution's ending, the workers' clocks, the ``events`` table, each key's waits, the data that
arrived from outside Dask, the results that died with a worker and how the job ended. The
engine reads the result, never the parts."""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from correlate import outcome
from correlate.console import Progress
from correlate.frames import spill
from correlate.outcome import Seen
from correlate.sinks import Merged, TableSink, cuts, put_in_parts
from correlate.sources.frames import RunFrames
from correlate.timeline import align, arrivals, endings, lost, waits
from correlate.timeline.message_bounds import combined as message_bounds_of
from correlate.timeline.message_bounds import message_bounds

#: what events and waits read of the transitions (read once, let go after both); the columns
#: with a handful of distinct values, and the key (one transition per state a task passes
#: through), are held as Categorical (4 bytes a row instead of a 16-byte string view and the key's text, and no string
#: copied when the table is made contiguous or put in order) and written back as strings
TRANSITION_COLUMNS: list[str | pl.Expr] = [
    "local_time_ns", "side", "pid", "stimulus_id",
    *(pl.col(c).cast(pl.Categorical) for c in ("key", "host", "worker", "start", "finish"))]


@dataclass(frozen=True)
class Timeline:
    """What the transitions say, taken before they are let go: the executions with their
    endings, the workers' clocks, each key's waits and the scheduler's times (the critical
    path's gates), the data that arrived from outside Dask, the keys whose result died with
    a worker and how the job ended."""

    executions: pl.DataFrame
    worker_clocks: pl.DataFrame
    key_waits: pl.DataFrame
    arrived: pl.DataFrame
    assigned: pl.DataFrame
    released: pl.Series
    seen: Seen


#: every how many transitions one's time is kept, to cut ``events`` into ranges
TIME_SAMPLE = 1_000


def build(frames: RunFrames, ex: pl.DataFrame, sink: TableSink, progress: Progress,
          parts: int | None = None) -> Timeline:
    """Events and waits first: the transitions (the largest raw table) are let go before the
    attribution builds its tables, which reuse their pages (a lower peak RSS). They are read
    in ``parts`` parts by key (default: the parts the source spilled them in, else by
    ``KEYED_ROWS_PER_PART``), every key's rows in one part, twice (before and after the
    workers' clocks are known; the second time from this stage's own spill): what is taken
    per key is the same, the workers' clocks are combined from every part's bounds, and
    ``events`` is merged back into its order."""
    progress.begin("transitions")
    if parts is None:
        parts = frames.keyed_parts()
    ended, bounds, released, seen, times, rows = [], [], [], [], [], 0
    # each part as the second pass reads it: one part is read once and kept; more are spilled
    # as read, their Categorical columns as codes (read back without looking each text up)
    again: list[pl.DataFrame | spill.Coded] = []
    for part in frames.transition_parts(parts):
        transitions = _read(frames, part)
        again.append(transitions if parts == 1 else spill.spilled_coded(transitions))
        if parts > 1:  # (to cut events into ranges)
            rows += transitions.height
            times.append(transitions.get_column("local_time_ns").gather_every(TIME_SAMPLE))
        ended.append(endings.handed_back(ex, transitions))
        bounds.append(message_bounds(transitions))
        released.append(lost.results_lost(transitions))  # keys whose result died with a worker
        # (how the job ended, for the summary: taken now, not by reading them all again)
        seen.append(outcome.seen_part(transitions))
        del transitions
    ex = endings.with_endings(ex, pl.concat(ended))
    worker_clocks = align.worker_offsets(frames.clock_samples, frames.processes,
                                         message_bounds_of(bounds))
    progress.begin("events and waits")
    # (events: cut at the transitions' times, which are the events' but for the workers'
    # clock offsets: ranges about PART_ROWS each)
    events = Merged("events", cuts(pl.concat(times), rows)) if parts > 1 else None
    key_waits, waiting, external = [], [], []
    while again:
        kept = again.pop(0)
        transitions = kept.take() if isinstance(kept, spill.Coded) else kept
        del kept
        if events is None:
            put_in_parts(sink, "events", _events_table(transitions, worker_clocks))
        else:
            events.add(_events_table(transitions, worker_clocks))
        key_waits.append(_key_waits(transitions, frames, worker_clocks))
        waiting.append(waits.thread_waits(transitions))
        external.append(waits.external_arrivals(transitions).drop_nulls("t_arrival"))
        del transitions
    if events is not None:
        events.put(sink)
    waited = _with_free_thread_waits(pl.concat(key_waits), pl.concat(waiting), ex, frames)
    waited, arrived = _with_external_waits(waited, pl.concat(external), frames)
    # the scheduler's times of each key (its clock: the run timeline), the critical path's gates
    return Timeline(
        ex, worker_clocks, waited.drop("t_wait", "t_proc"), arrived,
        waited.select("key", submitted_ns="t_wait", assigned_ns="t_proc"),
        pl.concat(released).unique(), outcome.seen_of(seen, frames.clock_samples))


def _read(frames: RunFrames, part: pl.LazyFrame) -> pl.DataFrame:
    """A part of the transitions, the columns the timeline uses."""
    return replace(frames, transitions=part).table("transitions", TRANSITION_COLUMNS)


def _key_waits(transitions: pl.DataFrame, frames: RunFrames, worker_clocks: pl.DataFrame
               ) -> pl.DataFrame:
    """Per key of ``transitions``: its scheduler-side waits, and the part of its wait on its
    worker that the worker was paused (memory)."""
    paused = waits.paused_waits(transitions, frames.worker_pauses,
                                align.worker_shift(transitions, worker_clocks)
                                if not frames.worker_pauses.is_empty() else pl.Series([]))
    return waits.scheduler_waits(transitions).join(paused, on="key", how="left")


def _with_free_thread_waits(key_waits: pl.DataFrame, waiting: pl.DataFrame,
                            ex: pl.DataFrame, frames: RunFrames) -> pl.DataFrame:
    """``key_waits`` with each key's wait on its worker split into the part its worker was
    paused (memory), the part a thread was free (the worker's event loop: ``waiting``, the
    keys' ``waits.thread_waits``, against the executions ``ex``) and the rest (a thread)."""
    free = waits.free_thread_waits(waiting, waits.thread_use(ex, frames.processes))
    # a paused worker's threads are free too: that part stays memory's
    key_waits = key_waits.join(free, on="key", how="left").with_columns(
        wait_free_thread_s=(pl.col("wait_free_thread_s")
                            - pl.col("wait_paused_s").fill_null(0.0)).clip(0.0))
    return key_waits.with_columns(
        wait_thread_s=pl.col("wait_thread_s") - pl.col("wait_paused_s").fill_null(0.0)
        - pl.col("wait_free_thread_s").fill_null(0.0))


def _with_external_waits(key_waits: pl.DataFrame, external: pl.DataFrame, frames: RunFrames
                         ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``key_waits`` with the external waits, and the run's arrivals of data from outside Dask
    (scattered keys, external-state tasks: ``external``) they come from."""
    # (the scheduler's sizes are read from the full transitions, only when there are such keys)
    arrived = arrivals.arrivals_table(frames.data_arrivals, frames.senders,
                                      arrivals.external_state_arrivals(frames.transitions,
                                                                       external))
    ext = arrivals.external_waits(arrivals.arrival_times(arrived), frames.dependencies,
                                  key_waits)
    # (the few keys with external inputs, as text: coded like the engine's keys to join them)
    return key_waits.join(ext.with_columns(pl.col("key").cast(pl.Categorical)), on="key",
                          how="left"), arrived


def _events_table(transitions: pl.DataFrame, worker_clocks: pl.DataFrame) -> pl.DataFrame:
    """Transitions on the run timeline: the scheduler's clock is the timeline; worker-side
    times get their process's offset."""
    shift = align.worker_shift(transitions, worker_clocks)
    return transitions.with_columns(
        time_ns=pl.when(pl.col("side") == "scheduler").then(pl.col("local_time_ns"))
        .otherwise(pl.col("local_time_ns") + shift))
