"""The findings' rules over time: serial sections, stragglers, thread contention and idle
threads (docs/findings.md)."""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.findings.context import (
    MIN_COST_S,
    MIN_COST_SHARE,
    SHOWN,
    Context,
    finding,
    span_saved,
)
from correlate.frames.rows import kept
from correlate.frames.scalars import integer, number

# --- serial-section ----------------------------------------------------------------------

def running_counts(tasks: pl.DataFrame) -> pl.DataFrame:
    """The task window cut at every start and stop: each piece (``t0``, ``t1``) with how many
    executions ran in it (``running``)."""
    ev = pl.concat([tasks.select(t="start_ns", d=pl.lit(1, pl.Int32)),
                    tasks.select(t="stop_ns", d=pl.lit(-1, pl.Int32))]).sort("t")
    # (events at one instant are not summed first: the pieces between them have no length)
    return ev.select(t0="t", t1=pl.col("t").shift(-1),
                     running=pl.col("d").cum_sum()).filter(pl.col("t1") > pl.col("t0"))


def serial_section(ctx: Context) -> list[dict[str, Any]]:
    """Parts of the window where a single execution ran while the cluster had more threads,
    that execution a link of the critical path released by its dependency: the graph made that
    part serial. (A link released by its thread, or a first link, that runs alone is the tail
    of parallel work, an imbalance, not a serial section.) Cost: the time the prefix ran
    alone (had that work run beside the rest, the window would have been shorter by at most
    that)."""
    threads = ctx.threads
    serial = ctx.path.filter(pl.col("gate") == "dependency").select(
        "execution_id")
    if threads < 2 or serial.is_empty():
        return []
    alone = running_counts(ctx.tasks).filter(pl.col("running") == 1)
    if alone.is_empty():
        return []
    # which execution ran in each lone piece: the one whose window holds the piece
    ex = ctx.tasks.select("execution_id", "key", "prefix", "start_ns", "stop_ns").join(
        serial, on="execution_id", how="semi").sort("start_ns")
    pieces = alone.sort("t0").join_asof(ex, left_on="t0", right_on="start_ns",
                                        strategy="backward")
    pieces = pieces.filter(pl.col("stop_ns") >= pl.col("t1"))
    per = (pieces.group_by("prefix").agg(
        alone_s=((pl.col("t1") - pl.col("t0")).sum() * 1e-9),
        keys=pl.col("key").unique(maintain_order=True),
        executions=pl.col("execution_id").n_unique())
        .sort("alone_s", "prefix", descending=[True, False]))
    out = []
    for r in per.iter_rows(named=True):
        cost = r["alone_s"]
        out.append(finding(
            "serial-section", cost, [r["prefix"]], r["keys"], [],
            f"{r['prefix']} ran alone for {cost:.3f} s of the {ctx.window_s:.3f} s task window "
            f"({cost / ctx.window_s:.0%}; {r['executions']} execution(s)), while {threads - 1} "
            "other thread(s) of the cluster were idle",
            "split this work into parallel tasks, or start independent work earlier so that it "
            "overlaps (submit it before the chain, or raise its priority)"))
    return out


# --- straggler ---------------------------------------------------------------------------

#: an execution is a straggler when it takes more than STRAGGLER_FACTOR × its prefix's median
#: and more than the median + STRAGGLER_MADS median absolute deviations
STRAGGLER_FACTOR = 2.0
STRAGGLER_MADS = 5.0
STRAGGLER_MIN_RUNS = 5


