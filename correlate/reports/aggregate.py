"""Derived views of the output tables, shared by every report writer.

Pure functions: frames in, new frames (or plain dicts) out; inputs are never modified. Every
result is sorted with explicit tie-breakers so reports built from it are deterministic.

Lanes: one per (host, pid, thread_id) that executed tasks, numbered 0.. in sorted order; the
timeline figure, the HTML timeline and the trace all use the same numbering. Executions whose
thread is unknown (imported runs; ``thread_id`` null) are packed into ``thread ?`` slot lanes
(``with_slots``) instead of one lane where they would overlap.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.attribution import doubtful
from correlate.attribution.stdio import REFILED
from correlate.findings.io_rules import distinct_read_bytes
from correlate.frames.grouping import group_agg, measured_sum, request_means, request_sums
from correlate.reports.fmt import human_bytes
from correlate.timeline import endings, lost, task_threads

LANE_KEYS = ("host", "pid", "thread_id", "slot")


def run_window(tasks: pl.DataFrame) -> tuple[int, int] | None:
    """First task start and last task stop on the run timeline (None: no timed task)."""
    timed = pl.col("start_ns").is_not_null() & pl.col("stop_ns").is_not_null()
    first, last = tasks.select(pl.col("start_ns").filter(timed).min(),
                               pl.col("stop_ns").filter(timed).max()).row(0)
    return None if first is None else (int(first), int(last))


def worker_label() -> pl.Expr:
    """Worker address, or ``host:pid`` when the address is unknown."""
    return pl.coalesce(pl.col("worker"),
                       pl.format("{}:{}", pl.col("host").fill_null("?"),
                                 pl.col("pid").cast(pl.String).fill_null("?")))


#: what ``with_slots`` reads besides the execution's id and times
SLOT_KEYS = ("host", "pid", "worker", "thread_id")


def with_slots(tasks: pl.DataFrame) -> pl.DataFrame:
    """``tasks`` with ``slot``: null for an execution whose thread is known (recorded or
    inferred); for the others, per worker process, the lowest slot free when it starts (in
    start order), so slots never hold two executions at once and their number is the most
    thread-unknown executions running at once."""
    if "slot" in tasks.columns:
        return tasks
    unknown = tasks.select(*SLOT_KEYS, "execution_id", "start_ns", "stop_ns").filter(
        pl.col("thread_id").is_null() & pl.col("start_ns").is_not_null())
    if unknown.is_empty():
        return tasks.with_columns(slot=pl.lit(None, pl.Int64))
    rows = []
    for _, g in unknown.sort("start_ns", "execution_id").group_by(
            "host", "pid", "worker", maintain_order=True):
        free_at: list[int] = []  # per slot: when its last execution stops
        for eid, a, b in g.select("execution_id", "start_ns", "stop_ns").iter_rows():
            slot = next((i for i, t in enumerate(free_at) if t <= a), len(free_at))
            if slot == len(free_at):
                free_at.append(0)
            free_at[slot] = max(a, b if b is not None else a)
            rows.append((eid, slot))
    slots = pl.DataFrame(rows, schema={"execution_id": pl.Int64, "slot": pl.Int64},
                         orient="row")
    return tasks.join(slots, on="execution_id", how="left", maintain_order="left")


def lanes(tasks: pl.DataFrame) -> pl.DataFrame:
    """One row per executing thread: host, pid, thread_id, slot, worker, lane (0..), label.
    Labels name the worker and the thread's index in it (``thread 2``; the id itself, long
    and alike from thread to thread, is in ``thread_id`` for tooltips and tables); the
    thread that ran only ``async def`` tasks is the worker's ``event loop``. A thread the
    source did not record but ``correlate`` inferred from the DXT pthread ids says so;
    executions whose thread is unknown share ``thread ?`` lanes (``with_slots``), as few as
    can hold them."""
    used = [*SLOT_KEYS, "execution_id", "start_ns", "stop_ns",
            *(c for c in ("thread_inferred", "awaiting_s", "slot") if c in tasks.columns)]
    t = with_slots(tasks.select(used)).with_columns(worker=worker_label())
    inferred = (pl.col("thread_inferred").any() if "thread_inferred" in t.columns
                else pl.lit(False))
    loop = is_coroutine().all() if "awaiting_s" in t.columns else pl.lit(False)
    lane = (t.group_by(*LANE_KEYS).agg(pl.col("worker").min(), inferred=inferred, loop=loop)
            .sort(*LANE_KEYS, nulls_last=True)
            .with_row_index("lane").with_columns(pl.col("lane").cast(pl.Int64)))
    known = pl.col("thread_id").is_not_null() & ~pl.col("loop")
    index = known.cast(pl.Int64).cum_sum().over("host", "pid", "worker")
    thread = (pl.when(pl.col("loop") & pl.col("thread_id").is_not_null())
              .then(pl.lit("event loop"))
              .when(known)
              .then(pl.format("thread {}", index.cast(pl.String))
                    + pl.when(pl.col("inferred")).then(pl.lit(" (inferred)")).otherwise(pl.lit("")))
              .when(pl.col("slot").is_not_null())
              .then(pl.format("thread ? #{}", (pl.col("slot") + 1).cast(pl.String)))
              .otherwise(pl.lit("thread ?")))
    return lane.with_columns(label=pl.format("{} · {}", pl.col("worker"), thread)
                             ).drop("inferred", "loop")


def executor_threads(summary: dict[str, Any]) -> pl.DataFrame:
    """host, pid, nthreads of each worker process whose executor thread count the run
    recorded (proc.json ``nthreads``); empty where none did (imported runs)."""
    rows = [(p.get("host"), p.get("pid"), p.get("nthreads"))
            for p in summary.get("processes") or []
            if p.get("role") == "worker" and isinstance(p.get("nthreads"), int)]
    return pl.DataFrame(rows, schema={"host": pl.String, "pid": pl.Int64,
                                      "nthreads": pl.Int64}, orient="row")


def thread_counts(tasks: pl.DataFrame, nthreads: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per worker: ``threads`` and ``threads_bound``. With every execution's thread known:
    the threads seen. Otherwise (imported runs without thread ids) the thread count is not
    known and ``threads`` is its lower bound, the most executions running at once (also
    never below the threads seen); ``threads_bound`` is then True. Executions of one thread
    never overlap, so busy time never exceeds ``threads`` × the run window. Where the worker
    recorded its executor threads (``nthreads``, from ``executor_threads``) that count is
    ``threads``, known, not a bound (a thread it never used is idle, not absent)."""
    t = tasks.select(worker=worker_label(), thread_id="thread_id", a=pl.col("start_ns"),
                     b=pl.max_horizontal("stop_ns", "start_ns")).filter(
        pl.col("a").is_not_null())
    # +1 at each start, -1 at each stop; a stop at the instant another starts sorts first
    # (frees the thread first)
    edges = pl.concat([t.select("worker", at="a", d=pl.lit(1, pl.Int8)),
                       t.select("worker", at="b", d=pl.lit(-1, pl.Int8))])
    at_once = edges.sort("worker", "at", "d").group_by("worker").agg(
        at_once=pl.col("d").cast(pl.Int64).cum_sum().max().clip(lower_bound=0))
    seen = t.group_by("worker").agg(seen=pl.col("thread_id").drop_nulls().n_unique(),
                                    unknown=pl.col("thread_id").null_count() > 0)
    both = seen.join(at_once, on="worker", how="left")
    if nthreads is not None and not nthreads.is_empty():
        recorded = (tasks.select("host", "pid", worker=worker_label()).unique()
                    .join(nthreads, on=["host", "pid"])
                    .group_by("worker").agg(pl.col("nthreads").sum()))
        both = both.join(recorded, on="worker", how="left")
    else:
        both = both.with_columns(nthreads=pl.lit(None, pl.Int64))
    inferred = pl.max_horizontal("seen", "at_once")
    return both.select(
        "worker", threads=pl.when(pl.col("nthreads").is_not_null())
        .then(pl.max_horizontal("nthreads", "seen")).otherwise(inferred).cast(pl.Int64),
        threads_bound=pl.col("nthreads").is_null()
        & (pl.col("unknown") | (pl.col("at_once") > pl.col("seen"))))


