"""The findings' rules over overhead: tasks too small for what each costs to schedule and
start (``tiny-tasks``), and CPU of the worker processes outside their task executions that
slowed the tasks (``cpu-outside-tasks``); docs/findings.md."""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.findings.context import SHOWN, Context, finding, span_saved, wait_saved
from correlate.frames.scalars import number

# --- tiny-tasks --------------------------------------------------------------------------

#: a prefix with fewer executions is no batching candidate
TINY_MIN_RUNS = 50
#: nor one whose median execution is longer than this: Dask's own cost per task is of the order
#: of a millisecond (its best-practices page), so a task of tens of milliseconds that waited as
#: long waited for something else (a graph submitted late, a host whose cores other work held),
#: which batching would not remove
TINY_MAX_MEDIAN_S = 0.01
#: the critical path's links of a prefix are overhead-bound when their mean wait for the
#: scheduler and their worker's dispatch is at least this share of the prefix's median
#: duration
TINY_OVERHEAD_SHARE = 0.5

#: the parts of a link's wait that are not the scheduler's round trip or the worker's dispatch
_NOT_OVERHEAD = ("wait_submission_s", "wait_transfer_s", "wait_read_back_s", "wait_paused_s")


def tiny_tasks(ctx: Context) -> list[dict[str, Any]]:
    """Prefixes of many short executions (a median of at most ``TINY_MAX_MEDIAN_S``) whose
    links of the critical path each waited, between
    the previous link's end and their start, for the scheduler and their worker's dispatch
    about as long as they ran or longer: the job's span is then the per-task overhead's. The
    cost is what those waits would save (``wait_saved``: batched into fewer tasks, the
    overhead is paid once per batch)."""
    t = ctx.tasks
    # (the columns it reads first: a group-by of the whole tasks table copies all of it)
    stats = (t.select("prefix", "duration_s").group_by("prefix")
             .agg(runs=pl.len(), median=pl.col("duration_s").median())
             .filter((pl.col("runs") >= TINY_MIN_RUNS)
                     & (pl.col("median") <= TINY_MAX_MEDIAN_S)))
    if stats.is_empty():
        return []
    overhead = (pl.col("wait_s") - pl.sum_horizontal(
        *(pl.col(c).fill_null(0.0) for c in _NOT_OVERHEAD))).clip(0.0)
    links = (ctx.path.filter(pl.col("gate") != "first")
             .select("prefix", "key", overhead_s=overhead)
             .join(stats, on="prefix"))
    per = (links.group_by("prefix").agg(
        links=pl.len(), overhead_s=pl.col("overhead_s").sum(),
        mean=pl.col("overhead_s").mean(), runs=pl.col("runs").first(),
        median=pl.col("median").first(),
        keys=pl.col("key").sort_by("overhead_s", descending=True).head(SHOWN))
        .filter(pl.col("mean") >= TINY_OVERHEAD_SHARE * pl.col("median"))
        .sort("overhead_s", "prefix", descending=[True, False]))
    out = []
    for r in per.iter_rows(named=True):
        out.append(finding(
            "tiny-tasks", wait_saved(ctx, r["overhead_s"]), [str(r["prefix"])], r["keys"], [],
            f"{r['runs']:,} {r['prefix']} executions of {_ms(r['median'])} median; "
            f"{r['links']:,} of them on the critical path waited {_ms(r['mean'])} on average "
            f"before each (the scheduler's round trip and the worker's dispatch), "
            f"{r['overhead_s']:.3f} s in all",
            "batch them: fewer, larger tasks (map over chunks of items, larger partitions or "
            "blocks), so that the per-task overhead is paid once per batch"))
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


# --- cpu-outside-tasks -------------------------------------------------------------------

