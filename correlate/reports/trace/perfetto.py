"""``trace.json``: the run as a Chrome trace-event file (loads in ui.perfetto.dev and
chrome://tracing).

Layout: one process per (host, pid) that ran tasks or did I/O, plus the scheduler; one thread
track per executing thread. Each task execution is an ``X`` slice named by its key; its I/O
operations are ``X`` slices nested inside it (merged per execution × file × operation when the
run has more than ``segment_limit`` segments, which ``otherData.notes`` then says). I/O of a
process outside every task goes on an "I/O outside tasks" track next to the thread that
issued it (or on the thread's own track when that thread ran no task). ``C`` counters carry
cumulative bytes read/written and task CPU seconds per process; scheduler transitions are
``i`` instant events (thread scope) on the scheduler's "transitions" track. Data that entered
Dask from outside has a process of its own (``correlate.reports.trace.arrivals_track``), and so has
the critical path (``correlate.reports.trace.critical_path_track``).

A large run's trace shows a window of it: by default the first ``TASK_LIMIT`` task
executions (by start) and, beside them, the critical path's later executions (its
``PATH_LIMIT`` longest) and the ``LONGEST_LIMIT`` longest others, whole; or the window asked
for (``--trace-window START:END``, seconds after the first task start); its first track ("what
this trace shows") says what was left out and the option that shows the rest. Perfetto's UI
runs in a browser tab whose memory (about 2 GB) must hold the loaded trace, several times its file size, so an unbounded trace of a
million-execution run would not open (sizes: docs/performance.md, "Reports").

Timestamps are µs since ``otherData.t0_ns`` (ns since the epoch on the run timeline). Slices on
one track never partly overlap (a slice starting before its predecessor ends is clipped), so
viewers nest them correctly. Events are built as polars columns (``struct.json_encode``), sorted
by (metadata first, pid, tid, ts, longer first) and written deterministically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from correlate.frames.scalars import integer
from correlate.reports.aggregate import DIED, PAUSED, worker_label, worker_states
from correlate.reports.load import Outputs
from correlate.reports.trace.encode import encode, metadata, no_overlap, us
from correlate.reports.writer import ReportOptions
from correlate.timeline import coroutines

#: task executions (drawn slices) in a trace when no window is asked for
TASK_LIMIT = 100_000
#: the longest executions drawn whole beside that window (with the critical path's)
LONGEST_LIMIT = 1_000
#: the critical path's executions drawn beside it at most (its longest)
PATH_LIMIT = 50_000
SEGMENT_LIMIT = 200_000
EVENT_LIMIT = 100_000
COUNTER_BINS = 500
#: tid offset of the "I/O outside tasks" track of a thread
OUTSIDE_TID = 100_000
#: tid of the "I/O without thread id" track of a process
NO_THREAD_TID = 99_999
#: tid of a worker's "memory and life" track: its memory pauses and its death
STATE_TID = 99_998
TRANSITIONS_TID = 1
#: pid of the "what this trace shows" process (its sort index puts it first)
NOTES_PID = 999_999
#: events written to trace.json per slice
WRITE_ROWS = 100_000


#: what the trace uses of the segments and of the scheduler's events (read once, only these)
SEGMENT_COLUMNS = ["host", "pid", "thread_id", "execution_id", "start_ns", "stop_ns", "length",
                   "path", "op", "attribution"]
#: what the trace draws of the tasks (read for the window's executions only)
TASK_COLUMNS = ["execution_id", "key", "prefix", "worker", "host", "pid", "thread_id",
                "start_ns", "stop_ns", "cpu_s", "read_bytes", "write_bytes", "io_time_s",
                "attribution", "status", "awaiting_s", "span"]
EVENT_COLUMNS = ["time_ns", "key", "worker", "host", "pid", "start", "finish", "stimulus_id"]


def _t0(tasks: pl.DataFrame, seg: pl.DataFrame, sched: pl.DataFrame) -> int:
    starts = [tasks["start_ns"].min(), seg["start_ns"].min(), sched["time_ns"].min()]
    known = [s for s in map(integer, starts) if s is not None]
    return min(known) if known else 0


def processes(out: Outputs, seg: pl.DataFrame, sched: pl.DataFrame) -> pl.DataFrame:
    """(host, pid) → trace pid 1.., with a name and role."""
    # each source's distinct rows first (concatenating all segments and events costs memory)
    t = out.collect("tasks", out.scan("tasks").select(
        "host", "pid", worker=worker_label(), role=pl.lit("worker")).unique())
    # (every worker is listed, also those without an execution in a bounded trace's window)
    s = seg.select("host", "pid").unique().with_columns(worker=pl.lit(None, pl.String),
                                                        role=pl.lit(None, pl.String))
    u = out["unattributed"].select("host", "pid", worker=pl.lit(None, pl.String),
                                   role="role").unique()
    e = sched.select("host", "pid").unique().with_columns(worker=pl.lit(None, pl.String),
                                                          role=pl.lit("scheduler"))
    allp = pl.concat([t, s, u, e]).group_by("host", "pid").agg(
        pl.col("worker").drop_nulls().min(), pl.col("role").drop_nulls().min())
    allp = allp.sort("host", "pid", nulls_last=True).with_row_index("tpid", offset=1)
    where = pl.format("{} pid {}", pl.col("host").fill_null("?"),
                      pl.col("pid").cast(pl.String).fill_null("?"))
    name = (pl.when(pl.col("worker").is_not_null())
            .then(pl.format("worker {} ({})", pl.col("worker"), where))
            .otherwise(pl.format("{} ({})", pl.col("role").fill_null("process"), where)))
    return allp.with_columns(pl.col("tpid").cast(pl.Int64), name=name)


def threads(tasks: pl.DataFrame, seg: pl.DataFrame, procs: pl.DataFrame) -> pl.DataFrame:
    """(host, pid, thread_id) of executing and I/O threads → tid 1.. within its process."""
    keys = ["host", "pid", "thread_id"]
    both = pl.concat([tasks.select(keys).unique(), seg.select(keys).unique()]).drop_nulls(
        "thread_id").unique().sort(keys)
    both = both.join(procs.select("host", "pid", "tpid"), on=["host", "pid"],
                     nulls_equal=True)
    ran = tasks.select(keys).drop_nulls("thread_id").unique().with_columns(
        has_tasks=pl.lit(True))
    both = both.join(ran, on=keys, how="left").with_columns(pl.col("has_tasks").fill_null(False))
    return both.with_columns(
        tid=(pl.int_range(pl.len()).over("tpid") + 2).cast(pl.Int64))


def _meta(procs: pl.DataFrame, thr: pl.DataFrame, extra: pl.DataFrame) -> pl.DataFrame:
    """process_name / thread_name / sort index metadata events."""
    p = procs.select(pid_t="tpid", name="name", sort_index="tpid")
    t = pl.concat([thr.select(pid_t="tpid", tid_t="tid",
                              name=pl.format("thread {}", pl.col("thread_id").cast(pl.String))),
                   extra])
    return metadata(p, t)


def _task_rows(drawn: pl.DataFrame, thr: pl.DataFrame, procs: pl.DataFrame) -> pl.DataFrame:
    t = drawn.join(procs.select("host", "pid", "tpid"), on=["host", "pid"], how="left",
               nulls_equal=True)
    t = t.join(thr.select("host", "pid", "thread_id", "tid"), on=["host", "pid", "thread_id"],
               how="left", nulls_equal=True).with_columns(tid=pl.col("tid").fill_null(1))
    t = t.with_columns(s=pl.col("start_ns"), e=pl.max_horizontal("stop_ns", "start_ns"))
    return no_overlap(t, ["tpid", "tid"])


def _tasks(rows: pl.DataFrame, t0: int) -> pl.DataFrame:
    df = rows.with_columns(pid_t="tpid", tid_t="tid", ts_t=us("s", t0),
                           dur_t=(us("e", t0) - us("s", t0)).round(3))
    args = pl.struct(
        key="key", prefix="prefix", execution_id="execution_id", worker=worker_label(),
        thread_id=pl.col("thread_id").cast(pl.String), cpu_s="cpu_s",
        read_bytes="read_bytes", write_bytes="write_bytes", io_time_s="io_time_s",
        attribution=pl.col("attribution").cast(pl.String), status="status",
        awaiting_s="awaiting_s", span="span")
    return encode(df, 1, name="key", cat=pl.col("prefix").fill_null("task"), ph=pl.lit("X"),
                   ts="ts_t", dur="dur_t", pid="pid_t", tid="tid_t", args=args)


def _segment_rows(seg: pl.DataFrame, tasks: pl.DataFrame, procs: pl.DataFrame,
                  thr: pl.DataFrame) -> pl.DataFrame:
    """Segments with their track: nested in their execution when it ran on the same thread,
    else on the process's outside-task track of that thread (or the no-thread-id track)."""
    seg = seg.join(procs.select("host", "pid", "tpid"), on=["host", "pid"], how="left",
                   nulls_equal=True)
    seg = seg.join(thr.select("host", "pid", "thread_id", "tid", "has_tasks"),
                   on=["host", "pid", "thread_id"], how="left")
    owner = tasks.select("execution_id", ptpid="tpid", ptid="tid", ps="s", pe="e")
    seg = seg.with_row_index("_row").join(owner, on="execution_id", how="left")
    if owner.get_column("execution_id").is_duplicated().any():
        # a coroutine execution is drawn as its slices: nest a segment in the one holding it
        mid = (pl.col("start_ns") + pl.col("stop_ns")) // 2
        holds = ((pl.col("ps") <= mid) & (mid <= pl.col("pe"))).fill_null(False)
        seg = (seg.with_columns(_holds=holds).sort("_row", "_holds", descending=[False, True])
               .unique("_row", keep="first", maintain_order=True).drop("_holds"))
    seg = seg.drop("_row")
    nested = (pl.col("ptid") == pl.col("tid")) & (pl.col("ptpid") == pl.col("tpid"))
    seg = seg.with_columns(nested=nested.fill_null(False))
    return seg.with_columns(
        track_tid=pl.when("nested").then(pl.col("tid"))
        .when(pl.col("tid").is_null()).then(pl.lit(NO_THREAD_TID))
        .when(pl.col("has_tasks")).then(pl.col("tid") + OUTSIDE_TID)
        .otherwise(pl.col("tid")).cast(pl.Int64),
        s=pl.col("start_ns"), e=pl.max_horizontal("stop_ns", "start_ns"),
        n=pl.lit(1, pl.Int64), bytes=pl.col("length"))


