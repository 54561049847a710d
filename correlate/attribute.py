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

import polars as pl

from correlate import per_process
from correlate.schema import sort_order
from correlate.schema.outputs import SEGMENTS, TASK_FILES

#: the order ``io_to_executions`` returns segments in: the ``segments`` output order (the run
#: timeline differs from ``host_start_ns`` by one shift per process)
SEGMENT_ORDER = ["host", "pid", "thread_id", "host_start_ns", "seg_id"]
METHOD = SEGMENTS.column("attribution").polars_dtype()


@dataclass(frozen=True)
class IOAttribution:
    #: the input segments in ``SEGMENT_ORDER`` with an ``attribution`` column (the method their
    #: process allows: exact-thread / window-split / none), ``attributed_weight`` and
    #: ``execution_id`` (the execution holding the largest share; null when none)
    segments: pl.DataFrame
    #: seg_id, execution_id, weight of the window-split segments' shares
    split: pl.DataFrame

    @property
    def shares(self) -> pl.DataFrame:
        """seg_id, execution_id, weight, attribution: every share (an exact-thread segment
        has one, of weight 1)."""
        exact = self.segments.filter((pl.col("attribution") == "exact-thread")
                                     & pl.col("execution_id").is_not_null())
        return pl.concat([
            exact.select("seg_id", "execution_id", weight=pl.lit(1.0), attribution="attribution"),
            self.split.with_columns(attribution=pl.lit("window-split", METHOD)),
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


def _overlapping(seg: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """Every (segment, execution) pair of one process whose intervals overlap: an interval
    join on the two inequalities alone (polars' IEJoin; with the host and pid equalities in
    the same ``join_where`` it compares every segment with every execution: 5k executions and
    50k segments took 19 GB)."""
    ex = executions.select("execution_id", w_start="local_start_ns", w_stop="local_stop_ns")
    return seg.select("seg_id", "host_start_ns", "host_stop_ns").join_where(
        ex, pl.col("host_start_ns") <= pl.col("w_stop"),
        pl.col("host_stop_ns") >= pl.col("w_start"))


def _window_split(seg: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    own = executions.partition_by("host", "pid", as_dict=True)
    found = [_overlapping(rows, own[process])
             for process, rows in seg.partition_by("host", "pid", as_dict=True).items()
             if None not in process and process in own]
    pairs = pl.concat(found) if found else _overlapping(seg.clear(), executions.clear())
    dur = (pl.col("host_stop_ns") - pl.col("host_start_ns")).cast(pl.Float64)
    overlap = (pl.min_horizontal("host_stop_ns", "w_stop")
               - pl.max_horizontal("host_start_ns", "w_start")).cast(pl.Float64)
    raw = pl.when(dur > 0).then(overlap / dur).otherwise(1.0)
    pairs = pairs.with_columns(raw=raw).filter((pl.col("raw") > 0) | (dur == 0))
    total = pl.col("raw").sum().over("seg_id")
    zero = dur == 0
    weight = (pl.when(zero).then(1.0 / pl.len().over("seg_id"))
              .when(total > 1.0).then(pl.col("raw") / total)
              .otherwise(pl.col("raw")))
    return pairs.select("seg_id", "execution_id", weight=weight)


def io_to_executions(segments: pl.DataFrame, executions: pl.DataFrame) -> IOAttribution:
    """Attribute aligned segments (with ``seg_id``) to executions (with ``execution_id``).
    The segments are sorted once, in ``SEGMENT_ORDER``; exact-thread segments (almost all, at
    scale) get their execution from an asof join of the key columns alone; only window-split
    segments are joined to windows and their shares grouped."""
    rows = sort_order(segments, SEGMENT_ORDER)
    seg = segments if rows is None else segments[rows]
    seg = seg.with_columns(attribution=_methods(seg, executions))
    seg = seg.with_columns(execution_id=_exact(seg, executions))
    seg = seg.with_columns(attributed_weight=pl.col("execution_id").is_not_null()
                           .cast(pl.Float64))
    window = seg.get_column("attribution") == "window-split"
    split = _window_split(seg.filter(window), executions)
    if window.any():
        per_segment = (split.sort("weight", "execution_id", descending=[True, False])
                       .group_by("seg_id", maintain_order=True)
                       .agg(weight=pl.col("weight").sum(),
                            execution=pl.col("execution_id").first()))
        found = (seg.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), "seg_id")
                 .filter(window).join(per_segment, on="seg_id"))
        row = found.get_column("row")
        seg = seg.with_columns(
            seg.get_column("execution_id").scatter(row, found.get_column("execution")),
            seg.get_column("attributed_weight").scatter(row, found.get_column("weight")))
    return IOAttribution(segments=seg, split=split)


def _io_measures(weight: pl.Expr) -> list[pl.Expr]:
    dur_s = (pl.col("host_stop_ns") - pl.col("host_start_ns")).cast(pl.Float64) / 1e9
    return [(pl.col("length").cast(pl.Float64) * weight).sum().alias("bytes"),
            weight.sum().alias("ops"),
            (dur_s * weight).sum().alias("io_time_s")]


def task_files(att: IOAttribution, executions: pl.DataFrame) -> pl.DataFrame:
    """I/O per execution × path × op (the ``task_files`` table): an exact-thread segment counts
    whole for its execution, a window-split one by the weight of each share."""
    # summed in integer ns: exact, whatever order the rows are summed in
    dur_s = (pl.col("host_stop_ns") - pl.col("host_start_ns")).sum().cast(pl.Float64) / 1e9
    whole = (att.segments.lazy()  # lazy: only the columns used are filtered
             .filter((pl.col("attribution") == "exact-thread") & pl.col("execution_id").is_not_null())
             .group_by("execution_id", "path", "op").agg(
                 bytes=pl.col("length").sum().cast(pl.Float64), ops=pl.len().cast(pl.Float64),
                 io_time_s=dur_s)
             .with_columns(attribution=pl.lit("exact-thread", METHOD)).collect())
    if whole.is_empty() and att.split.is_empty():
        return TASK_FILES.empty()
    cols = ["path", "op", "length", "host_start_ns", "host_stop_ns"]
    shared = (att.split.join(att.segments.select("seg_id", *cols), on="seg_id")
              .group_by("execution_id", "path", "op").agg(_io_measures(pl.col("weight")))
              .with_columns(attribution=pl.lit("window-split", METHOD)))
    return pl.concat([whole, shared], how="vertical_relaxed").join(
        executions.select("execution_id", "key"), on="execution_id", how="left")


def task_io_totals(files: pl.DataFrame) -> pl.DataFrame:
    """Per execution: read/write bytes and ops, I/O time."""
    def by_op(op: str, col: str) -> pl.Expr:
        return pl.col(col).filter(pl.col("op") == op).sum()
    return files.group_by("execution_id").agg(
        read_bytes=by_op("read", "bytes"), write_bytes=by_op("write", "bytes"),
        read_ops=by_op("read", "ops"), write_ops=by_op("write", "ops"),
        io_time_s=pl.col("io_time_s").sum())


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
    local_dir = pl.col("local_directory")
    reason = (pl.when(pl.col("path").is_in(marker_paths)).then(pl.lit("collector clock marker"))
              .when(pl.col("role").is_null())
              .then(pl.lit("process is not a known Dask process"))
              .when(pl.col("role") != "worker")
              .then(pl.concat_str(pl.col("role"), pl.lit(" process")))
              .when(local_dir.is_not_null()
                    & pl.col("path").str.starts_with(local_dir.fill_null("\0")))
              .then(pl.lit("worker local directory (spill)"))
              .when(pl.col("attribution") == "none")
              .then(pl.lit("worker without task windows"))
              .otherwise(pl.lit("outside any task execution")))
    rem = rem.with_columns(thread_kind=kind, reason=reason,
                           role=pl.col("role").fill_null("unknown"))
    return (rem.group_by("host", "pid", "role", "thread_kind", "reason", "path", "op")
            .agg(_io_measures(pl.col("weight"))))


def functions_per_execution(func_stats: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """One process's profile rows tagged with an execution → its ``task_functions`` rows (the
    key is joined after grouping: carried through the join it tripled the join's memory)."""
    ex = executions.filter(pl.col("execution_seq").is_not_null()).select(
        "execution_seq", "execution_id")
    function = ["module", "name", "file", "line", "clock"]
    joined = func_stats.select("execution_seq", *function, "ncall", "tsub_s", "ttot_s").join(
        ex, on="execution_seq", how="inner")
    per_function = joined.group_by("execution_id", *function).agg(
        ncall=pl.col("ncall").sum(), tsub_s=pl.col("tsub_s").sum(),
        ttot_s=pl.col("ttot_s").sum())
    return per_function.join(executions.select("execution_id", "key"), on="execution_id",
                             how="left")
