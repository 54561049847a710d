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

from dataclasses import dataclass

import numpy as np
import polars as pl

from correlate import local_dir, per_process
from correlate.schema.outputs import SEGMENTS, TASK_FILES
from correlate.sorting import packed_key, sort_order

#: the order ``io_to_executions`` returns segments in: the ``segments`` output order (the run
#: timeline differs from ``host_start_ns`` by one shift per process)
SEGMENT_ORDER = ["host", "pid", "thread_id", "host_start_ns", "seg_id"]
METHOD = SEGMENTS.column("attribution").polars_dtype()
OP = SEGMENTS.column("op").polars_dtype()
#: methods that give a segment whole to one execution (its ``execution_id``); the others give
#: it in shares (``IOAttribution.split``)
WHOLE = ("exact-thread", "inferred-thread", "helper-context", "p2p-shuffle")


@dataclass(frozen=True)
class IOAttribution:
    #: the input segments in ``SEGMENT_ORDER`` with an ``attribution`` column (the method their
    #: process allows: exact-thread / window-split / none), ``attributed_weight`` and
    #: ``execution_id`` (the execution holding the largest share; null when none)
    segments: pl.DataFrame
    #: row (in ``segments``), seg_id, execution_id, weight of the shares of segments given in
    #: shares (window-split, helper-file, helper-split: their ``attribution`` says which)
    split: pl.DataFrame

    @property
    def shares(self) -> pl.DataFrame:
        """seg_id, execution_id, weight, attribution: every share (a segment given whole has
        one, of weight 1)."""
        whole = self.segments.filter(pl.col("attribution").is_in(WHOLE)
                                     & pl.col("execution_id").is_not_null())
        method = self.segments.get_column("attribution").gather(self.split.get_column("row"))
        return pl.concat([
            whole.select("seg_id", "execution_id", weight=pl.lit(1.0), attribution="attribution"),
            self.split.select("seg_id", "execution_id", "weight").with_columns(method),
        ]).with_columns(pl.col("attribution").cast(pl.String))


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