def threads_text(threads: int, bound: bool) -> str:
    """``8``, or ``≥ 8`` when the count is a lower bound (``thread_counts``)."""
    return f"≥ {threads}" if bound else str(threads)


#: what the reports say under a worker table whose thread counts are lower bounds
THREADS_BOUND_NOTE = ("≥ N: the run recorded no thread per task, so the thread count is not "
                      "known; N is its lower bound, the most executions running at once on "
                      "that worker (thread time and busy use it, so busy is an upper bound)")


def is_coroutine() -> pl.Expr:
    """An execution of an ``async def`` task: it ran on the worker's event loop, not on an
    executor thread (``awaiting_s`` is set for those only)."""
    return pl.col("awaiting_s").is_not_null()


def workers_died(summary: dict[str, Any]) -> dict[str, int | None]:
    """The workers that died during the run → when the scheduler removed them (run
    timeline; None: not recorded), from summary.json ``lost``."""
    lost = summary.get("lost") or {}
    at = lost.get("died_ns") or {}
    return {w: at.get(w) for w in lost.get("workers_died") or []}


def _waits_before(columns: list[str]) -> dict[str, pl.Expr]:
    """The task-seconds a worker's tasks spent before they ran, by what held them (a paused
    worker's part is 0 where no pause was recorded; the free-thread part unknown where the
    worker's thread count was not)."""
    return {
        "transfer_s": pl.col("transfer_s").fill_null(0.0).sum(),
        "waiting_s": pl.col("wait_thread_s").fill_null(0.0).sum(),
        "paused_s": pl.col("wait_paused_s").fill_null(0.0).sum()
        if "wait_paused_s" in columns else pl.lit(0.0),
        "free_thread_s": measured_sum(pl.col("wait_free_thread_s"))
        if "wait_free_thread_s" in columns else pl.lit(None, pl.Float64),
        "read_back_s": pl.col("input_read_back_s").fill_null(0.0).sum()}


