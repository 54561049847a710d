"""The findings' rules: each a pure function over the output tables and the critical path,
returning rows of the ``findings`` table (docs/findings.md says each rule's evidence, threshold,
cost and advice).

A finding's ``cost_s`` is what removing the problem would shorten the task window by, bounded
by what it contributes to the critical path: work off the path saves nothing that the path does
not wait for, so only the path's links (and, for a serial section, the window itself) count.
A finding whose cost is below ``MIN_COST_SHARE`` of the window (or ``MIN_COST_S``) is not
reported: a job without problems has none above that. A rule whose evidence is missing (no I/O
captured, no CPU measured) stays silent; one whose evidence is partial says so in ``partial``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from correlate.scalars import integer, number, rounded
from correlate.schema import TABLES, conform

#: findings below this share of the task window, or below MIN_COST_S, are not reported
MIN_COST_SHARE = 0.05
MIN_COST_S = 0.01
#: how many keys and files a finding names
SHOWN = 5


@dataclass(frozen=True)
class Evidence:
    """What the run captured, beyond the tables: whether its Darshan logs were read at all
    (``io_captured``) and whether they traced operations (``dxt``); ``segments``: the
    ``segments`` output table, read lazily (the byte ranges of each read), or None."""

    io_captured: bool
    dxt: bool
    segments: pl.LazyFrame | None = None


@dataclass(frozen=True)
class Context:
    tasks: pl.DataFrame  # timed executions only
    task_files: pl.DataFrame
    path: pl.DataFrame
    evidence: Evidence
    window_start_ns: int
    window_s: float
    #: threads that ran a task, and the seconds they were busy with tasks
    threads: int
    busy_s: float


def span_saved(ctx: Context, excess: pl.DataFrame) -> float:
    """What removing ``excess`` (execution_id → excess_s, the seconds the problem added to
    each execution) would shorten the window by. The shorter window is at least the critical
    path less the excess on its links, and at least the busy time left, shared evenly by the
    threads (the bound of a perfectly balanced schedule); the saving is the window less the
    larger of the two, so work off the path saves only what the threads' load lets it."""
    if excess.is_empty():
        return 0.0
    on_path = excess.join(ctx.path.select("execution_id"), on="execution_id", how="semi")
    path_x = number(on_path.get_column("excess_s").sum()) or 0.0
    all_x = number(excess.get_column("excess_s").sum()) or 0.0
    shorter = max(ctx.window_s - path_x, (ctx.busy_s - all_x) / max(ctx.threads, 1))
    return max(0.0, ctx.window_s - shorter)