def _thread_pairs(a: np.ndarray, b: np.ndarray, starts: np.ndarray, stops: np.ndarray,
                  threads: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(segment, execution) positions of every pair with ``a <= stop`` and ``b >= start``,
    where the executions of each thread (``threads``: their [begin, end) positions) are sorted
    and never overlap: the ones a segment meets on a thread are then a run, from the first
    stop at or after ``a`` to the last start at or before ``b`` (two binary searches per
    segment and thread, no comparison of every pair)."""
    seg_pos, ex_pos = [], []
    for begin, end in threads:
        first = begin + np.searchsorted(stops[begin:end], a, "left")
        count = begin + np.searchsorted(starts[begin:end], b, "right") - first
        met = np.flatnonzero(count > 0)
        n = count[met]
        seg_pos.append(np.repeat(met, n))
        ex_pos.append(np.repeat(first[met] - np.cumsum(n) + n, n) + np.arange(n.sum()))
    return (np.concatenate(seg_pos or [np.zeros(0, np.int64)]),
            np.concatenate(ex_pos or [np.zeros(0, np.int64)]))


def _overlapping(seg: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """row, execution_id, w_start, w_stop: every (segment, execution) pair of one process
    whose intervals overlap (``seg``: row, host_start_ns, host_stop_ns). Threads whose tasks
    never overlap (executor threads) are searched (``_thread_pairs``); the other executions
    (no thread id, or overlapping on a thread) go through polars' interval join. (One
    ``join_where`` with the host and pid equalities compares every segment with every
    execution: memory grows with their product.)"""
    ex = (executions.select("execution_id", "thread_id", w_start="local_start_ns",
                            w_stop="local_stop_ns")
          .sort("thread_id", "w_start", "execution_id", nulls_last=True))
    same_thread = pl.col("thread_id") == pl.col("thread_id").shift(1)
    crowded = ex.filter(same_thread & (pl.col("w_start") < pl.col("w_stop").shift(1)))
    apart = pl.col("thread_id").is_not_null() & ~pl.col("thread_id").is_in(
        crowded.get_column("thread_id").unique().implode())
    searched, joined = ex.filter(apart), ex.filter(~apart)
    ends = (searched.select(pl.col("thread_id").rle().struct.field("len").cum_sum())
            .to_series().to_list())
    seg_pos, ex_pos = _thread_pairs(
        seg.get_column("host_start_ns").to_numpy(), seg.get_column("host_stop_ns").to_numpy(),
        searched.get_column("w_start").to_numpy(), searched.get_column("w_stop").to_numpy(),
        list(zip([0, *ends], ends, strict=False)))
    pairs = seg.select("row").to_series().gather(seg_pos).to_frame().with_columns(
        searched.select("execution_id", "w_start", "w_stop")[ex_pos])
    if joined.is_empty():  # (an interval join with nothing on one side is not free)
        return pairs
    return pl.concat([pairs, seg.select("row", "host_start_ns", "host_stop_ns").join_where(
        joined.select("execution_id", "w_start", "w_stop"),
        pl.col("host_start_ns") <= pl.col("w_stop"),
        pl.col("host_stop_ns") >= pl.col("w_start")).drop("host_start_ns", "host_stop_ns")])


def overlapping_pairs(rows: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """row, execution_id, w_start, w_stop of every (row, execution of the row's own process)
    whose intervals overlap (``rows``: row, host, pid, host_start_ns, host_stop_ns); rows of
    an unknown process meet none."""
    own = executions.partition_by("host", "pid", as_dict=True)
    found = [_overlapping(part, own[process])
             for process, part in rows.partition_by("host", "pid", as_dict=True).items()
             if None not in process and process in own]
    if not found:
        return pl.DataFrame(schema={"row": pl.UInt32, "execution_id": pl.Int64,
                                    "w_start": pl.Int64, "w_stop": pl.Int64})
    return pl.concat(found)


def _window_split(seg: pl.DataFrame, window: pl.Series, executions: pl.DataFrame
                  ) -> pl.DataFrame:
    """row (of ``seg``), seg_id, execution_id, weight: the shares of the ``window`` rows."""
    rows = seg.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), "host", "pid",
                      "host_start_ns", "host_stop_ns").filter(window)
    pairs = overlapping_pairs(rows, executions)
    if pairs.is_empty():
        return pl.DataFrame([pl.Series("row", [], pl.UInt32), seg.get_column("seg_id").clear(),
                             executions.get_column("execution_id").clear(),
                             pl.Series("weight", [], pl.Float64)])
    row = pairs.get_column("row").to_numpy()
    # computed in place, a few arrays of one value per pair alive at once (millions of pairs
    # per process of a threadless run; every temporary is a fresh mapping)
    a = seg.get_column("host_start_ns").to_numpy()[row]
    b = seg.get_column("host_stop_ns").to_numpy()[row]
    dur = (b - a).astype(np.float64)
    np.minimum(b, pairs.get_column("w_stop").to_numpy(), out=b)
    np.maximum(a, pairs.get_column("w_start").to_numpy(), out=a)
    weight = np.subtract(b, a, out=b).astype(np.float64)  # the overlap
    del a, b
    zero = dur == 0
    np.divide(weight, dur, out=weight, where=~zero)
    weight[zero] = 1.0  # a zero-length call: a share of 1 in every window holding it...
    del dur, zero
    keep = weight > 0
    execution_id = pairs.get_column("execution_id")
    if not keep.all():
        row, weight, execution_id = row[keep], weight[keep], execution_id.filter(keep)
    # ...and the shares of a call that add up to more than 1 (concurrent windows) scaled to 1
    # (the zero-length call's to 1 / its windows)
    # (float even when no pair is left: bincount of nothing is an integer array)
    total = np.bincount(row, weights=weight, minlength=seg.height).astype(np.float64, copy=False)
    weight /= np.maximum(total, 1.0, out=total)[row]
    return pl.DataFrame({"row": pl.Series(row, dtype=pl.UInt32),
                         "seg_id": seg.get_column("seg_id").gather(row),
                         "execution_id": execution_id, "weight": weight})


def _largest_shares(split: pl.DataFrame, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per segment row (of ``n``) that has shares: its row, the sum of its weights and the
    execution holding its largest share (the smallest execution_id among equal ones)."""
    row = split.get_column("row").to_numpy()
    weight = split.get_column("weight").to_numpy()
    eid = split.get_column("execution_id").to_numpy()
    largest = np.full(n, -np.inf)
    np.maximum.at(largest, row, weight)
    best = np.full(n, np.iinfo(np.int64).max)
    top = weight == largest[row]
    np.minimum.at(best, row[top], eid[top])
    rows = np.flatnonzero(np.bincount(row, minlength=n))
    return rows, np.bincount(row, weights=weight, minlength=n)[rows], best[rows]


def io_to_executions(segments: pl.DataFrame, executions: pl.DataFrame) -> IOAttribution:
    """Attribute aligned segments (with ``seg_id``) to executions (with ``execution_id``).
    The segments are sorted once, in ``SEGMENT_ORDER``; exact-thread segments (almost all, at
    scale) get their execution from an asof join of the key columns alone; only window-split
    segments are joined to windows and their shares summed per segment."""
    rows = sort_order(segments, SEGMENT_ORDER)
    seg = segments if rows is None else segments[rows]
    seg = seg.with_columns(attribution=_methods(seg, executions))
    seg = seg.with_columns(execution_id=_exact(seg, executions))
    seg = seg.with_columns(attributed_weight=pl.col("execution_id").is_not_null()
                           .cast(pl.Float64))
    split = _window_split(seg, seg.get_column("attribution") == "window-split", executions)
    if split.height:
        at, weight, best = _largest_shares(split, seg.height)
        seg = seg.with_columns(seg.get_column("execution_id").scatter(at, best),
                               seg.get_column("attributed_weight").scatter(at, weight))
    return IOAttribution(segments=seg, split=split)


#: a call's seconds inside I/O, and its bytes
IO_SECONDS = (pl.col("host_stop_ns") - pl.col("host_start_ns")).cast(pl.Float64) / 1e9
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
    rows) in their order: given them in output order, the same float sums in every run and
    mode (window-split bytes are fractional)."""
    def by_op(op: str, col: str) -> pl.Expr:
        return pl.col(col).filter(pl.col("op") == op).sum()
    return files.group_by("execution_id").agg(
        read_bytes=by_op("read", "bytes"), write_bytes=by_op("write", "bytes"),
        read_ops=by_op("read", "ops"), write_ops=by_op("write", "ops"),
        io_time_s=pl.col("io_time_s").sum(),
        # the least exact method that gave it I/O (the Enum lists them most exact first)
        io_method=pl.col("attribution").cast(METHOD).to_physical().max()
    ).with_columns(pl.col("io_method").replace_strict(dict(enumerate(METHOD.categories)),
                                                      return_dtype=pl.String))


def not_a_tasks_reason(otherwise: pl.Expr) -> pl.Expr:
    """Why I/O of a row (``role``, ``local_directory`` of its process, ``path``) belongs to no
    task: a process that is no known Dask process or no worker, a file of the worker's local
    directory (spill store, P2P shuffle buffer, lock or other file: ``local_dir.reason``); for
    a worker's other I/O, ``otherwise``."""
    return (pl.when(pl.col("role").is_null())
            .then(pl.lit("process is not a known Dask process"))
            .when(pl.col("role") != "worker")
            .then(pl.concat_str(pl.col("role"), pl.lit(" process")))
            .otherwise(pl.coalesce(local_dir.reason(pl.col("path"), pl.col("local_directory")),
                                   otherwise)))


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