def worker_budget(tasks: pl.DataFrame, nthreads: pl.DataFrame | None = None,
                  died: dict[str, int | None] | None = None) -> pl.DataFrame:
    """Per worker: executor-thread-seconds over the run window split into the tasks' thread
    CPU, time inside I/O calls, the rest of their wall time (``other_s``: sleep, locks, the
    GIL, waits inside the task) and idle, plus the task-seconds spent waiting for a thread and
    receiving inputs (those overlap idle), and waiting with one of the worker's threads free
    (``free_thread_s``: its event loop had not handed the task over; null where the worker's
    thread count was not recorded). Executions of ``async def`` tasks ran on the event
    loop, not on an executor thread: their wall time is ``coroutine_s``, outside the thread
    count and the busy share. ``threads`` comes from ``thread_counts`` (the workers'
    recorded executor threads, ``nthreads``, where given; a lower bound when
    ``threads_bound``). CPU and I/O are null where no execution's was measured; ``other_s``
    is null without CPU, and holds the I/O time too where I/O was not measured
    (``other_includes_io``); an I/O call's own CPU is in both CPU and I/O, so ``other_s`` is a
    lower bound. A worker of ``died`` (``died`` True) was a worker until it died: its thread
    time ends when the scheduler removed it (``died``'s time; ``died_known``), else, where
    that was not recorded, with its last execution's stop."""
    window = run_window(tasks)
    span_s = 0.0 if window is None else (window[1] - window[0]) / 1e9
    start_ns = 0 if window is None else window[0]
    coroutine = is_coroutine() if "awaiting_s" in tasks.columns else pl.lit(False)
    t = tasks.with_columns(worker=worker_label(), coroutine=coroutine)
    on_threads = pl.col("coroutine").not_()

    def threaded(c: str) -> pl.Expr:
        return pl.col(c).filter(on_threads)

    agg = group_agg(
        t, ["worker"],
        executions=pl.len(),
        busy_s=threaded("duration_s").sum(),
        io_s=measured_sum(threaded("io_time_s")),
        cpu_s=measured_sum(threaded("cpu_s")),
        coroutine_s=pl.col("duration_s").filter(pl.col("coroutine")).sum(),
        coroutines=pl.col("coroutine").sum(),
        **_waits_before(t.columns),
        last_stop_ns=pl.col("stop_ns").max(),
    ).join(thread_counts(t.select(*SLOT_KEYS, "start_ns", "stop_ns", "coroutine")
                         .filter(on_threads), nthreads), on="worker", how="left").with_columns(
        threads=pl.col("threads").fill_null(0), threads_bound=pl.col("threads_bound")
        .fill_null(False))
    died = died or {}
    gone = pl.col("worker").is_in(list(died))
    death = pl.col("worker").replace_strict(
        {w: t for w, t in died.items() if t is not None}, default=None, return_dtype=pl.Int64)
    # (never before its last execution's stop: the clocks differ by milliseconds)
    end = pl.max_horizontal(death, pl.col("last_stop_ns"))
    lived_s = pl.when(gone).then(((end - start_ns) / 1e9).clip(0.0, span_s)).otherwise(span_s)
    return agg.with_columns(died=gone, died_known=gone & death.is_not_null(),
                            thread_s=pl.col("threads") * lived_s).drop(
        "last_stop_ns").with_columns(
        other_s=(pl.col("busy_s") - pl.col("cpu_s") - pl.col("io_s").fill_null(0.0))
        .clip(lower_bound=0.0),
        other_includes_io=pl.col("io_s").is_null(),
    ).with_columns(
        idle_s=(pl.col("thread_s") - pl.col("busy_s")).clip(lower_bound=0.0),
        busy_share=pl.when(pl.col("thread_s") > 0)
        .then(pl.col("busy_s") / pl.col("thread_s")).otherwise(None),
    ).select("worker", "threads", "threads_bound", pl.exclude("worker", "threads",
                                                               "threads_bound")).sort("worker")