def _finding(kind: str, cost_s: float | None, prefixes: list[str], keys: list[str],
             files: list[str], evidence: str, advice: str, partial: str | None = None
             ) -> dict[str, Any]:
    return {"kind": kind, "cost_s": cost_s, "prefixes": sorted(set(prefixes)),
            "keys": keys[:SHOWN], "files": files[:SHOWN], "evidence": evidence,
            "advice": advice, "partial": partial}


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
    serial = ctx.path.filter(pl.col("gate").cast(pl.String) == "dependency").select(
        "execution_id")
    if threads < 2 or serial.is_empty():
        return []
    alone = running_counts(ctx.tasks).filter(pl.col("running") == 1)
    if alone.is_empty():
        return []
    # which execution ran in each lone piece: the one whose window holds the piece
    ex = ctx.tasks.join(serial, on="execution_id", how="semi").select(
        "execution_id", "key", "prefix", "start_ns", "stop_ns").sort("start_ns")
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
        out.append(_finding(
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
    t = ctx.tasks
    stats = (t.group_by("prefix").agg(runs=pl.len(), median=pl.col("duration_s").median(),
                                      mad=(pl.col("duration_s") - pl.col("duration_s")
                                           .median()).abs().median())
             .filter(pl.col("runs") >= STRAGGLER_MIN_RUNS))
    slow = (t.join(stats, on="prefix")
            .filter((pl.col("duration_s") > STRAGGLER_FACTOR * pl.col("median"))
                    & (pl.col("duration_s") > pl.col("median") + STRAGGLER_MADS * pl.col("mad")))
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
        out.append(_finding(
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
    the integral: no time passes between them)."""
    t = tasks.filter(pl.col("cpu_s").is_not_null() & (pl.col("duration_s") > 0)).select(
        "execution_id", "start_ns", "stop_ns", "cpu_s",
        rate=pl.col("cpu_s") / pl.col("duration_s"),
        proc=pl.struct("host", "pid").hash(seed=0))  # (a hash sorts faster than the strings)
    ev = pl.concat([t.select("proc", "execution_id", t="start_ns", d="rate",
                             end=pl.lit(False)),
                    t.select("proc", "execution_id", t="stop_ns", d=-pl.col("rate"),
                             end=pl.lit(True))]).sort("proc", "t")
    ev = ev.with_columns(r=pl.col("d").cum_sum().over("proc"))
    step = pl.when(pl.col("proc") == pl.col("proc").shift(1)).then(
        pl.col("r").shift(1) * (pl.col("t") - pl.col("t").shift(1))).fill_null(0.0)
    ev = ev.with_columns(i=step.cum_sum().over("proc") * 1e-9)
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
    t = ctx.tasks.filter(pl.col("cpu_s").is_not_null() & pl.col("io_time_s").is_not_null()
                         & pl.col("awaiting_s").is_null())
    if t.is_empty() or not ctx.evidence.io_captured:
        return []
    other = pl.col("duration_s") - pl.col("cpu_s") - pl.col("io_time_s")
    t = t.filter((other >= CONTENTION_OTHER * pl.col("duration_s"))
                 & (pl.col("cpu_s") >= CONTENTION_MIN_CPU * pl.col("duration_s")))
    if t.is_empty():  # (the usual case: no sweep over every execution)
        return []
    proc = pl.struct("host", "pid").hash(seed=0)  # (faster to group and join than strings)
    per_process = ctx.tasks.group_by(proc=proc).agg(threads=pl.col("thread_id").n_unique())
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
        out.append(_finding(
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


# --- small-requests ----------------------------------------------------------------------

#: a file's requests are small when their mean size is below this
SMALL_REQUEST = 64 * 1024
#: requests at least this large give the run's large-request throughput
LARGE_REQUEST = 1 << 20
#: a file read or written in fewer requests is not a pattern
SMALL_MIN_OPS = 64


def small_requests(ctx: Context) -> list[dict[str, Any]]:
    """Files read or written in requests whose mean size is under ``SMALL_REQUEST``: the time
    inside those requests less what their bytes would take at the best throughput of the run's
    large requests (none in the run: all of it, said in ``partial``)."""
    f = ctx.task_files.filter(pl.col("io_time_s").is_not_null() & (pl.col("ops") > 0))
    if f.is_empty():
        return []
    f = f.with_columns(mean=pl.col("bytes") / pl.col("ops"),
                       attribution=pl.col("attribution").cast(pl.String))
    # the best throughput of a file's large requests: the host's, least disturbed by others
    large = f.filter((pl.col("mean") >= LARGE_REQUEST) & (pl.col("io_time_s") > 0)).group_by(
        "op").agg(rate=(pl.col("bytes") / pl.col("io_time_s")).max())
    small = (f.filter((pl.col("mean") < SMALL_REQUEST) & (pl.col("ops") >= SMALL_MIN_OPS))
             .join(large, on="op", how="left")
             .join(ctx.tasks.select("execution_id", "prefix"), on="execution_id"))
    if small.is_empty():
        return []
    small = small.with_columns(excess_s=(pl.col("io_time_s") - pl.when(pl.col("rate") > 0)
                                         .then(pl.col("bytes") / pl.col("rate"))
                                         .otherwise(0.0)).clip(0.0))
    out = []
    for (prefix,), rows in sorted(small.partition_by("prefix", as_dict=True).items(),
                                  key=lambda kv: str(kv[0][0])):
        per_ex = rows.group_by("execution_id").agg(pl.col("excess_s").sum())
        files = (rows.group_by("path").agg(pl.col("io_time_s").sum(), pl.col("bytes").sum(),
                                          pl.col("ops").sum())
                 .sort("io_time_s", "path", descending=[True, False]))
        top = files.row(0, named=True)
        prefix_io = number(ctx.tasks.filter(pl.col("prefix") == prefix)
                           .get_column("io_time_s").sum()) or 0.0
        n_ops = number(rows.get_column("ops").sum()) or 0.0
        n_bytes = number(rows.get_column("bytes").sum()) or 0.0
        partial = []
        if rows.get_column("rate").is_null().all():
            partial.append("no request of 1 MiB or more in the run to compare with: the cost "
                           "counts all the time inside these requests")
        if rows.get_column("attribution").str.starts_with("counter").any():
            partial.append("no DXT for some: mean sizes from Darshan's POSIX counters")
        out.append(_finding(
            "small-requests", span_saved(ctx, per_ex), [str(prefix)],
            rows.sort("io_time_s", descending=True).get_column("key").unique(
                maintain_order=True).to_list(), files.get_column("path").to_list(),
            f"{prefix} moved {_bytes(n_bytes)} in {n_ops:,.0f} requests of "
            f"{_bytes(n_bytes / n_ops)} on average (under {_bytes(SMALL_REQUEST)}), "
            f"{rows.get_column('io_time_s').sum():.3f} s inside them of the prefix's "
            f"{prefix_io:.3f} s of I/O; most in {top['path']} ({top['ops']:,.0f} requests)",
            "read and write in larger requests (a buffer of 1 MiB or more: open(..., "
            "buffering=...), a larger block or chunk size in the library)",
            "; ".join(partial) or None))
    return out


# --- repeated-reads ----------------------------------------------------------------------

#: a file counts when its reads moved at least this many bytes more than its distinct bytes
REPEATED_MIN_BYTES = 1 << 20


def distinct_read_bytes(segments: pl.LazyFrame, paths: list[str]) -> pl.DataFrame:
    """path → ``distinct_bytes``: the bytes of ``paths`` that DXT saw read, each byte once (the
    union of the reads' ranges)."""
    reads = (segments.filter((pl.col("op").cast(pl.String) == "read")
                             & pl.col("path").is_in(paths) & pl.col("offset").is_not_null())
             .select("path", "offset", end=pl.col("offset") + pl.col("length"))
             .sort("path", "offset").collect())
    if reads.is_empty():
        return pl.DataFrame(schema={"path": pl.String, "distinct_bytes": pl.Int64})
    # a range adds what it reaches beyond every earlier range of its file
    reads = reads.with_columns(reach=pl.col("end").cum_max().over("path"))
    return reads.with_columns(before=pl.col("reach").shift(1).over("path")).select(
        "path", new=(pl.col("end") - pl.max_horizontal("offset", pl.col("before")
                                                      .fill_null(pl.col("offset"))))
        .clip(0)).group_by("path").agg(distinct_bytes=pl.col("new").sum())


def repeated_reads(ctx: Context) -> list[dict[str, Any]]:
    """Files whose bytes were read more than once (by several executions, or by one several
    times): DXT's byte ranges give the distinct bytes; ``times`` = bytes read / distinct
    bytes. Each execution's reads of the file are taken to be ``1 − 1/times`` repeats, and
    that share of their time is the excess. Silent without DXT (counters have no ranges)."""
    if ctx.evidence.segments is None or not ctx.evidence.dxt:
        return []
    f = ctx.task_files.filter((pl.col("op").cast(pl.String) == "read")
                              & pl.col("io_time_s").is_not_null())
    per_path = f.group_by("path").agg(read=pl.col("bytes").sum())
    paths = per_path.filter(pl.col("read") >= REPEATED_MIN_BYTES).get_column("path")
    if paths.is_empty():
        return []
    distinct = distinct_read_bytes(ctx.evidence.segments, paths.to_list())
    repeated = (per_path.join(distinct, on="path")
                .with_columns(times=pl.col("read") / pl.col("distinct_bytes"))
                .filter((pl.col("read") - pl.col("distinct_bytes") >= REPEATED_MIN_BYTES)
                        & (pl.col("times") > 1.05)))
    out = []
    for r in repeated.sort("read", "path", descending=[True, False]).iter_rows(named=True):
        rows = f.filter(pl.col("path") == r["path"]).join(
            ctx.tasks.select("execution_id", "prefix"), on="execution_id")
        excess = rows.group_by("execution_id").agg(
            excess_s=pl.col("io_time_s").sum() * (1 - 1 / r["times"]))
        readers = rows.group_by("key", "prefix").agg(pl.col("bytes").sum()).sort(
            "bytes", "key", descending=[True, False])
        out.append(_finding(
            "repeated-reads", span_saved(ctx, excess),
            [p for p in readers.get_column("prefix").unique().sort().to_list() if p],
            readers.get_column("key").to_list(), [r["path"]],
            f"{r['path']}: {_bytes(r['read'])} read for {_bytes(r['distinct_bytes'])} of "
            f"distinct bytes ({r['times']:.1f} times) by {readers.height} execution(s), "
            f"{rows.get_column('io_time_s').sum():.3f} s inside the reads",
            "read the file once, in one task, and let the tasks that need it depend on that "
            "task's result (or persist it)"))
    return out


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GiB"


RULES: tuple[Callable[[Context], list[dict[str, Any]]], ...] = (
    serial_section, straggler, thread_contention, small_requests, repeated_reads)


def findings(tasks: pl.DataFrame, task_files: pl.DataFrame, path: pl.DataFrame,
             evidence: Evidence) -> pl.DataFrame:
    """The ``findings`` table: every rule's findings above the threshold, costliest first."""
    timed = tasks.filter(pl.col("start_ns").is_not_null() & pl.col("stop_ns").is_not_null())
    if timed.is_empty() or path.is_empty():
        return TABLES["findings"].empty()
    start = integer(timed.get_column("start_ns").min()) or 0
    window = ((integer(timed.get_column("stop_ns").max()) or 0) - start) * 1e-9
    threads = timed.select("host", "pid", "thread_id").unique().height
    busy = number(timed.get_column("duration_s").sum()) or 0.0
    ctx = Context(timed, task_files, path, evidence, start, window, threads, busy)
    floor = max(MIN_COST_S, MIN_COST_SHARE * window)
    rows = [f for rule in RULES for f in rule(ctx)
            if f["cost_s"] is not None and f["cost_s"] >= floor]
    rows.sort(key=lambda f: (-f["cost_s"], f["kind"], f["prefixes"]))
    if not rows:
        return TABLES["findings"].empty()
    df = pl.DataFrame(rows).with_row_index("rank", offset=1)
    return conform(df, TABLES["findings"], path="findings")


def as_json(found: pl.DataFrame) -> list[dict[str, Any]]:
    """``summary.json`` ``findings``: the table's rows, costliest first."""
    return [{**r, "cost_s": rounded(r["cost_s"])} for r in found.iter_rows(named=True)]
