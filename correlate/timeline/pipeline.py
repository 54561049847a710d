"""The timeline of one run, the package's door (``correlate.timeline.build``): the transitions
read once (the largest raw table) and let go, and what is taken from them first: each
execution's ending, the workers' clocks, the ``events`` table, each key's waits, the data that
arrived from outside Dask, the results that died with a worker and how the job ended. The
engine reads the result, never the parts."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import polars as pl

from correlate import outcome
from correlate.console import Progress
from correlate.outcome import Seen
from correlate.sinks import Merged, TableSink, cuts, put_in_parts
from correlate.sources.frames import RunFrames
from correlate.timeline import align, arrivals, endings, lost, waits
from correlate.timeline.message_bounds import combined as message_bounds_of
from correlate.timeline.message_bounds import message_bounds


def transition_columns() -> list[str | pl.Expr]:
    """What events and waits read of the transitions (read once, let go after both); the
    columns with a handful of distinct values, and the key (one transition per state a task
    passes through), are held as Categorical (4 bytes a row instead of a 16-byte string view
    and the key's text, and no string copied when the table is made contiguous or put in
    order) and written back as strings. Made when read: an expression that casts to
    Categorical holds polars' categories, and one held by the module kept every text ever
    cast (a big run's keys) until the process ended, the reports included."""
    return ["local_time_ns", "side", "pid", "stimulus_id",
            *(pl.col(c).cast(pl.Categorical) for c in ("key", "host", "worker", "start",
                                                        "finish"))]


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


def build(frames: RunFrames, ex: pl.DataFrame, sink: TableSink, progress: Progress,
          parts: int | None = None) -> Timeline:
    """Events and waits first: the transitions (the largest raw table) are let go before the
    attribution builds its tables, which reuse their pages (a lower peak RSS). They are read
    once, in ``parts`` parts by key (default: the parts the source spilled them in, else by
    ``KEYED_ROWS_PER_PART``), every key's rows in one part: what is taken per key is the
    same, and the workers' clocks are combined from every part's bounds. ``events`` needs
    those clocks: one part is kept until they are known; more are spilled by range of their
    times on the clocks the first part gives, and merged into the events' order once every
    part's clocks are known (``_Events``)."""
    progress.begin("transitions")
    if parts is None:
        parts = frames.keyed_parts()
    taken, kept, merged = _Taken(), None, None
    for part in frames.transition_parts(parts):
        transitions = _read(frames, part)
        taken.add(transitions, ex, frames)
        if parts == 1 or not (merged or transitions.height):  # (one part, or none with rows yet)
            kept = transitions
        elif merged is None:  # (cut at the first part with rows)
            merged = _Events(frames, taken.bounds[-1], parts, transitions)
        else:
            merged.add(transitions)
        del transitions
    ex = endings.with_endings(ex, pl.concat(taken.ended))
    worker_clocks = align.worker_offsets(frames.clock_samples, frames.processes,
                                         message_bounds_of(taken.bounds))
    progress.begin("events and waits")
    if merged is not None:
        merged.put(sink, worker_clocks)
    elif kept is not None:
        put_in_parts(sink, "events", _events_table(kept, worker_clocks))
    del kept, merged
    waited = _with_free_thread_waits(taken.key_waits(frames, worker_clocks),
                                     pl.concat(taken.waiting), ex, frames)
    waited, arrived = _with_external_waits(waited, pl.concat(taken.external), frames)
    # the scheduler's times of each key (its clock: the run timeline), the critical path's gates
    return Timeline(
        ex, worker_clocks, waited.drop("t_wait", "t_proc"), arrived,
        waited.select("key", submitted_ns="t_wait", assigned_ns="t_proc"),
        pl.concat(taken.released).unique(), outcome.seen_of(taken.seen, frames.clock_samples))


class _Events:
    """``events`` of a run read in parts: each part cut into ranges of its time on the
    workers' clocks as the first part's message bounds give them (the clocks all parts give
    move them by a little: ``Merged``'s carry), merged once the clocks are known."""

    def __init__(self, frames: RunFrames, bounds: pl.DataFrame, parts: int,
                 first: pl.DataFrame) -> None:
        """``first``: the first part with rows, whose bounds are ``bounds``, added."""
        self.clocks = align.worker_offsets(frames.clock_samples, frames.processes,
                                           message_bounds_of([bounds]))
        # (cut at the first part's times: a sample of every key's)
        times = self._times(first)
        self.merged = Merged("events", cuts(times.gather_every(max(1, times.len() // 10_000)),
                                            times.len() * parts))
        self.merged.add(first, times)

    def add(self, transitions: pl.DataFrame) -> None:
        self.merged.add(transitions, self._times(transitions))

    def _times(self, transitions: pl.DataFrame) -> pl.Series:
        return _events_table(transitions, self.clocks).get_column("time_ns")

    def put(self, sink: TableSink, worker_clocks: pl.DataFrame) -> None:
        self.merged.put(sink, lambda df: _events_table(df, worker_clocks),
                        align.shift_changes(self.clocks, worker_clocks))


@dataclass
class _Taken:
    """What is taken from each part of the transitions (every key's rows in one part)."""

    ended: list[pl.DataFrame] = field(default_factory=list)
    bounds: list[pl.DataFrame] = field(default_factory=list)
    released: list[pl.Series] = field(default_factory=list)
    seen: list[outcome.SeenPart] = field(default_factory=list)
    scheduler: list[pl.DataFrame] = field(default_factory=list)
    paused: list[pl.DataFrame] = field(default_factory=list)
    waiting: list[pl.DataFrame] = field(default_factory=list)
    external: list[pl.DataFrame] = field(default_factory=list)

    def add(self, transitions: pl.DataFrame, ex: pl.DataFrame, frames: RunFrames) -> None:
        self.ended.append(endings.handed_back(ex, transitions))
        self.bounds.append(message_bounds(transitions))
        self.released.append(lost.results_lost(transitions))  # results died with a worker
        # (how the job ended, for the summary: taken now, not by reading them all again)
        self.seen.append(outcome.seen_part(transitions))
        self.scheduler.append(waits.scheduler_waits(transitions))
        # (the rows of a pause's waits, measured once the workers' clocks are known)
        self.paused.append(waits.pause_rows(transitions, frames.worker_pauses))
        self.waiting.append(waits.thread_waits(transitions))
        self.external.append(waits.external_arrivals(transitions).drop_nulls("t_arrival"))

    def key_waits(self, frames: RunFrames, worker_clocks: pl.DataFrame) -> pl.DataFrame:
        """Per key: its scheduler-side waits, and the part of its wait on its worker that the
        worker was paused (memory)."""
        rows = pl.concat(self.paused)
        paused = waits.paused_waits(rows, frames.worker_pauses,
                                    align.worker_shift(rows, worker_clocks)
                                    if not rows.is_empty() else pl.Series([]))
        return pl.concat(self.scheduler).join(paused, on="key", how="left")


def _read(frames: RunFrames, part: pl.LazyFrame) -> pl.DataFrame:
    """A part of the transitions, the columns the timeline uses."""
    return replace(frames, transitions=part).table("transitions", transition_columns())


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