def straggler(ctx: Context) -> list[dict[str, Any]]:
    """Executions far beyond their prefix's spread; the cost is what the window would have
    saved had each taken its prefix's median (``span_saved``)."""
    # (only the columns the finding reads: gathering all of a million rows' columns in the
    # join costs several times the rule)
    t = ctx.tasks.select("execution_id", "key", "prefix", "worker", "duration_s", "cpu_s",
                         "io_time_s", *(["input_read_back_s"] if "input_read_back_s"
                                        in ctx.tasks.columns else []))
    mad = (pl.col("duration_s") - pl.col("duration_s").median()).abs().median()
    stats = (t.select("prefix", "duration_s").group_by("prefix")
             .agg(runs=pl.len(), median=pl.col("duration_s").median(), mad=mad)
             .filter(pl.col("runs") >= STRAGGLER_MIN_RUNS))
    far = ((pl.col("duration_s") > STRAGGLER_FACTOR * pl.col("median"))
           & (pl.col("duration_s") > pl.col("median") + STRAGGLER_MADS * pl.col("mad")))
    # (which rows first, from their prefix and duration: a join of every row copies them all)
    keep = (t.select("prefix", "duration_s").join(stats, on="prefix", how="left",
                                                  maintain_order="left")
            .select(far.fill_null(False)).to_series())
    slow = (t.filter(keep).join(stats, on="prefix")
            .join(ctx.path.select("execution_id", on_path=pl.lit(True)), on="execution_id",
                  how="left")
            .with_columns(excess_s=pl.col("duration_s") - pl.col("median"),
                          on_path=pl.col("on_path").fill_null(False)))
    out = []
    for prefix, rows in sorted(slow.partition_by("prefix", as_dict=True).items(),
                               key=lambda kv: str(kv[0][0])):
        rows = rows.sort("on_path", "excess_s", descending=True)
        first = rows.row(0, named=True)
        why = _why(first)
        out.append(finding(
            "straggler", span_saved(ctx, rows.select("execution_id", "excess_s")),
            [str(prefix[0])],
            rows.get_column("key").to_list(), [],
            f"{rows.height} of {first['runs']} {prefix[0]} executions took over "
            f"{STRAGGLER_FACTOR:g}× the median {first['median']:.3f} s; the slowest, "
            f"{first['key']}, {first['duration_s']:.3f} s on {first['worker']} ({why})"
            + ("" if first["on_path"] else "; off the critical path"),
            "look at what this execution does differently (its input, its worker, its I/O): "
            "split skewed partitions, or give the task's work a size like its siblings'"))
    return out


def _why(r: dict[str, Any]) -> str:
    """Where a straggler's time went: CPU, I/O, the rest, inputs read back."""
    cpu, io = r.get("cpu_s"), r.get("io_time_s")
    parts = [f"{name} " + ("not captured" if v is None else f"{v:.3f} s")
             for name, v in (("CPU", cpu), ("I/O", io))]
    if cpu is not None and io is not None:
        parts.append(f"other {r['duration_s'] - cpu - io:.3f} s")
    if r.get("input_read_back_s"):
        parts.append(f"inputs read back from spill {r['input_read_back_s']:.3f} s")
    return ", ".join(parts)


# --- thread-contention -------------------------------------------------------------------

#: an execution waited on its peers when the time outside its CPU and I/O is at least this
#: share of its wall time, while it computed for at least CONTENTION_MIN_CPU of it (a sleep or
#: a wait for something outside the process computes nothing)
CONTENTION_OTHER = 0.3
CONTENTION_MIN_CPU = 0.05


def peer_cpu(tasks: pl.DataFrame) -> pl.DataFrame:
    """execution_id → ``peer_cpu_s``: CPU seconds the other executions of its process spent
    during its window, each spread evenly over its own window. One sweep per process over the
    starts and ends (no pairwise join): the running executions' summed CPU rate as a step
    function, its integral read at each execution's start and end (rows at one instant share
    the integral: no time passes between them). A process at a time: a sweep holds two rows
    per execution, a big run's whole would be gigabytes."""
    t = tasks.select("execution_id", "host", "pid", "start_ns", "stop_ns", "cpu_s",
                     "duration_s").filter(
        pl.col("cpu_s").is_not_null() & (pl.col("duration_s") > 0)).select(
        "execution_id", "start_ns", "stop_ns", "cpu_s",
        rate=pl.col("cpu_s") / pl.col("duration_s"),
        proc=pl.struct("host", "pid").hash(seed=0))  # (a hash groups faster than the strings)
    parts = [_peer_cpu_of(part) for part in t.partition_by("proc", include_key=False)]
    return (pl.concat(parts) if parts else
            pl.DataFrame(schema={"execution_id": pl.Int64, "peer_cpu_s": pl.Float64}))