#: an execution could have been slowed by CPU outside tasks when it computed for at least this
#: share of its wall time (a sleep, or a wait for something outside the process, computes
#: nothing the GIL could hold back)
OUTSIDE_MIN_CPU = 0.02
#: or when it computed this much in all, whatever its wall: the GIL can starve a computing
#: thread below any share (docs/findings.md: a pure-Python loop beside spinning threads), and
#: a sleep or a wait costs Dask's few tenths of a millisecond, never this
OUTSIDE_MIN_CPU_S = 0.05
#: a process's CPU outside its tasks dominates when it is at least this share of all the CPU
#: the process spent during its tasks' window
OUTSIDE_SHARE = 0.5


def _cpu_at(win: pl.DataFrame, samples: pl.DataFrame, at: str) -> pl.DataFrame:
    """``win`` with the process CPU at its time ``at`` (``cpu_<at>``: linear between the
    samples around it; null where the samples do not reach it)."""
    keyed = samples.select("host", "pid", ts="local_time_ns", cpu="process_cpu_s").sort("ts")
    left = win.sort(at)
    # (both sorted on their time just above)
    before = left.join_asof(keyed, left_on=at, right_on="ts", by=["host", "pid"],
                            strategy="backward", check_sortedness=False).select(
        "host", "pid", t0b="ts", c0b="cpu")
    after = left.join_asof(keyed, left_on=at, right_on="ts", by=["host", "pid"],
                           strategy="forward", check_sortedness=False).select(
        "host", "pid", t0a="ts", c0a="cpu")
    span = (pl.col("t0a") - pl.col("t0b")).cast(pl.Float64)
    share = pl.when(span > 0).then((pl.col(at) - pl.col("t0b")).cast(pl.Float64) / span)
    return (left.join(before, on=["host", "pid"]).join(after, on=["host", "pid"])
            .select("host", "pid", (pl.col("c0b") + (pl.col("c0a") - pl.col("c0b"))
                                    * share.otherwise(0.0)).alias(f"cpu_{at}")))


def outside_cpu(tasks: pl.DataFrame, samples: pl.DataFrame) -> pl.DataFrame:
    """Per worker process (host, pid) that ran tasks: the CPU its process spent during its
    tasks' window (``process_cpu_s``: its CPU samples interpolated at the first task start
    and the last task end, on the worker's own clock), its tasks' CPU (``task_cpu_s``), the
    rest (``outside_cpu_s``) and the window (``window_s``). Processes whose samples do not
    span the window, or with an execution whose CPU was not measured, are left out (not
    measured)."""
    measured = samples.filter(pl.col("process_cpu_s").is_not_null())
    win = (tasks.select("host", "pid", "local_start_ns", "local_stop_ns", "cpu_s")
           .filter(pl.col("local_start_ns").is_not_null() & pl.col("local_stop_ns").is_not_null())
           .group_by("host", "pid")
           .agg(t0=pl.col("local_start_ns").min(), t1=pl.col("local_stop_ns").max(),
                task_cpu_s=pl.col("cpu_s").sum(), unmeasured=pl.col("cpu_s").null_count())
           .filter(pl.col("unmeasured") == 0).drop("unmeasured"))
    used = pl.col("cpu_t1") - pl.col("cpu_t0")
    return (win.join(_cpu_at(win, measured, "t0"), on=["host", "pid"])
            .join(_cpu_at(win, measured, "t1"), on=["host", "pid"])
            .drop_nulls(["cpu_t0", "cpu_t1"])
            .select("host", "pid", process_cpu_s=used, task_cpu_s="task_cpu_s",
                    outside_cpu_s=(used - pl.col("task_cpu_s")).clip(0.0),
                    window_s=(pl.col("t1") - pl.col("t0")) * 1e-9)
            .sort("host", "pid"))