def functions_per_execution(func_stats: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """One process's profile rows tagged with an execution → its ``task_functions`` rows: the
    rows of one function in one execution summed (the key is joined after summing: carried
    through the join it tripled the join's memory).

    A function has one row per execution and thread, and a task runs on one thread, so rows to
    sum are rare (two code objects with one identity, such as two lambdas on one line). They
    can only be among the rows whose (execution, line, clock) repeats, a check on integers;
    only those go through the group-by on the string columns."""
    ex = executions.filter(pl.col("execution_seq").is_not_null()).select(
        "execution_seq", "execution_id")
    function = ["module", "name", "file", "line", "clock", "ncall_kind"]
    rows = func_stats.select(*function, "ncall", "tsub_s", "ttot_s", "execution_seq").join(
        ex, on="execution_seq", how="inner").drop("execution_seq")
    maybe_repeated = rows.select(pl.struct("execution_id", "line", "clock").is_duplicated()
                                 ).to_series()
    if maybe_repeated.any():
        summed = rows.filter(maybe_repeated).group_by("execution_id", *function).agg(
            ncall=pl.col("ncall").sum(), tsub_s=pl.col("tsub_s").sum(),
            ttot_s=pl.col("ttot_s").sum())
        rows = pl.concat([rows.filter(~maybe_repeated).select(summed.columns), summed])
    return rows.join(executions.select("execution_id", "key"), on="execution_id", how="left")