def _peer_cpu_of(t: pl.DataFrame) -> pl.DataFrame:
    """``peer_cpu`` of one process's executions."""
    ev = pl.concat([t.select("execution_id", t="start_ns", d="rate", end=pl.lit(False)),
                    t.select("execution_id", t="stop_ns", d=-pl.col("rate"), end=pl.lit(True))]
                   ).sort("t")
    ev = ev.with_columns(r=pl.col("d").cum_sum())
    step = (pl.col("r").shift(1) * (pl.col("t") - pl.col("t").shift(1))).fill_null(0.0)
    ev = ev.with_columns(i=step.cum_sum() * 1e-9)
    at_start = ev.filter(~pl.col("end")).select("execution_id", i0="i").sort("execution_id")
    at_stop = ev.filter(pl.col("end")).select("execution_id", i1="i").sort("execution_id")
    return at_start.join(at_stop, on="execution_id").join(
        t.select("execution_id", "cpu_s"), on="execution_id").select(
        "execution_id", peer_cpu_s=(pl.col("i1") - pl.col("i0") - pl.col("cpu_s")).clip(0.0))


def thread_contention(ctx: Context) -> list[dict[str, Any]]:
    """Executions whose wall time is far above their CPU and I/O while other executor threads
    of their process computed (the GIL, or a lock): each is taken to have lost the lesser of
    its time outside CPU and I/O and its peers' CPU in its window. Silent without CPU or I/O
    (the time outside them could be untraced I/O)."""
    t = ctx.tasks.select("execution_id", "key", "prefix", "host", "pid", "duration_s", "cpu_s",
                         "io_time_s", "awaiting_s").filter(
        pl.col("cpu_s").is_not_null() & pl.col("io_time_s").is_not_null()
        & pl.col("awaiting_s").is_null())
    if t.is_empty() or not ctx.evidence.io_captured:
        return []
    other = pl.col("duration_s") - pl.col("cpu_s") - pl.col("io_time_s")
    t = t.filter((other >= CONTENTION_OTHER * pl.col("duration_s"))
                 & (pl.col("cpu_s") >= CONTENTION_MIN_CPU * pl.col("duration_s")))
    if t.is_empty():  # (the usual case: no sweep over every execution)
        return []
    proc = pl.struct("host", "pid").hash(seed=0)  # (faster to group and join than strings)
    # (the columns it reads first: a group-by of the whole tasks table copies all of it)
    per_process = (ctx.tasks.select("host", "pid", "thread_id").group_by(proc=proc)
                   .agg(threads=pl.col("thread_id").n_unique()))
    waited = (t.with_columns(proc=proc).join(peer_cpu(ctx.tasks), on="execution_id", how="left")
              .join(per_process, on="proc")
              .filter((pl.col("threads") > 1)
                      & (other >= CONTENTION_OTHER * pl.col("duration_s"))
                      & (pl.col("cpu_s") >= CONTENTION_MIN_CPU * pl.col("duration_s")))
              .with_columns(other_s=other,
                            excess_s=pl.min_horizontal(other, pl.col("peer_cpu_s")))
              .filter(pl.col("excess_s") > 0))
    out = []
    for (prefix,), rows in sorted(waited.partition_by("prefix", as_dict=True).items(),
                                  key=lambda kv: str(kv[0][0])):
        rows = rows.sort("excess_s", "execution_id", descending=[True, False])
        sums = rows.select(pl.col("duration_s", "cpu_s", "io_time_s", "other_s",
                                  "peer_cpu_s").sum()).row(0, named=True)
        out.append(finding(
            "thread-contention", span_saved(ctx, rows.select("execution_id", "excess_s")),
            [str(prefix)], rows.get_column("key").to_list(), [],
            f"{rows.height} {prefix} execution(s): {sums['duration_s']:.3f} s wall, "
            f"{sums['cpu_s']:.3f} s CPU, {sums['io_time_s']:.3f} s I/O, so "
            f"{sums['other_s']:.3f} s neither, while other executor threads of their process "
            f"(up to {integer(rows.get_column('threads').max())} per process) computed for "
            f"{sums['peer_cpu_s']:.3f} s: the GIL, or a lock",
            "run these tasks in processes with one thread each (dask worker --nworkers N "
            "--nthreads 1), or make their Python loops release the GIL (numpy, numba, "
            "Cython)"))
    return out


# --- idle-threads ------------------------------------------------------------------------