def prefixes(tasks: pl.DataFrame) -> pl.DataFrame:
    """Per task prefix: executions, wall, CPU, I/O time, bytes and operations read and
    written (each null where none of the prefix's executions had it measured) and the mean
    request size of each (null: no request of that kind, or not captured), and ``other_s``,
    the rest of the wall time (sleep, locks, the GIL, waits inside the task: as in
    ``worker_budget``); sorted by wall time. Runs only: executions handed back
    (rescheduled, cancelled) are not runs of their task."""
    agg = group_agg(
        tasks, ["prefix"], where=endings.is_run(),
        executions=pl.len(),
        wall_s=pl.col("duration_s").sum(),
        cpu_s=measured_sum("cpu_s"),
        io_s=measured_sum("io_time_s"),
        **request_sums(),
        max_s=pl.col("duration_s").max(),
    )
    return agg.with_columns(
        **request_means(),
        mean_s=pl.col("wall_s") / pl.col("executions"),
        io_bytes=pl.col("read_bytes") + pl.col("write_bytes"),
        other_s=(pl.col("wall_s") - pl.col("cpu_s") - pl.col("io_s").fill_null(0.0))
        .clip(lower_bound=0.0),
    ).sort("wall_s", "prefix", descending=[True, False], nulls_last=True)


#: the per-task spill columns (``tasks``)
SPILL = ("spilled_bytes", "spill_writes", "spill_write_s", "unspilled_bytes", "unspill_read_s",
         "input_read_back_s")


def spill(tasks: pl.DataFrame, by: str) -> pl.DataFrame:
    """Spill per ``by`` (``prefix`` or ``key``): bytes and times written and read back, and
    the time executions waited for spilled inputs; only rows with any, heaviest first."""
    agg = group_agg(tasks, [by], **{c: measured_sum(c) for c in SPILL})
    return agg.filter(pl.sum_horizontal(pl.col(c).cast(pl.Float64) for c in SPILL) > 0).sort(
        "spilled_bytes", "input_read_back_s", by, descending=[True, True, False])