def _aggregate_segments(seg: pl.DataFrame) -> pl.DataFrame:
    """Merge nested segments per (execution, file, op), others per 100 ms bin."""
    seg = seg.with_columns(
        group=pl.when("nested").then(pl.col("execution_id"))
        .otherwise(pl.col("start_ns") // 100_000_000))
    return seg.group_by("tpid", "track_tid", "nested", "group", "path", "op").agg(
        s=pl.col("s").min(), e=pl.col("e").max(), n=pl.len().cast(pl.Int64),
        bytes=pl.col("bytes").sum(), execution_id=pl.col("execution_id").first(),
        ps=pl.col("ps").first(), pe=pl.col("pe").first(),
        attribution=pl.col("attribution").first())


def _segments(seg: pl.DataFrame, t0: int) -> pl.DataFrame:
    clip_s = pl.when("nested").then(pl.max_horizontal("s", "ps")).otherwise(pl.col("s"))
    clip_e = pl.when("nested").then(pl.min_horizontal("e", "pe")).otherwise(pl.col("e"))
    seg = seg.with_columns(s=clip_s, e=clip_e).with_columns(e=pl.max_horizontal("e", "s"))
    seg = no_overlap(seg, ["tpid", "track_tid"])
    df = seg.with_columns(pid_t="tpid", tid_t="track_tid", ts_t=us("s", t0),
                          dur_t=(us("e", t0) - us("s", t0)).round(3))
    name = pl.format("{} {}", pl.col("op").cast(pl.String), pl.col("path").fill_null("?"))
    args = pl.struct(path="path", op=pl.col("op").cast(pl.String), bytes="bytes", ops="n",
                     execution_id="execution_id",
                     attribution=pl.col("attribution").cast(pl.String))
    return encode(df, 2, name=name, cat=pl.lit("io"), ph=pl.lit("X"), ts="ts_t", dur="dur_t",
                   pid="pid_t", tid="tid_t", args=args)


def _extra_tracks(seg: pl.DataFrame, thr: pl.DataFrame) -> pl.DataFrame:
    """thread_name rows for outside-task and no-thread-id tracks that hold segments."""
    used = seg.filter(~pl.col("nested") & ((pl.col("track_tid") >= OUTSIDE_TID)
                                           | (pl.col("track_tid") == NO_THREAD_TID)))
    used = used.select("tpid", "track_tid").unique()
    names = thr.select("tpid", track_tid=pl.col("tid") + OUTSIDE_TID, thread_id="thread_id")
    used = used.join(names, on=["tpid", "track_tid"], how="left")
    label = (pl.when(pl.col("track_tid") == NO_THREAD_TID).then(pl.lit("I/O without thread id"))
             .otherwise(pl.format("I/O outside tasks · thread {}",
                                  pl.col("thread_id").cast(pl.String))))
    return used.select(pid_t="tpid", tid_t="track_tid", name=label)


def _counter_bins(df: pl.DataFrame, t0: int, width: int, **sums: pl.Expr) -> pl.DataFrame:
    binned = df.with_columns(bin=(pl.col("t") - t0) // width + 1)
    per = binned.group_by("tpid", "bin").agg(**sums).sort("tpid", "bin")
    return per.with_columns(pl.col(k).cum_sum().over("tpid") for k in sums).with_columns(
        t=pl.col("bin") * width + t0)


def _path_drawn(path: pl.DataFrame, d: Drawn) -> pl.DataFrame:
    """The links of the critical path drawn on its track: all of them, or those starting in a
    bounded trace's window and those drawn beside it (``d.extra``: none for a window asked
    for)."""
    if not d.note:
        return path
    return path.filter(((pl.col("start_ns") >= d.w0) & (pl.col("start_ns") < d.w1))
                       | pl.col("execution_id").is_in(d.extra.implode()))


def _counted(seg: pl.DataFrame, tasks: pl.DataFrame, extra: pl.Series
             ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The segments and task rows the counters sum: those of the window, not of ``extra``
    (executions drawn beside it, whose bytes and CPU would make the counters jump)."""
    if extra.is_empty():
        return seg, tasks
    ids = extra.implode()
    return (seg.filter(~pl.col("execution_id").is_in(ids).fill_null(False)),
            tasks.filter(~pl.col("execution_id").is_in(ids)))


def _counters(seg: pl.DataFrame, tasks: pl.DataFrame, t0: int, t1: int) -> pl.DataFrame:
    width = max(1, -(-(t1 - t0) // COUNTER_BINS))
    io = seg.select("tpid", t=pl.col("e"),
                    read=pl.when(pl.col("op") == "read").then("bytes").otherwise(0),
                    written=pl.when(pl.col("op") == "write").then("bytes").otherwise(0))
    io = _counter_bins(io, t0, width, read=pl.col("read").sum(),
                       written=pl.col("written").sum())
    # only executions whose CPU was measured: a source that records none draws no counter
    cpu = _counter_bins(tasks.filter(pl.col("cpu_s").is_not_null())
                        .select("tpid", t=pl.col("e"), cpu=pl.col("cpu_s")),
                        t0, width, cpu_s=pl.col("cpu").sum())
    events = []
    for frame, name, args in ((io, "I/O bytes (cumulative)", pl.struct("read", "written")),
                              (cpu, "task CPU s (cumulative)", pl.struct("cpu_s"))):
        df = frame.with_columns(pid_t="tpid", tid_t=pl.lit(0, pl.Int64), ts_t=us("t", t0),
                                dur_t=pl.lit(0.0))
        events.append(encode(df, 3, name=pl.lit(name), ph=pl.lit("C"), ts="ts_t",
                              pid="pid_t", tid="tid_t", args=args))
    return pl.concat(events)


def _instants(sched: pl.DataFrame, procs: pl.DataFrame, t0: int) -> tuple[pl.DataFrame, str]:
    ev = sched.join(procs.select("host", "pid", "tpid"), on=["host", "pid"], how="left",
                    nulls_equal=True)
    ev = ev.sort("time_ns", "key", "start", "finish")
    note = ""
    if ev.height > EVENT_LIMIT:
        step = -(-ev.height // EVENT_LIMIT)
        note = (f"scheduler transitions: one in {step} of {ev.height:,} kept "
                f"({-(-ev.height // step):,})")
        ev = ev.gather_every(step)
    df = ev.with_columns(pid_t="tpid", tid_t=pl.lit(TRANSITIONS_TID, pl.Int64),
                         ts_t=us("time_ns", t0), dur_t=pl.lit(0.0))
    name = pl.format("{} → {}", pl.col("start"), pl.col("finish"))
    args = pl.struct(key="key", start="start", finish="finish", worker="worker",
                     stimulus_id="stimulus_id")
    return encode(df, 4, name=name, cat=pl.lit("scheduler"), ph=pl.lit("i"),
                   s=pl.lit("t"), ts="ts_t", pid="pid_t", tid="tid_t", args=args), note


def _states(states: pl.DataFrame, procs: pl.DataFrame, t0: int, t1: int
            ) -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """(events, thread names) of the workers' memory pauses (``X`` slices; one still open
    where the records end lasts to ``t1``) and deaths (a process-scoped instant) on a track
    of their process, "memory and life" (``aggregate.worker_states``)."""
    s = states.join(procs.select("worker", "tpid").drop_nulls("worker"), on="worker")
    if s.is_empty():
        return [], pl.DataFrame(schema={"pid_t": pl.Int64, "tid_t": pl.Int64,
                                        "name": pl.String})
    s = s.with_columns(pid_t="tpid", tid_t=pl.lit(STATE_TID, pl.Int64),
                       ts_t=us("start_ns", t0),
                       dur_t=(us(pl.col("stop_ns").fill_null(t1), t0)
                              - us("start_ns", t0)).round(3))
    paused = encode(s.filter(pl.col("state") == PAUSED), 1, name="state",
                     cat=pl.lit("memory"), ph=pl.lit("X"), ts="ts_t", dur="dur_t",
                     pid="pid_t", tid="tid_t",
                     args=pl.struct(worker="worker", until=pl.when(pl.col("stop_ns").is_null())
                                    .then(pl.lit("the end of the records"))
                                    .otherwise(pl.lit("resumed or removed"))))
    died = encode(s.filter(pl.col("state") == DIED).with_columns(dur_t=pl.lit(0.0)), 4,
                   name=pl.lit("worker died (removed by the scheduler)"), cat=pl.lit("worker"),
                   ph=pl.lit("i"), s=pl.lit("p"), ts="ts_t", pid="pid_t", tid="tid_t",
                   args=pl.struct(worker="worker"))
    names = s.select("pid_t", "tid_t").unique().with_columns(name=pl.lit("memory and life"))
    return [paused, died], names


def _window(rows: pl.DataFrame, window: tuple[float, float | None] | None,
            out_dir: Path) -> tuple[int, int, str]:
    """(first, end) ns of the executions to draw (``rows``: one per execution, its start
    ``s`` in [first, end)) and what the notes track says about it ("" when all are drawn)."""
    if rows.is_empty():
        return 0, 0, ""
    r0 = int(rows["s"].min())  # type: ignore[arg-type]
    r1 = int(rows["s"].max()) + 1  # type: ignore[arg-type]
    if window is not None:
        w0 = r0 + int(window[0] * 1e9)
        w1 = r1 if window[1] is None else r0 + int(window[1] * 1e9)
    elif rows.height > TASK_LIMIT:
        w0, w1 = r0, int(rows["s"].sort().gather(TASK_LIMIT).item())
    else:
        return r0, r1, ""
    kept = rows.filter((pl.col("s") >= w0) & (pl.col("s") < w1)).height
    if kept == rows.height:
        return w0, w1, ""
    a, b, span = (w0 - r0) / 1e9, (w1 - r0) / 1e9, (r1 - r0) / 1e9
    nxt = f"{b:.3f}:{b + (b - a):.3f}"
    return w0, w1, (
        f"showing the {kept:,} of {rows.height:,} task executions that start "
        f"{a:.3f}–{b:.3f} s after the first task start (the run's tasks start over "
        f"{span:.3f} s); their I/O, the scheduler's transitions and the counters of that "
        f"window only. Others: `correlate report {out_dir} --kinds trace --trace-window "
        f"START:END` (seconds after the first task start), e.g. --trace-window {nxt}; "
        "--trace-window 0: draws them all, a file too large for Perfetto's UI at this size")


def _in_window(out: Outputs, rows: pl.DataFrame, w0: int, w1: int,
               bounded: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The segments and scheduler events of the window (all of them when not ``bounded``),
    filtered while reading: a million executions' 10M segments are never read whole."""
    segs = out.scan("segments").select(SEGMENT_COLUMNS)
    sched = out.scan("events").filter(pl.col("side") == "scheduler").select(EVENT_COLUMNS)
    if bounded:  # (one predicate, applied as the file is read: a join read every segment)
        ids = rows.get_column("execution_id").unique().implode()
        segs = segs.filter(pl.col("execution_id").is_in(ids) | (
            pl.col("execution_id").is_null() & (pl.col("start_ns") >= w0)
            & (pl.col("start_ns") < w1)))
        sched = sched.filter((pl.col("time_ns") >= w0) & (pl.col("time_ns") < w1))
    return out.collect("segments", segs), out.collect("events", sched)


@dataclass(frozen=True)
class Drawn:
    """The executions a trace draws (``rows``: as ``coroutines.drawn`` makes them, with ``s``,
    their start), its window [``w0``, ``w1``) and what the notes track says of it ("": every
    execution drawn), the run's executions, and those drawn whole besides a bounded window by
    default (``extra``: later links of the critical path and the longest others) with their
    note."""

    rows: pl.DataFrame
    w0: int
    w1: int
    note: str
    in_run: int
    extra: pl.Series
    extra_note: str = ""


def _drawn_in_window(out: Outputs, window: tuple[float, float | None] | None) -> Drawn:
    """The executions to draw. The window is chosen on the executions' ids and times alone
    and only its rows are read: a big run's tasks table is never read whole for a window of
    it. A window chosen by default (the first ``TASK_LIMIT`` executions) also draws, whole
    with their I/O, the critical path's executions after it and the ``LONGEST_LIMIT``
    longest others: what a reader of a big run's trace looks for first."""
    timed = pl.col("start_ns").is_not_null() & pl.col("stop_ns").is_not_null()
    times = out.read("tasks", ["execution_id", "start_ns", "stop_ns", "cpu_s"])
    in_run, slices = times.height, out["slices"]
    # an execution is in the window by its start (a coroutine's first slice), whole
    starts = coroutines.drawn(times, slices).filter(timed).group_by("execution_id").agg(
        s=pl.col("start_ns").min(), d=pl.col("stop_ns").max() - pl.col("start_ns").min())
    del times
    w0, w1, note = _window(starts, window, out.out_dir)
    rows = out.scan("tasks").select(TASK_COLUMNS)
    extra, extra_note = pl.Series([], dtype=pl.Int64), ""
    if note:
        inside = (pl.col("s") >= w0) & (pl.col("s") < w1)
        if window is None:
            extra, extra_note = _beside(out, starts.filter(~inside))
        kept = pl.concat([starts.filter(inside).get_column("execution_id"), extra]).implode()
        rows = rows.filter(pl.col("execution_id").is_in(kept))
        slices = slices.filter(pl.col("execution_id").is_in(kept))
    drawn = coroutines.drawn(out.collect("tasks", rows), slices).filter(timed)
    return Drawn(drawn.with_columns(s=pl.col("start_ns")), w0, w1, note, in_run, extra,
                 extra_note)


def _beside(out: Outputs, rest: pl.DataFrame) -> tuple[pl.Series, str]:
    """Of the executions outside the default window (``rest``: execution_id, start ``s``,
    span ``d``), those of the critical path and the ``LONGEST_LIMIT`` longest others, and
    the note that says so."""
    path = out.read("critical_path", ["execution_id"]).get_column("execution_id").implode()
    rest = rest.sort("d", "execution_id", descending=[True, False])  # (longest first)
    later = rest.filter(pl.col("execution_id").is_in(path))
    on_path = later.head(PATH_LIMIT)
    longest = rest.filter(~pl.col("execution_id").is_in(path)).head(LONGEST_LIMIT)
    if on_path.is_empty() and longest.is_empty():
        return pl.Series([], dtype=pl.Int64), ""
    links = (f"the {on_path.height:,} later executions of the critical path"
             if on_path.height == later.height else
             f"the {on_path.height:,} longest of the critical path's {later.height:,} later "
             "executions (and only these of its links on its track)")
    least = integer(longest.get_column("d").min())
    shortest = "" if least is None else f" (the shortest of them {least / 1e9:.3f} s)"
    return pl.concat([on_path["execution_id"], longest["execution_id"]]), (
        f"besides them, drawn whole with their I/O on their threads: {links} and the "
        f"{longest.height:,} longest of the other executions{shortest}; the counters leave "
        "these out")


def _notes_track(note: str, left_out: bool, first: int, last: int,
                 t0: int) -> tuple[pl.DataFrame, ...]:
    """The first track: one slice over the window whose name and args say what was left out."""
    meta = pl.DataFrame({"pid_t": [NOTES_PID], "tid_t": [1]}, schema_overrides={
                         "pid_t": pl.Int64, "tid_t": pl.Int64}).with_columns(
                         name=pl.lit("what this trace shows"))
    zero = {"ts_t": pl.lit(0.0), "dur_t": pl.lit(0.0)}
    pname = encode(meta.with_columns(**zero), 0, name=pl.lit("process_name"), ph=pl.lit("M"),
                    pid="pid_t", tid="tid_t", args=pl.struct(name="name"))
    psort = encode(meta.with_columns(**zero), 0, name=pl.lit("process_sort_index"),
                    ph=pl.lit("M"), pid="pid_t", tid="tid_t",
                    args=pl.struct(sort_index=pl.lit(-2)))  # (before the critical path's -1)
    tname = encode(meta.with_columns(**zero), 0, name=pl.lit("thread_name"), ph=pl.lit("M"),
                    pid="pid_t", tid="tid_t", args=pl.struct(name=pl.lit("notes")))
    span = pl.DataFrame({"s": [first], "e": [max(first, last)], "note": [note]}).with_columns(
        pid_t=pl.lit(NOTES_PID, pl.Int64), tid_t=pl.lit(1, pl.Int64), ts_t=us("s", t0),
        dur_t=(us("e", t0) - us("s", t0)).round(3))
    title = ("this trace shows part of the run: args.note says what and how to see the rest"
             if left_out else "merged in this trace: args.note says what")
    slice_ = encode(span, 1, name=pl.lit(title), cat=pl.lit("notes"), ph=pl.lit("X"), ts="ts_t",
                     dur="dur_t", pid="pid_t", tid="tid_t", args=pl.struct(note="note"))
    return pname, psort, tname, slice_


def _arrivals_in(out: Outputs, bounds: tuple[Any, Any] | None) -> pl.DataFrame:
    """The run's arrivals of data from outside Dask, those inside ``bounds`` where given."""
    arriving = out.scan("arrivals")
    if bounds is not None:
        arriving = arriving.filter((pl.col("time_ns") >= bounds[0])
                                   & (pl.col("time_ns") < bounds[1]))
    return out.collect("arrivals", arriving)


def _states_in(out: Outputs, bounds: tuple[Any, Any] | None) -> pl.DataFrame:
    """The workers' memory pauses and deaths; inside ``bounds`` where given (a pause
    overlapping it, a death inside it)."""
    states = worker_states(out.summary)
    if bounds is None:
        return states
    return states.filter((pl.col("stop_ns").fill_null(bounds[1]) >= bounds[0])
                         & (pl.col("start_ns") < bounds[1]))


def build_events(out: Outputs, window: tuple[float, float | None] | None = None
                 ) -> tuple[pl.DataFrame, dict[str, Any]]:
    """All trace events as sorted JSON strings (column ``json``) and ``otherData``."""
    from correlate.reports.trace.arrivals_track import arrival_events, first_time
    from correlate.reports.trace.critical_path_track import path_events

    d = _drawn_in_window(out, window)
    drawn, w0, w1, window_note = d.rows, d.w0, d.w1, d.note
    bounded = bool(window_note)
    seg, sched = _in_window(out, drawn, w0, w1, bounded)
    arrived = _arrivals_in(out, (w0, w1) if bounded else None)
    t0 = min(_t0(drawn, seg, sched), first_time(arrived) or 2**63 - 1)
    procs = processes(out, seg, sched)
    thr = threads(drawn, seg, procs)
    task_rows = _task_rows(drawn, thr, procs)
    in_run = seg.height
    seg = _segment_rows(seg, task_rows, procs, thr)
    notes = [n for n in (window_note, d.extra_note) if n]
    if seg.height > SEGMENT_LIMIT:
        notes.append(f"{seg.height:,} I/O segments: nested slices merged per execution × "
                     "file × operation, outside-task I/O per 100 ms × file × operation "
                     "(args.ops says how many were merged)")
        seg = _aggregate_segments(seg)
    ends = [t0, *(x for x in (integer(task_rows["e"].max()), integer(seg["e"].max()))
                  if x is not None)]
    instants, note = _instants(sched, procs, t0)
    del sched
    notes += [note] if note else []
    sched = procs.filter(pl.col("role") == "scheduler").select(
        pid_t="tpid", tid_t=pl.lit(TRANSITIONS_TID, pl.Int64), name=pl.lit("transitions"))
    state_events, state_tracks = _states(_states_in(out, (w0, w1) if bounded else None),
                                         procs, t0, max(ends))
    meta = _meta(procs, thr, pl.concat([_extra_tracks(seg, thr), sched, state_tracks]))
    parts = [meta, _tasks(task_rows, t0), _segments(seg, t0),
             _counters(*_counted(seg, task_rows, d.extra), t0, max(ends)), instants,
             *state_events]
    # (the steps with an arrival in the window)
    parts += arrival_events(arrived, out["arrival_steps"].join(
        arrived.select("step").unique(), on="step", how="semi"), t0)
    parts += path_events(_path_drawn(out["critical_path"], d), t0)
    if notes:
        parts += _notes_track(" · ".join(notes), bounded, t0, max(ends), t0)
    events = pl.concat(parts).with_columns(meta=pl.col("order") != 0).sort(
        "meta", "pid", "tid", "ts", "dur", "order", "json",
        descending=[False, False, False, False, True, False, False])
    other = {"generator": "dask-correlate", "format": "chrome-trace-events",
             "t0_ns": t0, "time_unit": "µs since t0_ns on the run timeline",
             "executions": int(task_rows["execution_id"].n_unique()),
             "executions_in_run": d.in_run,
             "segments_drawn": in_run,
             "notes": notes}
    return events, other


def write_trace(out: Outputs, out_dir: Path, options: ReportOptions) -> list[Path]:
    """Write ``trace.json`` (of ``options.trace_window``, seconds after the first task start;
    by default the first ``TASK_LIMIT`` executions); return its path."""
    events, other = build_events(out, options.trace_window)
    path = Path(out_dir) / "trace.json"
    with path.open("w", encoding="utf-8") as fh:  # a slice of events at a time: the whole
        fh.write('{"displayTimeUnit":"ms","otherData":'  # file as one string held it 3 times
                 + json.dumps(other, sort_keys=True, ensure_ascii=False) + ',"traceEvents":[\n')
        for at in range(0, events.height, WRITE_ROWS):
            fh.write((",\n" if at else "")
                     + ",\n".join(events["json"].slice(at, WRITE_ROWS).to_list()))
        fh.write("\n]}\n")
    return [path]