def movable_s(tasks: pl.DataFrame, threads: int) -> float:
    """Thread-seconds of waiting work that idle threads could have taken: one sweep over the
    window, at each instant the lesser of the executions waiting for a thread of their worker
    (``wait_thread_s`` before their start) and the threads running nothing."""
    ready = pl.col("start_ns") - (pl.col("wait_thread_s") * 1e9).round().cast(pl.Int64)
    waited = tasks.lazy().filter(pl.col("wait_thread_s") > 0).select(
        "start_ns", "wait_thread_s").collect()  # (not every column of a big run's tasks)
    one, none = pl.lit(1, pl.Int32), pl.lit(0, pl.Int32)
    ev = pl.concat([tasks.select(t="start_ns", run=one, wait=none),
                    tasks.select(t="stop_ns", run=-one, wait=none),
                    waited.select(t=ready, run=none, wait=one),
                    waited.select(t="start_ns", run=none, wait=-one)]).sort("t")
    pieces = ev.select(dt=pl.col("t").shift(-1) - pl.col("t"), running=pl.col("run").cum_sum(),
                       waiting=pl.col("wait").cum_sum()).filter(pl.col("dt") > 0)
    took = pl.min_horizontal("waiting", threads - pl.col("running")).clip(0) * pl.col("dt")
    return (number(pieces.select(took.sum()).item()) or 0.0) * 1e-9


def idle_threads(ctx: Context) -> list[dict[str, Any]]:
    """Executions that waited for a thread of their worker (every one of its threads busy:
    ``wait_thread_s`` leaves out the time one was free) while executor threads elsewhere ran
    nothing: an imbalance (tasks pinned to a worker, a worker given more than its share). The
    shorter window is at least the critical path less its links released by a thread (they
    waited for their thread's previous execution, not for their inputs), at least the busy
    time shared evenly by the threads, and at least the window less the movable work
    (``movable_s``) shared by the threads; the cost is the window less the largest."""
    if "wait_thread_s" not in ctx.tasks.columns:
        return []
    # (the columns read, not every column of a big run's tasks, and filtered only where
    # ``async def`` tasks ran on event loops: a filter copies each column, a gigabyte at 10M
    # executions for a rule that usually stops at its threshold)
    t = ctx.tasks.select("execution_id", "key", "prefix", "worker", "host", "pid", "thread_id",
                         "start_ns", "stop_ns", "duration_s", "wait_thread_s")
    if "awaiting_s" in ctx.tasks.columns:
        t = kept(t, ctx.tasks.get_column("awaiting_s").is_null())
    threads = t.select("host", "pid", "thread_id").unique().height
    busy_s = number(t.get_column("duration_s").sum()) or 0.0
    if threads < 2 or not (t.get_column("wait_thread_s") > 0).any():
        return []
    by_thread = number(ctx.path.filter(pl.col("gate") == "thread").select(
        (pl.col("duration_s") + pl.col("wait_s").fill_null(0.0)).sum()).item()) or 0.0
    shorter = max(ctx.window_s - by_thread, busy_s / threads)
    if ctx.window_s - shorter < max(MIN_COST_S, MIN_COST_SHARE * ctx.window_s):
        return []  # (the usual case: below the threshold whatever moved; no sweep)
    waited = t.filter(pl.col("wait_thread_s") > 0)
    movable = movable_s(t, threads)
    shorter = max(shorter, ctx.window_s - movable / threads)
    per_worker = (waited.group_by("worker").agg(wait_s=pl.col("wait_thread_s").sum(),
                                                runs=pl.len())
                  .sort("wait_s", "worker", descending=[True, False], nulls_last=True))
    top = per_worker.row(0, named=True)
    keys = waited.top_k(SHOWN, by=["wait_thread_s", -pl.col("execution_id")]).sort(
        "wait_thread_s", "execution_id", descending=[True, False])
    prefixes = (waited.group_by("prefix").agg(pl.col("wait_thread_s").sum())
                .sort("wait_thread_s", "prefix", descending=[True, False])
                .get_column("prefix").drop_nulls().to_list())
    waits = number(waited.get_column("wait_thread_s").sum()) or 0.0
    return [finding(
        "idle-threads", max(0.0, ctx.window_s - shorter), prefixes[:SHOWN],
        keys.get_column("key").to_list(), [],
        f"{waited.height} execution(s) waited {waits:.3f} s for a thread of their worker (most on {top['worker']}: {top['runs']} waiting "
        f"{top['wait_s']:.3f} s) while other threads ran nothing: {movable:.3f} "
        f"thread-seconds of that work could have run on idle threads ({threads} threads "
        f"ran tasks, busy {busy_s:.3f} s of {threads * ctx.window_s:.3f} s)",
        "spread the work: drop worker restrictions (workers=, resources) that pin it, make "
        "partitions of even size, or let Dask's work stealing move it (distributed.scheduler."
        "work-stealing)")]
