"""Attribution: every DXT segment to at most one task execution (or a share of several, in the
fallback), and the unattributed remainder with its reason.

Inputs are canonical frames after ``align``: segments carry ``host_start_ns``/``host_stop_ns``
(Darshan times corrected onto the process's ``time.time()`` clock), executions carry
``execution_id`` and ``local_start_ns``/``local_stop_ns`` on the same host clock.

``shares`` is the central intermediate: one row per (segment, execution, weight) with the method
used; the weights of one segment sum to at most 1 and ``1 − Σ weights`` is unattributed. Every
output total is a sum over shares, so attributed + unattributed == total holds by construction
and is checked by the tests.

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

from correlate.schema.outputs import TASK_FILES

SEG_COLS = ["seg_id", "host", "pid", "thread_id", "host_start_ns", "host_stop_ns"]


@dataclass(frozen=True)
class IOAttribution:
    #: seg_id, execution_id, weight, attribution
    shares: pl.DataFrame
    #: segments with an ``attribution`` column (the method their process allows:
    #: exact-thread / window-split / none), ``attributed_weight`` and ``execution_id`` (the
    #: execution holding the largest share; null when none)
    segments: pl.DataFrame


def _process_methods(executions: pl.DataFrame) -> pl.DataFrame:
    """Per (host, pid) of the executions: whether they carry thread ids."""
    return executions.group_by("host", "pid").agg(
        exec_has_threads=pl.col("thread_id").is_not_null().any())


def _exact(seg: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """``seg`` with ``execution_id``: the execution on its thread whose window holds its
    midpoint (null when none)."""
    ex = (executions.filter(pl.col("thread_id").is_not_null())
          .select("host", "pid", "thread_id", "execution_id",
                  w_start="local_start_ns", w_stop="local_stop_ns")
          .sort("w_start"))
    # sorted and joined on the key columns alone, then the segments gathered once in that order
    mids = seg.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), "host", "pid",
                      "thread_id", mid=(pl.col("host_start_ns") + pl.col("host_stop_ns")) // 2
                      ).sort("mid")
    found = mids.join_asof(ex, left_on="mid", right_on="w_start",
                           by=["host", "pid", "thread_id"], strategy="backward",
                           check_sortedness=False)
    return seg[found.get_column("row")].with_columns(found.select(
        execution_id=pl.when(pl.col("mid") <= pl.col("w_stop")).then(pl.col("execution_id"))
    ).to_series())


def _window_split(seg: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    ex = executions.select(e_host="host", e_pid="pid", execution_id="execution_id",
                           w_start="local_start_ns", w_stop="local_stop_ns")
    left = seg.select(SEG_COLS)
    pairs = left.join_where(
        ex,
        pl.col("host") == pl.col("e_host"),
        pl.col("pid") == pl.col("e_pid"),
        pl.col("host_start_ns") <= pl.col("w_stop"),
        pl.col("host_stop_ns") >= pl.col("w_start"),
    )
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
    return pairs.select("seg_id", "execution_id", weight=weight,
                        attribution=pl.lit("window-split"))


def io_to_executions(segments: pl.DataFrame, executions: pl.DataFrame) -> IOAttribution:
    """Attribute aligned segments (with ``seg_id``) to executions (with ``execution_id``).
    Exact-thread segments (almost all, at scale) carry their execution as a column and never
    go through a join back; only window-split shares are grouped per segment."""
    methods = _process_methods(executions)
    seg = segments.join(methods, on=["host", "pid"], how="left", nulls_equal=True).with_columns(
        attribution=pl.when(pl.col("exec_has_threads").is_null()).then(pl.lit("none"))
        .when(pl.col("exec_has_threads") & pl.col("thread_id").is_not_null())
        .then(pl.lit("exact-thread"))
        .otherwise(pl.lit("window-split"))
    ).drop("exec_has_threads")
    exact = _exact(seg.filter(pl.col("attribution") == "exact-thread"), executions)
    others = seg.filter(pl.col("attribution") != "exact-thread")
    split = _window_split(others.filter(pl.col("attribution") == "window-split"), executions)
    per_segment = (split.sort("weight", "execution_id", descending=[True, False])
                   .group_by("seg_id", maintain_order=True)
                   .agg(attributed_weight=pl.col("weight").sum(),
                        execution_id=pl.col("execution_id").first()))
    others = others.join(per_segment, on="seg_id", how="left")
    exact = exact.with_columns(
        attributed_weight=pl.col("execution_id").is_not_null().cast(pl.Float64))
    shares = pl.concat([
        exact.filter(pl.col("execution_id").is_not_null())
        .select("seg_id", "execution_id", weight=pl.lit(1.0), attribution=pl.lit("exact-thread")),
        split,
    ]).with_columns(pl.col("attribution").cast(pl.String))
    return IOAttribution(
        shares=shares,
        segments=pl.concat([exact, others], how="diagonal_relaxed").with_columns(
            pl.col("attributed_weight").fill_null(0.0)))


def _io_measures(weight: pl.Expr) -> list[pl.Expr]:
    dur_s = (pl.col("host_stop_ns") - pl.col("host_start_ns")).cast(pl.Float64) / 1e9
    return [(pl.col("length").cast(pl.Float64) * weight).sum().alias("bytes"),
            weight.sum().alias("ops"),
            (dur_s * weight).sum().alias("io_time_s")]


def task_files(att: IOAttribution, executions: pl.DataFrame) -> pl.DataFrame:
    """I/O per execution × path × op (the ``task_files`` table)."""
    if att.shares.is_empty():
        return TASK_FILES.empty()
    cols = ["path", "op", "length", "host_start_ns", "host_stop_ns"]
    exact = att.segments.filter((pl.col("attribution") == "exact-thread")
                                & pl.col("execution_id").is_not_null())
    split = att.shares.filter(pl.col("attribution") != "exact-thread").join(
        att.segments.select("seg_id", *cols), on="seg_id")
    rows = pl.concat([
        exact.select("execution_id", *cols, weight=pl.lit(1.0),
                     attribution=pl.col("attribution").cast(pl.String)),
        split.select("execution_id", *cols, "weight", "attribution"),
    ])
    per_file = (rows.group_by("execution_id", "path", "op", "attribution")
                .agg(_io_measures(pl.col("weight"))))
    return per_file.join(executions.select("execution_id", "key"), on="execution_id",
                         how="left")


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
    """Profile rows tagged with an execution → ``task_functions`` rows (the key is joined after
    grouping: carried through the join it tripled the join's memory)."""
    ex = executions.filter(pl.col("execution_seq").is_not_null()).select(
        "host", "pid", "execution_seq", "execution_id")
    joined = func_stats.join(ex, on=["host", "pid", "execution_seq"], how="inner",
                             nulls_equal=True)
    per_function = joined.group_by("execution_id", "module", "name", "file", "line", "clock").agg(
        ncall=pl.col("ncall").sum(), tsub_s=pl.col("tsub_s").sum(),
        ttot_s=pl.col("ttot_s").sum())
    return per_function.join(executions.select("execution_id", "key"), on="execution_id",
                             how="left")
