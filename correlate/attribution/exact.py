"""Attribution: every DXT segment to at most one task execution (or a share of several, in the
fallback), and the unattributed remainder with its reason.

Inputs are canonical frames after ``align``: segments carry ``host_start_ns``/``host_stop_ns``
(Darshan times corrected onto the process's ``time.time()`` clock), executions carry
``execution_id`` and ``local_start_ns``/``local_stop_ns`` on the same host clock.

Each segment has shares (execution, weight): an exact-thread segment one, of weight 1, kept as
its ``execution_id`` column; a window-split segment one per overlapping execution, in ``split``
(``IOAttribution.shares`` lists both kinds). The weights of one segment sum to at most 1 and
``1 − Σ weights`` is unattributed. Every output total is a sum over shares, so attributed +
unattributed == total holds by construction and is checked by the tests.

Methods, per segment:

- ``exact-thread`` when the segment has a pthread id and its process has executions with thread
  ids: the execution on the same (host, pid, thread_id) whose window contains the segment's
  midpoint (``join_asof`` backward on the start, then a stop check). Executions on one thread
  never overlap, so a segment gets at most one.
- ``window-split`` otherwise, when the process has executions: the segment is split across the
  executions of the process that overlap it, weight = overlap / duration (normalised when the
  overlaps add up to more than the segment, e.g. concurrent tasks); zero-length segments are
  split equally among the windows that contain them.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from correlate.attribution.p2p import METHOD_NAME as SHUFFLE_METHOD
from correlate.attribution.shares import (
    IO_SECONDS,
    METHOD,
    OP,
    WHOLE,
    IOAttribution,
    largest_shares,
    not_a_tasks_reason,
    window_split,
)
from correlate.frames import per_process
from correlate.frames.sorting import packed_key, sort_order
from correlate.schema.outputs import TASK_FILES

#: the order ``io_to_executions`` returns segments in: the ``segments`` output order (the run
#: timeline differs from ``host_start_ns`` by one shift per process)
SEGMENT_ORDER = ["host", "pid", "thread_id", "host_start_ns", "seg_id"]


def _methods(segments: pl.DataFrame, executions: pl.DataFrame) -> pl.Series:
    """Per segment (same order): the method its process allows; the process is looked up once
    per run of its rows."""
    has_threads = executions.group_by("host", "pid").agg(
        threads=pl.col("thread_id").is_not_null().any())
    per_run = per_process.runs(segments).join(has_threads, on=["host", "pid"], how="left",
                                              nulls_equal=True, maintain_order="left")
    threads = per_process.spread(per_run, ["threads"]).get_column("threads")
    return segments.select(pl.when(threads.is_null()).then(pl.lit("none", METHOD))
                           .when(threads & pl.col("thread_id").is_not_null())
                           .then(pl.lit("exact-thread", METHOD))
                           .otherwise(pl.lit("window-split", METHOD))).to_series()


def _exact(seg: pl.DataFrame, executions: pl.DataFrame) -> pl.Series:
    """Per exact-thread row of ``seg`` (in ``SEGMENT_ORDER``; others null): the execution on
    its thread whose window holds its midpoint (null when none)."""
    ex = executions.filter(pl.col("thread_id").is_not_null())
    by = ["host", "pid", "thread_id"]
    for k in ("host", "pid"):  # one process's segments (a partition): match on the thread alone
        col = seg.get_column(k)
        if len(col) and not col.null_count() and col.min() == col.max():
            ex = ex.filter(pl.col(k) == col[0])
            by.remove(k)
    ex = ex.select(*by, "execution_id", w_start="local_start_ns", w_stop="local_stop_ns"
                   ).sort(*by, "w_start")
    mids = seg.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), *by,
                      mid=(pl.col("host_start_ns") + pl.col("host_stop_ns")) // 2
                      ).filter(seg.get_column("attribution") == "exact-thread")
    # the asof join needs the midpoints sorted within each thread; rows come sorted by thread
    # and start, and on one thread the midpoints follow the starts unless calls overlap
    same_thread = pl.all_horizontal(pl.col(k).eq_missing(pl.col(k).shift(1)) for k in by)
    if not mids.select((pl.col("mid") >= pl.col("mid").shift(1)) | ~same_thread
                       ).to_series().fill_null(True).all():
        mids = mids.sort(*by, "mid")
    found = mids.join_asof(ex, left_on="mid", right_on="w_start", by=by, strategy="backward",
                           check_sortedness=False)
    eid = found.select(pl.when(pl.col("mid") <= pl.col("w_stop"))
                       .then(pl.col("execution_id"))).to_series()
    return pl.Series("execution_id", [None], pl.Int64).new_from_index(0, seg.height).scatter(
        found.get_column("row"), eid)


def _segment_order(segments: pl.DataFrame) -> pl.Series | None:
    """``sort_order`` of ``segments`` by ``SEGMENT_ORDER``. Rows of several processes that come
    one process after another in (host, pid) order (a partition's) are sorted by their
    process's position instead of its host and pid: the same order, by integers alone (a sort
    with a string key compares row by row)."""
    runs = per_process.runs(segments)
    if runs.height < 2 or not per_process.in_process_order(runs):
        return sort_order(segments, SEGMENT_ORDER)
    position = per_process.spread(runs.with_row_index("process"), ["process"])
    return sort_order(segments.select(SEGMENT_ORDER[2:]).with_columns(position),
                      ["process", *SEGMENT_ORDER[2:]])


def io_to_executions(segments: pl.DataFrame, executions: pl.DataFrame) -> IOAttribution:
    """Attribute aligned segments (with ``seg_id``) to executions (with ``execution_id``).
    The segments are sorted once, in ``SEGMENT_ORDER``; exact-thread segments (almost all, at
    scale) get their execution from an asof join of the key columns alone; only window-split
    segments are joined to windows and their shares summed per segment."""
    rows = _segment_order(segments)
    seg = segments if rows is None else segments[rows]
    seg = seg.with_columns(attribution=_methods(seg, executions))
    seg = seg.with_columns(execution_id=_exact(seg, executions))
    seg = seg.with_columns(attributed_weight=pl.col("execution_id").is_not_null()
                           .cast(pl.Float64))
    split = window_split(seg, seg.get_column("attribution") == "window-split", executions)
    if split.height:
        at, weight, best = largest_shares(split, seg.height)
        seg = seg.with_columns(seg.get_column("execution_id").scatter(at, best),
                               seg.get_column("attributed_weight").scatter(at, weight))
    return IOAttribution(segments=seg, split=split)


LENGTH = pl.col("length")


def _weighted(weight: pl.Expr, io_seconds: pl.Expr = IO_SECONDS,
              length: pl.Expr = LENGTH) -> list[pl.Expr]:
    """A share's bytes, ops and I/O time, as columns summed by ``MEASURE_SUMS`` (plain column
    sums take polars' grouped-sum kernel, where an expression inside ``agg`` is evaluated group
    by group; the sums are the same)."""
    return [(length.cast(pl.Float64) * weight).alias("bytes"), weight.alias("ops"),
            (io_seconds * weight).alias("io_time_s")]


MEASURE_SUMS = [pl.col(c).sum() for c in ("bytes", "ops", "io_time_s")]


def _index(categories: pl.Expr) -> pl.Expr:
    return categories.to_physical().cast(pl.UInt64)


def task_files(att: IOAttribution) -> pl.DataFrame:
    """I/O per execution × path × op × method (the ``task_files`` table without its ``key``,
    which is joined once, when the table is written, instead of being held from the partitions
    through every later stage: one key string per row of the largest table): a segment given whole
    counts whole for its execution, a shared one by the weight of each share."""
    # summed in integer ns: exact, whatever order the rows are summed in
    dur_s = (pl.col("host_stop_ns") - pl.col("host_start_ns")).sum().cast(pl.Float64) / 1e9
    whole = (att.segments.lazy()  # lazy: only the columns used are filtered
             .filter(pl.col("attribution").is_in(WHOLE) & pl.col("execution_id").is_not_null())
             .group_by("execution_id", "path", "op", "attribution").agg(
                 bytes=pl.col("length").sum().cast(pl.Float64), ops=pl.len().cast(pl.Float64),
                 io_time_s=dur_s)
             .select("execution_id", "path", "op", "bytes", "ops", "io_time_s", "attribution")
             .collect())
    if att.split.is_empty():
        return whole if whole.height else TASK_FILES.empty().drop("key")
    # what a share needs of its segment, computed per segment: its file, op and method as one
    # integer (no string per share), its length and seconds; gathered per share inside one
    # select, so that only the summed columns are materialised
    per_segment = att.segments.select(
        "length", io_s=IO_SECONDS,
        what=(_index(pl.col("path").cast(pl.Categorical)) * len(OP.categories)
              + _index(pl.col("op").cast(OP))) * len(METHOD.categories)
        + _index(pl.col("attribution").cast(METHOD)))

    def of_segment(name: str) -> pl.Expr:
        return pl.lit(per_segment.get_column(name)).gather(pl.col("row"))

    shares = att.split.select("row", "execution_id", of_segment("what").alias("what"),
                              *_weighted(pl.col("weight"), of_segment("io_s"),
                                         of_segment("length")))
    # grouped by (execution, what) packed into one integer where it fits: a group-by on two
    # keys encodes every row's keys first, in more memory and time; the same groups, summed in
    # the same row order
    packed = packed_key(shares, ["execution_id", "what"])
    group = pl.struct("execution_id", "what") if packed is None else pl.lit(packed)
    shared = shares.group_by(group.alias("group")).agg(pl.col("row", "execution_id").first(),
                                                       *MEASURE_SUMS)
    at = shared.get_column("row")
    shared = shared.select("execution_id", path=att.segments.get_column("path").gather(at),
                           op=att.segments.get_column("op").gather(at), bytes="bytes", ops="ops",
                           io_time_s="io_time_s",
                           attribution=att.segments.get_column("attribution").gather(at))
    return pl.concat([whole, shared], how="vertical_relaxed")


def task_io_totals(files: pl.DataFrame) -> pl.DataFrame:
    """Per execution: read/write bytes and ops, I/O time, summed over ``files`` (task_files
    rows) one row after another in their order: given them in output order, the same float
    sums in every run and mode (window-split bytes are fractional), whichever processes the
    frame holds (polars' grouped float sums take another kernel, another order of additions,
    as a frame grows). An execution's own I/O only: P2P shard writes the worker made for a
    shuffle (``p2p-shuffle``) are accounted at its barrier in ``task_files`` and are the
    shuffle's (``summary.json`` ``shuffles``), not the barrier's reads and writes."""
    # (a total of no execution's is no one's)
    files = files.drop_nulls("execution_id").filter(  # (a null method is kept: not a shard)
        pl.col("attribution").cast(pl.String).ne_missing(SHUFFLE_METHOD))
    if files.is_empty():
        return pl.DataFrame(schema={"execution_id": pl.Int64, **dict.fromkeys(
            ["read_bytes", "write_bytes", "read_ops", "write_ops", "io_time_s"], pl.Float64),
            "io_method": pl.String})
    ids, group = np.unique(files.get_column("execution_id").to_numpy(), return_inverse=True)
    op = files.get_column("op").cast(pl.String)

    def summed(col: str, rows: pl.Series | None = None) -> pl.Series:
        column = files.get_column(col)
        values, unknown = column.fill_null(0.0).to_numpy(), column.is_null().to_numpy()
        if rows is not None:  # (adding 0.0 leaves a sum as it was)
            chosen = rows.fill_null(False).to_numpy()
            values, unknown = np.where(chosen, values, 0.0), unknown & chosen
        # bincount adds each group's values in row order
        sums = pl.Series(np.bincount(group, weights=values, minlength=len(ids)),
                         dtype=pl.Float64)
        if not unknown.any():
            return sums
        # a part not measured leaves the execution's total unknown, not smaller
        return sums.scatter(np.flatnonzero(np.bincount(group, weights=unknown,
                                                       minlength=len(ids))), None)

    read, write = op == "read", op == "write"
    # the least exact method that gave it I/O (the Enum lists them most exact first)
    method = files.get_column("attribution").cast(METHOD).to_physical().cast(pl.Int64)
    least = np.full(len(ids), -1, dtype=np.int64)
    np.maximum.at(least, group, method.fill_null(-1).to_numpy())
    names = pl.Series(METHOD.categories, dtype=pl.String)
    return pl.DataFrame({
        "execution_id": pl.Series(ids, dtype=pl.Int64),
        "read_bytes": summed("bytes", read), "write_bytes": summed("bytes", write),
        "read_ops": summed("ops", read), "write_ops": summed("ops", write),
        "io_time_s": summed("io_time_s"),
        "io_method": names.gather(pl.Series(np.maximum(least, 0))).set(pl.Series(least < 0),
                                                                        None)})


def unattributed_io(att: IOAttribution, executions: pl.DataFrame, processes: pl.DataFrame,
                    marker_paths: list[str]) -> pl.DataFrame:
    """The remainder ``1 − attributed_weight`` of every segment, grouped by why."""
    rem = att.segments.with_columns(weight=1.0 - pl.col("attributed_weight")).filter(
        pl.col("weight") > 1e-12)
    procs = processes.select("host", "pid", pl.col("role").cast(pl.String), "main_thread_id",
                             "local_directory").unique(["host", "pid"])
    executors = (executions.filter(pl.col("thread_id").is_not_null())
                 .select("host", "pid", "thread_id").unique().with_columns(is_executor=True))
    rem = (rem.join(procs, on=["host", "pid"], how="left", nulls_equal=True)
           .join(executors, on=["host", "pid", "thread_id"], how="left", nulls_equal=True))
    kind = (pl.when(pl.col("thread_id").is_null()).then(pl.lit("no-thread-id"))
            .when(pl.col("thread_id") == pl.col("main_thread_id")).then(pl.lit("event-loop"))
            .when(pl.col("is_executor").fill_null(False))
            .then(pl.lit("executor-outside-task"))
            .otherwise(pl.lit("other-thread")))
    reason = (pl.when(pl.col("path").is_in(marker_paths)).then(pl.lit("collector clock marker"))
              .otherwise(not_a_tasks_reason(
                  pl.when(pl.col("attribution") == "none")
                  .then(pl.lit("worker without task windows"))
                  .otherwise(pl.lit("outside any task execution")))))
    rem = rem.with_columns(*_weighted(pl.col("weight")), thread_kind=kind, reason=reason,
                           role=pl.col("role").fill_null("unknown"))
    return (rem.group_by("host", "pid", "role", "thread_kind", "reason", "path", "op")
            .agg(MEASURE_SUMS))


