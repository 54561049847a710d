"""The timeline of one run, the package's door (``correlate.timeline.build``): the transitions
read once (the largest raw table) and let go, and what is taken from them first: each
execution's ending, the workers' clocks, the ``events`` table, each key's waits, the data that
arrived from outside Dask, the results that died with a worker and how the job ended. The
engine reads the result, never the parts."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from correlate import outcome
from correlate.console import Progress
from correlate.outcome import Seen
from correlate.sinks import TableSink, put_in_parts
from correlate.sources.frames import RunFrames
from correlate.timeline import align, arrivals, endings, lost, waits
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


def build(frames: RunFrames, ex: pl.DataFrame, sink: TableSink,
          progress: Progress) -> Timeline:
    """Events and waits first: the transitions (the largest raw table) are let go before the
    attribution builds its tables, which reuse their pages (a lower peak RSS)."""
    progress.begin("transitions")
    transitions = frames.table("transitions", TRANSITION_COLUMNS)
    ex = endings.with_endings(ex, transitions)
    worker_clocks = align.worker_offsets(frames.clock_samples, frames.processes,
                                         message_bounds(transitions))
    progress.begin("events", rows=transitions.height)
    put_in_parts(sink, "events", _events_table(transitions, worker_clocks))
    progress.begin("waits")
    key_waits, arrived = _key_waits(transitions, frames, worker_clocks, ex)
    # the scheduler's times of each key (its clock: the run timeline), the critical path's gates
    return Timeline(
        ex, worker_clocks, key_waits.drop("t_wait", "t_proc"), arrived,
        key_waits.select("key", submitted_ns="t_wait", assigned_ns="t_proc"),
        lost.results_lost(transitions),  # keys whose result died with a worker
        # (how the job ended, for the summary: taken now, not by reading them all again)
        outcome.seen_in(transitions, frames.clock_samples))


def _key_waits(transitions: pl.DataFrame, frames: RunFrames, worker_clocks: pl.DataFrame,
               ex: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per key: its scheduler-side and external waits, its wait on its worker split into the
    part its worker was paused (memory), the part a thread was free (the worker's event loop)
    and the rest (a thread); and the run's arrivals of data from outside Dask (scattered keys,
    external-state tasks) that the external waits come from."""
    paused = waits.paused_waits(transitions, frames.worker_pauses,
                                align.worker_shift(transitions, worker_clocks)
                                if not frames.worker_pauses.is_empty() else pl.Series([]))
    free = waits.free_thread_waits(transitions, ex, frames.processes)
    # a paused worker's threads are free too: that part stays memory's
    key_waits = (waits.scheduler_waits(transitions).join(paused, on="key", how="left")
                 .join(free, on="key", how="left").with_columns(
                     wait_free_thread_s=(pl.col("wait_free_thread_s")
                                         - pl.col("wait_paused_s").fill_null(0.0)).clip(0.0)))
    key_waits = key_waits.with_columns(
        wait_thread_s=pl.col("wait_thread_s") - pl.col("wait_paused_s").fill_null(0.0)
        - pl.col("wait_free_thread_s").fill_null(0.0))
    # (the scheduler's sizes are read from the full transitions, only when there are such keys)
    external = arrivals.external_state_arrivals(
        frames.transitions, waits.external_arrivals(transitions).drop_nulls("t_arrival"))
    arrived = arrivals.arrivals_table(frames.data_arrivals, frames.senders, external)
    ext = arrivals.external_waits(arrivals.arrival_times(arrived), frames.dependencies,
                                  key_waits)
    return key_waits.join(ext, on="key", how="left"), arrived


def _events_table(transitions: pl.DataFrame, worker_clocks: pl.DataFrame) -> pl.DataFrame:
    """Transitions on the run timeline: the scheduler's clock is the timeline; worker-side
    times get their process's offset."""
    shift = align.worker_shift(transitions, worker_clocks)
    return transitions.with_columns(
        time_ns=pl.when(pl.col("side") == "scheduler").then(pl.col("local_time_ns"))
        .otherwise(pl.col("local_time_ns") + shift))