def cpu_outside_tasks(ctx: Context) -> list[dict[str, Any]]:
    """Worker processes whose CPU outside their task executions (the event loop, comms,
    threads the tasks started) was at least ``OUTSIDE_SHARE`` of their CPU during the tasks'
    window, while their computing executions spent time outside CPU and I/O: in a process,
    that CPU holds the GIL against the tasks. Each such execution is taken to have lost the
    lesser of its time outside CPU and I/O and the outside CPU in its window (spread evenly
    over the process's window); a process's executions together lost at most its outside CPU
    (the GIL is one: shares above that are scaled down).
    Silent without CPU samples of the processes or CPU per execution; without I/O captured the
    time outside CPU may be untraced I/O, and ``partial`` says so."""
    samples = ctx.evidence.process_cpu
    if samples is None or samples.is_empty() or "local_start_ns" not in ctx.tasks.columns:
        return []
    procs = outside_cpu(ctx.tasks, samples).filter(
        (pl.col("outside_cpu_s") >= OUTSIDE_SHARE * pl.col("process_cpu_s"))
        & (pl.col("outside_cpu_s") > 0) & (pl.col("window_s") > 0))
    if procs.is_empty():
        return []
    io = pl.col("io_time_s").fill_null(0.0) if ctx.evidence.io_captured else pl.lit(0.0)
    other = pl.col("duration_s") - pl.col("cpu_s") - io
    rate = pl.col("outside_cpu_s") / pl.col("window_s")
    computed = ((pl.col("cpu_s") >= OUTSIDE_MIN_CPU * pl.col("duration_s"))
                | (pl.col("cpu_s") >= OUTSIDE_MIN_CPU_S))
    slowed = (ctx.tasks.filter(pl.col("cpu_s").is_not_null() & pl.col("awaiting_s").is_null()
                               & computed)
              .join(procs, on=["host", "pid"])
              .with_columns(other_s=other.clip(0.0))
              .with_columns(excess_s=pl.min_horizontal("other_s", rate * pl.col("duration_s")))
              .filter(pl.col("excess_s") > 0))
    scale = (pl.col("outside_cpu_s") / pl.col("excess_s").sum().over("host", "pid")).clip(
        upper_bound=1.0)
    slowed = slowed.with_columns(excess_s=pl.col("excess_s") * scale)
    if slowed.is_empty():
        return []
    procs = procs.join(slowed.select("host", "pid").unique(), on=["host", "pid"], how="semi")
    worst = procs.sort("outside_cpu_s", descending=True).row(0, named=True)
    worker = str(ctx.tasks.filter((pl.col("host") == worst["host"])
                                  & (pl.col("pid") == worst["pid"]))
                 .get_column("worker").drop_nulls().first() or worst["host"])
    prefixes = (slowed.group_by("prefix").agg(pl.col("excess_s").sum())
                .sort("excess_s", "prefix", descending=[True, False])
                .get_column("prefix").drop_nulls().to_list())
    keys = slowed.sort("excess_s", "execution_id", descending=[True, False]).get_column("key")
    lost = number(slowed.get_column("excess_s").sum()) or 0.0
    partial = None if ctx.evidence.io_captured else (
        "no I/O captured: the executions' time outside CPU may be I/O, not the GIL")
    return [finding(
        "cpu-outside-tasks", span_saved(ctx, slowed.select("execution_id", "excess_s")),
        prefixes[:SHOWN], keys.to_list(), [],
        f"{procs.height} worker process(es) spent most of their CPU outside their tasks "
        f"during the tasks' window (most: {worker}, "
        f"{worst['outside_cpu_s']:.3f} s outside, {worst['task_cpu_s']:.3f} s in tasks, over "
        f"{worst['window_s']:.3f} s); {slowed.height} of their computing executions spent "
        f"{number(slowed.get_column('other_s').sum()) or 0.0:.3f} s outside CPU and I/O, up to "
        f"{lost:.3f} s of it the outside CPU's (the GIL)",
        "find what the worker's other threads compute (the event loop: large graphs or "
        "results, comms; threads the tasks started): run it elsewhere, or profile the "
        "worker (collect --profile) to see its functions",
        partial)]