def shuffles(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per P2P shuffle of ``summary.json`` ``shuffles``, heaviest writes first:
    its bytes and times, workers and the executions of its transfer, barrier and unpack
    tasks."""
    rows = []
    for s in summary.get("shuffles") or []:
        tasks = s.get("tasks") or {}
        rows.append({
            "shuffle_id": s["shuffle_id"], "runs": len(s.get("run_ids") or []),
            "written_bytes": s.get("written_bytes"),
            "to_owner_bytes": s.get("written_to_owner_bytes"),
            "owner": s.get("barrier_key"), "read_bytes": s.get("read_bytes"),
            "read_by_tasks_bytes": s.get("read_by_tasks_bytes"),
            "write_s": s.get("write_s"), "read_s": s.get("read_s"), "span_s": s.get("span_s"),
            "workers": len(s.get("per_worker") or []),
            **{f"{k}_executions": (tasks.get(k) or {}).get("executions")
               for k in ("transfer", "barrier", "unpack")},
            "note": s.get("reads_note")})
    return sorted(rows, key=lambda r: (-(r["written_bytes"] or 0), r["shuffle_id"]))


def top_tasks(tasks: pl.DataFrame, by: str, n: int) -> pl.DataFrame:
    """The ``n`` executions with the largest ``by`` (``cpu_s``, ``io_bytes``, ``duration_s``…);
    rows where it is null or zero are left out. Ranked on ``by`` alone, and only the rows kept
    are gathered (a million executions' every column is not copied, filtered and sorted)."""
    # null when neither direction was measured (a run without Darshan ranks nothing by bytes)
    io_bytes = (pl.when(pl.col("read_bytes").is_not_null() | pl.col("write_bytes").is_not_null())
                .then(pl.col("read_bytes").fill_null(0.0) + pl.col("write_bytes").fill_null(0.0)))
    value = io_bytes if by == "io_bytes" else pl.col(by)
    rows = (tasks.select(value.alias("by"), "execution_id").with_row_index("row")
            .filter(pl.col("by").is_not_null() & (pl.col("by") > 0))
            .sort("by", "execution_id", descending=[True, False]).head(n).get_column("row"))
    return tasks[rows].with_columns(io_bytes=io_bytes, worker=worker_label())


def files(task_files: pl.DataFrame, unattributed: pl.DataFrame) -> pl.DataFrame:
    """Per file: bytes read/written by tasks and outside tasks, ops (all, read and written)
    and the mean request size of reads and of writes (null: none of that kind), I/O time,
    the distinct tasks (keys: a task run twice counts once; executions where ``task_files``
    has no keys), ``doubtful_name`` (Darshan's name for some of its I/O is doubtful:
    ``attribution.doubtful``) and ``refiled`` (some of its bytes are a misfiled C stdio
    record's, filed here by the record of opens: ``stdio-refiled``); sorted by total bytes."""
    # (a task told by its key's code where the key is Categorical: a code per text, so the
    # same count as the texts', without a text per row of the largest table)
    task = pl.col("key" if "key" in task_files.columns else "execution_id").to_physical()
    task_type = task_files.lazy().select(task).collect_schema().dtypes()[0]
    # (the paths grouped as task_files holds them, codes in the engine's kept table, and
    # named as text once per file)
    path = pl.col("path").cast(task_files.schema["path"])

    def per_path(df: pl.DataFrame, attributed: bool) -> pl.DataFrame:
        return df.select(
            path, "op", "bytes", "ops", "io_time_s",
            tasks=task if attributed else pl.lit(None, task_type),
            attributed=pl.lit(attributed),
            refiled=(pl.col("attribution") == REFILED if attributed
                     else pl.lit(False)),
            doubt=(pl.lit(False) if attributed
                   else doubtful.is_doubtful(pl.col("reason")).fill_null(False)))

    both = pl.concat([per_path(task_files, True), per_path(unattributed, False)])
    agg = both.group_by("path").agg(
        read_bytes=pl.col("bytes").filter(pl.col("op") == "read").sum(),
        write_bytes=pl.col("bytes").filter(pl.col("op") == "write").sum(),
        outside_bytes=pl.col("bytes").filter(~pl.col("attributed")).sum(),
        ops=pl.col("ops").sum(),
        read_ops=pl.col("ops").filter(pl.col("op") == "read").sum(),
        write_ops=pl.col("ops").filter(pl.col("op") == "write").sum(),
        io_s=pl.col("io_time_s").sum(),
        tasks=pl.col("tasks").drop_nulls().n_unique(),
        doubtful_name=pl.col("doubt").any(),
        refiled=pl.col("refiled").any(),
    )
    return agg.with_columns(pl.col("path").cast(pl.String),
                            total_bytes=pl.col("read_bytes") + pl.col("write_bytes"),
                            **request_means()).sort(
        "total_bytes", "path", descending=[True, False], nulls_last=True)


def busiest_files(task_files: pl.DataFrame, unattributed: pl.DataFrame, n: int,
                  segments: pl.LazyFrame | None) -> tuple[pl.DataFrame, int]:
    """The ``n`` busiest files (``files``) with how many times each was read
    (``with_read_times``; null without ``segments``), and how many files there are: the one
    list the terminal, report.md and report.html show (each its own ``n``)."""
    every = files(task_files, unattributed)
    shown = (with_read_times(every.head(n), segments) if segments is not None
             else every.head(n).with_columns(distinct_read_bytes=pl.lit(None, pl.Float64),
                                             read_times=pl.lit(None, pl.Float64)))
    return shown, every.height


def read_back_sentence(summary: dict[str, Any]) -> str | None:
    """Dask's disk-read time beside what Darshan saw inside it (``summary.json``
    ``spill.read_back``), with what each measures; None where no execution read an input
    back. The one sentence every output shows."""
    rb = (summary.get("spill") or {}).get("read_back") or {}
    if not rb.get("dask_disk_read_s"):
        return None
    head = (f"Dask's disk-read: {rb['dask_disk_read_s']:.3f} s (the wall time the executions' "
            f"inputs took to come out of the worker's store, each recorded when above 5 ms: "
            f"spilled inputs read back, or a store slowed by anything else)")
    if rb.get("in_read_calls_s") is None:
        return head + ("; how much of it was inside read calls of spill files is not "
                       "captured (no DXT segments).")
    return head + (f": {rb['in_read_calls_s']:.3f} s inside the read calls of the spill "
                   f"files ({human_bytes(rb['read_bytes'])}, DXT), {rb['in_write_calls_s']:.3f} s "
                   f"in writes of other keys to disk to make room "
                   f"({human_bytes(rb['write_bytes'])}), and {rb['rest_s']:.3f} s in neither "
                   f"(unpickling, the store's own work).")


#: the states of a worker drawn on the timelines and the trace
PAUSED, DIED = "paused (memory)", "died"


def worker_states(summary: dict[str, Any]) -> pl.DataFrame:
    """worker, state, start_ns, stop_ns (run timeline) of each worker's memory pauses
    (``summary.json`` ``worker_pauses``; a pause still open where the records end lasts until
    the worker died, else stop null) and deaths (``lost.died_ns``: start = stop)."""
    died = {w: t for w, t in workers_died(summary).items() if t is not None}
    rows = [(p["worker"], PAUSED, p["start_ns"],
             p["stop_ns"] if p.get("stop_ns") is not None else died.get(p["worker"]))
            for p in summary.get("worker_pauses") or []]
    rows += [(w, DIED, t, t) for w, t in sorted(died.items())]
    return pl.DataFrame(rows, schema={"worker": pl.String, "state": pl.String,
                                      "start_ns": pl.Int64, "stop_ns": pl.Int64}, orient="row")


def state_bars(states: pl.DataFrame, lanes: pl.DataFrame, t0: int, t1: int) -> pl.DataFrame:
    """``worker_states`` on every lane of their worker: lane, state, start, stop (ns after
    ``t0``; an open pause ends at ``t1``, the end of the drawn window)."""
    return states.join(lanes.select("worker", "lane"), on="worker").select(
        "lane", "state", start=pl.col("start_ns") - t0,
        stop=pl.col("stop_ns").fill_null(t1) - t0).sort("lane", "start", "state")


def cpu_outside_tasks(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Per worker process whose whole CPU was sampled: its CPU, the part inside its task
    executions and the rest (event loop, communication, start-up, other threads), from
    ``summary.json`` ``cpu.per_worker``: the one list every output shows."""
    return [{"worker": w.get("worker") or f"{w.get('host')} pid {w.get('pid')}",
             "process_cpu_s": w["process_cpu_s"], "task_cpu_s": w.get("task_cpu_s"),
             "outside_tasks_cpu_s": w.get("outside_tasks_cpu_s")}
            for w in (summary.get("cpu") or {}).get("per_worker") or []
            if w.get("process_cpu_s")]


def with_read_times(files: pl.DataFrame, segments: pl.LazyFrame) -> pl.DataFrame:
    """``files`` (rows of ``files``) with ``distinct_read_bytes``, the bytes DXT saw read,
    each byte once (the repeated-reads rule's union of ranges), and ``read_times`` =
    ``read_bytes`` ÷ ``distinct_read_bytes``: how many times the file's bytes were read.
    Both null where DXT did not trace every read of the file (no DXT, C stdio, a process
    whose log had counters only): the ranges of the other reads are unknown. Only the
    ``files`` given are looked up in ``segments`` (a report's busiest few, not every file)."""
    paths = files.filter(pl.col("read_bytes") > 0).get_column("path").drop_nulls().to_list()
    traced = (segments.filter((pl.col("op") == "read")
                              & pl.col("path").is_in(paths))
              .group_by("path").agg(traced=pl.col("length").sum()).collect())
    out = files.join(traced, on="path", how="left", maintain_order="left").join(
        distinct_read_bytes(segments, paths), on="path", how="left", maintain_order="left")
    # every read of the file is in DXT (window-split rows are fractions: a tolerance)
    whole = pl.col("traced") >= pl.col("read_bytes") * (1 - 1e-9) - 0.5
    return out.with_columns(
        distinct_read_bytes=pl.when(whole).then(pl.col("distinct_bytes")),
        read_times=pl.when(whole & (pl.col("distinct_bytes") > 0))
        .then(pl.col("read_bytes") / pl.col("distinct_bytes")),
    ).drop("traced", "distinct_bytes")


NS = 1e9


def _ns(seconds: str) -> pl.Expr:
    return (pl.col(seconds) * NS).round().cast(pl.Int64)


def top_functions(task_functions: pl.DataFrame | pl.LazyFrame, tasks: pl.DataFrame,
                  prefix_names: list[str], n: int) -> pl.DataFrame:
    """Per prefix in ``prefix_names``: the ``n`` functions with most exclusive time summed over
    its executions (and their inclusive time and calls). ``task_functions`` may be a scan:
    summed while reading (a million executions' profile rows are never held whole)."""
    names = [p for p in dict.fromkeys(prefix_names) if p is not None]
    # each execution's prefix as its index in ``names``: an integer carried through the join
    # of every profile row, where the prefix's text cost ten million executions' rows gigabytes
    ids = tasks.select("execution_id", p=pl.col("prefix").replace_strict(
        names, list(range(len(names))), default=None, return_dtype=pl.UInt32)).drop_nulls("p")
    function = ["module", "name", "file", "line", "clock", "ncall_kind"]
    f = task_functions.lazy().select("execution_id", *function, "tsub_s", "ttot_s",
                                     "ncall").join(ids.lazy(), on="execution_id", how="inner")
    # times summed as integer nanoseconds: the streaming group-by adds rows in no fixed order,
    # and float sums taken in another order differ in their last bits from run to run; a row
    # is one execution × function (``task_functions``), so its executions are its rows
    agg = f.group_by("p", *function).agg(
        *(_ns(c).sum().truediv(NS).alias(c) for c in ("tsub_s", "ttot_s")),
        ncall=pl.col("ncall").sum(), executions=pl.len().cast(pl.UInt32)
    ).collect(engine="streaming")
    agg = agg.select(pl.col("p").replace_strict(list(range(len(names))), names,
                                                return_dtype=pl.String).alias("prefix"),
                     pl.exclude("p"))
    ranked = agg.sort("prefix", "tsub_s", "ttot_s", "name", "file", "line",
                      descending=[False, True, True, False, False, False], nulls_last=True)
    return ranked.group_by("prefix", maintain_order=True).head(n)


def unattributed_io(unattributed: pl.DataFrame) -> pl.DataFrame:
    """I/O outside every task, per reason × role × thread kind; sorted by bytes."""
    agg = unattributed.group_by("reason", "role", "thread_kind").agg(
        bytes=pl.col("bytes").sum(), ops=pl.col("ops").sum(),
        io_s=pl.col("io_time_s").sum(), files=pl.col("path").n_unique(),
        processes=pl.struct("host", "pid").n_unique())
    return agg.sort("bytes", "reason", "role", "thread_kind",
                    descending=[True, False, False, False], nulls_last=True)


def cpu_coverage(tasks: pl.DataFrame) -> pl.DataFrame:
    """Per worker: executions with and without a CPU measurement and their wall time."""
    t = tasks.with_columns(worker=worker_label(), measured=pl.col("cpu_s").is_not_null())
    return group_agg(
        t, ["worker"],
        executions=pl.len(),
        unmeasured=(~pl.col("measured")).sum(),
        unmeasured_wall_s=pl.col("duration_s").filter(~pl.col("measured")).sum(),
        cpu_s=measured_sum("cpu_s"),
        wall_s=pl.col("duration_s").sum(),
    ).sort("worker")


def statuses(tasks: pl.DataFrame) -> pl.DataFrame:
    """Executions per status (``ok`` and anything else) of the executions that ran to an end;
    those handed back (rescheduled, cancelled) are ``quality``'s ``notes``."""
    return (tasks.select("status").filter(endings.is_run())
            .group_by(pl.col("status").fill_null("unknown")).agg(executions=pl.len())
            .sort("executions", "status", descending=[True, False]))


def quality(summary: dict[str, Any], clocks: pl.DataFrame, tasks: pl.DataFrame,
            missing: tuple[str, ...] = ()) -> dict[str, Any]:
    """Data-quality facts: clock offsets and their uncertainty, warnings, rejected records,
    processes that did not close cleanly, attribution methods, missing tables."""
    procs = summary.get("processes") or []
    return {
        "clocks": clocks.sort("host", "pid", "domain", nulls_last=True),
        "worst_uncertainty_ns": clocks["uncertainty_ns"].max() if clocks.height else None,
        "unknown_uncertainty": clocks.filter(pl.col("uncertainty_ns").is_null()).height,
        # the headline problems are also warnings (summary.json): shown once, at the top
        "warnings": [str(w) for w in summary.get("warnings") or []
                     if w not in (summary.get("headline") or [])],
        "rejects": list(summary.get("rejects") or []),
        "not_closed": [p for p in procs if p.get("closed_cleanly") is False],
        "segments_by_method": dict(sorted(((summary.get("io") or {})
                                           .get("segments_by_method") or {}).items())),
        "attributed_by_method": dict((summary.get("io") or {})
                                     .get("attributed_by_method") or {}),
        "attribution": (tasks.group_by("attribution").agg(executions=pl.len())
                        .with_columns(pl.col("attribution").cast(pl.String))
                        .sort("attribution")),
        "statuses": statuses(tasks),
        # facts that explain counts, not problems: executions handed back, task code timed
        # on threads that ran no task body
        "notes": [*endings.sentences(summary.get("handed_back")),
                  *lost.sentences(summary.get("lost")),
                  *task_threads.sentences(summary.get("task_code_on_other_threads"))],
        "missing_tables": list(missing),
        "matching": matching_notes(summary),
    }


def matching_notes(summary: dict[str, Any]) -> list[tuple[str, bool]]:
    """(sentence, is a problem) per worker ↔ process decision of an imported run and for the
    thread inference, from ``summary.json`` (empty for runs recorded by ``collect``)."""
    facts = summary.get("facts") or {}
    out = []
    for worker, m in sorted((facts.get("worker_matches") or {}).items()):
        where = f"pid {m['pid']} on {m.get('host')}" if m.get("pid") is not None else "no process"
        out.append((f"worker {worker}: {where} — {m.get('how')}", m.get("pid") is None))
    for proc, why in sorted((facts.get("unmatched_worker_processes") or {}).items()):
        out.append((f"worker process {proc} not matched: {why}", True))
    ti = summary.get("thread_inference")
    if ti:
        out.append((f"threads inferred from the DXT pthread ids for {ti['executions_inferred']:,}"
                    f" of {ti['executions']:,} executions without a recorded thread, on "
                    f"{ti['threads_inferred']:,} threads ({ti['segments_inferred']:,} segments "
                    f"attributed inferred-thread); {ti['executions_ambiguous']:,} ambiguous "
                    f"({ti['segments_ambiguous']:,} segments split by window); "
                    f"{ti['executions_without_evidence']:,} without I/O evidence; "
                    f"{ti['threads_left_out']:,} thread(s) left out as not one task at a time",
                    bool(ti["executions_ambiguous"] or ti["threads_left_out"])))
    return out


def _fmt_ns(ns: Any) -> str | None:
    if not isinstance(ns, int):
        return None
    import datetime as dt

    when = dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def _threads_text(workers: Any, nthreads: Any) -> str | None:
    if isinstance(nthreads, list):
        nthreads = "/".join(str(x) for x in sorted(set(nthreads)))
    if workers is None and nthreads in (None, ""):
        return None
    return f"{workers if workers is not None else '?'} × {nthreads if nthreads else '?'} threads"


def versions_text(versions: Any, summary: dict[str, Any]) -> str | None:
    """The job's package versions, with the Darshan runtime that wrote the logs read from
    their headers (``none`` when the run has no log): the manifest's ``darshan`` is the
    PyDarshan package of the environment, not a runtime, and is named as such."""
    if not isinstance(versions, dict) or not versions:
        return None
    names = {"darshan": "PyDarshan"}
    parts = [f"{names.get(k, k)} {v}" for k, v in sorted(versions.items())]
    if "darshan_runtime_versions" in summary:  # (a summary.json from before it was recorded)
        runtime = ", ".join(summary["darshan_runtime_versions"]) or "none (no Darshan log)"
        parts.append(f"Darshan runtime {runtime}")
    return ", ".join(parts)


def run_facts(summary: dict[str, Any], tasks: pl.DataFrame) -> list[tuple[str, str]]:
    """(label, value) pairs describing the run; every summary fact is optional."""
    facts = summary.get("facts") or {}
    window = run_window(tasks)
    runs = int(tasks.select(endings.is_run().sum()).item())
    started, ended = facts.get("started_ns"), facts.get("ended_ns")
    hosts = facts.get("hosts")
    rows: list[tuple[str, str | None]] = [
        ("command", facts.get("command")),
        ("working directory", facts.get("cwd")),
        ("source format", summary.get("source_format")),
        ("hosts", ", ".join(map(str, hosts)) if isinstance(hosts, list) else hosts),
        ("workers × threads", _threads_text(facts.get("workers"), facts.get("nthreads"))),
        ("started", _fmt_ns(started)),
        ("duration (whole command)", f"{(ended - started) / 1e9:.3f} s"
         if isinstance(started, int) and isinstance(ended, int) else None),
        ("task window (first start → last stop)",
         f"{(window[1] - window[0]) / 1e9:.3f} s" if window else None),
        ("executions / distinct tasks",
         f"{runs:,} / {tasks['key'].n_unique():,}"
         + (f" (and {n:,} handed back: rescheduled or cancelled)"
            if (n := tasks.height - runs) else "")),
        ("exit code", None if facts.get("exit_code") is None else str(facts["exit_code"])),
    ]
    if (versions := versions_text(facts.get("versions"), summary)) is not None:
        rows.append(("versions", versions))
    options = facts.get("collector_options")
    if isinstance(options, dict) and options:
        rows.append(("collector options",
                     ", ".join(f"{k}={v}" for k, v in sorted(options.items()))))
    return [(k, str(v)) for k, v in rows if v not in (None, "")]


def arrivals(summary: dict[str, Any]) -> dict[str, Any] | None:
    """summary.json's ``arrivals`` section (None: the run had no data from outside Dask) with
    ``sentence``: what the steps' lag says (the analytics keeps up, or falls behind step after
    step)."""
    a = summary.get("arrivals")
    if not a:
        return None
    lag = a.get("lag_s") or {}
    trend = lag.get("trend_s_per_step")
    if lag.get("mean") is None:
        pace = "no task used the arrivals: the analytics' lag is unknown"
    elif trend is not None and trend > 0.01:
        pace = (f"the analytics falls behind: its lag grows {trend:+.3f} s a step "
                f"(first {lag['first']:.3f} s, last {lag['last']:.3f} s)")
    else:
        pace = (f"the analytics keeps up: lag {lag['mean']:.3f} s on average after a step's "
                f"last arrival, largest {lag['max']:.3f} s (step {lag['max_step']})")
    return {**a, "sentence": pace}
