"""I/O that a library does on its own threads for a task: pyarrow's I/O pool, zarr's and
fsspec's loops, compression threads. The task waits while a helper thread reads for it, so the
segment's thread is no executor thread and exact-thread attribution leaves it out.

A *helper segment* is one of a worker process that has executions with thread ids, issued by a
thread that ran no execution and is not the event loop, on a path that is neither a collector
clock marker nor under the worker's local directory (spill): those keep their reasons. Each
helper segment is given, in this order of evidence:

- ``helper-context``: whole, to the execution whose context opened that path on that same
  thread (``file_opens``: the collector's audit hook, carried to helper threads by
  ``contextvars``), when the segment's midpoint lies inside that execution's window. Among
  several such opens, the latest at or before the midpoint (else the earliest after it).
- ``helper-file``: to the executions overlapping it in time that touched the same file
  themselves — a segment on their own thread (pyarrow reads the footer on the executor thread,
  the pages on its pool) or an open in their context. One such execution gets it whole;
  several (two running tasks reading one file) share it in proportion to their overlap with
  it, and the shares add up to the whole segment: ``helper-shared`` then, since nothing
  separates concurrent readers of one file (pyarrow's pool reading row groups for several
  tasks at once); the summary says with how many.
- ``helper-split``: otherwise, split over every execution of the process that overlaps it, as
  ``window-split`` does (the part outside every window stays unattributed). Only where the
  event-loop thread is known, so that the loop's own I/O is never split over tasks.

What none of these reaches stays unattributed, ``other-thread``, with its reason.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from correlate.attribution.passes import Partition, segment_pass
from correlate.attribution.shares import (
    METHOD,
    IOAttribution,
    largest_shares,
    overlapping_pairs,
    window_split,
)


def _candidates(seg: pl.DataFrame, executions: pl.DataFrame, processes: pl.DataFrame,
                marker_paths: list[str]) -> pl.DataFrame:
    """row (in ``seg``), host, pid, thread_id, path, host_start_ns, host_stop_ns and
    ``loop_known`` of every helper segment."""
    loose = seg.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), "host", "pid",
                       "thread_id", "path", "host_start_ns", "host_stop_ns").filter(
        (seg.get_column("attribution") == "exact-thread") & seg.get_column("execution_id")
        .is_null() & seg.get_column("thread_id").is_not_null())
    if loose.is_empty():
        return loose.with_columns(loop_known=pl.lit(False))
    executors = (executions.filter(pl.col("thread_id").is_not_null())
                 .select("host", "pid", "thread_id").unique().with_columns(executor=True))
    procs = processes.select("host", "pid", "main_thread_id", "local_directory").unique(
        ["host", "pid"])
    keys = ["host", "pid"]
    loose = (loose.join(procs, on=keys, how="left", nulls_equal=True, maintain_order="left")
             .join(executors, on=[*keys, "thread_id"], how="left", nulls_equal=True,
                   maintain_order="left"))
    local_dir = pl.col("local_directory")
    return loose.filter(
        pl.col("executor").is_null()
        & (pl.col("thread_id") != pl.col("main_thread_id")).fill_null(True)
        & ~pl.col("path").is_in(marker_paths)
        & ~(local_dir.is_not_null() & pl.col("path").str.starts_with(local_dir.fill_null("\0")))
    ).select("row", *keys, "thread_id", "path", "host_start_ns", "host_stop_ns",
             loop_known=pl.col("main_thread_id").is_not_null())


def _opened(opens: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """host, pid, thread_id, path, opened, execution_id, w_start, w_stop: every open of an
    execution's context, with that execution's window."""
    ex = executions.filter(pl.col("execution_seq").is_not_null()).select(
        "host", "pid", "execution_seq", "execution_id", w_start="local_start_ns",
        w_stop="local_stop_ns")
    return opens.select("host", "pid", "thread_id", "path", "execution_seq",
                        opened="local_time_ns").join(
        ex, on=["host", "pid", "execution_seq"], how="inner", nulls_equal=True
    ).drop("execution_seq")


def _by_context(cand: pl.DataFrame, opened: pl.DataFrame) -> pl.DataFrame:
    """row, execution_id of the candidates an open on their own thread and path explains."""
    if opened.is_empty():
        return pl.DataFrame(schema={"row": pl.UInt32, "execution_id": pl.Int64})
    mid = (pl.col("host_start_ns") + pl.col("host_stop_ns")) // 2
    return (cand.with_columns(mid=mid)
            .join(opened, on=["host", "pid", "thread_id", "path"], how="inner",
                  nulls_equal=True)
            .filter((pl.col("w_start") <= pl.col("mid")) & (pl.col("mid") <= pl.col("w_stop")))
            .sort("row", pl.col("opened") > pl.col("mid"), (pl.col("mid") - pl.col("opened"))
                  .abs(), "execution_id")
            .unique("row", keep="first", maintain_order=True)
            .select("row", "execution_id"))


def _by_file(cand: pl.DataFrame, touched: pl.DataFrame, executions: pl.DataFrame,
             seg_id: pl.Series) -> pl.DataFrame:
    """row, seg_id, execution_id, weight: the candidates' shares among the executions that
    overlap them and touched their file; each candidate's shares add up to 1."""
    pairs = overlapping_pairs(cand.select("row", "host", "pid", "host_start_ns",
                                          "host_stop_ns"), executions)
    pairs = (pairs.join(cand.select("row", "path", "host_start_ns", "host_stop_ns"), on="row")
             .join(touched, on=["execution_id", "path"], how="semi"))
    if pairs.is_empty():
        return pl.DataFrame(schema={"row": pl.UInt32, "seg_id": seg_id.dtype,
                                    "execution_id": pl.Int64, "weight": pl.Float64})
    a, b = pairs.get_column("host_start_ns"), pairs.get_column("host_stop_ns")
    overlap = (np.minimum(b.to_numpy(), pairs.get_column("w_stop").to_numpy())
               - np.maximum(a.to_numpy(), pairs.get_column("w_start").to_numpy()))
    # a call of zero length, or one that only touches a window's edge, counts once per window
    raw = np.where((b - a).to_numpy() > 0, np.maximum(overlap, 0), 1).astype(np.float64)
    row = pairs.get_column("row").to_numpy()
    total = np.bincount(row, weights=raw)
    raw = np.where(total[row] > 0, raw, 1.0)
    weight = raw / np.bincount(row, weights=raw)[row]
    return pairs.select("row", seg_id=seg_id.gather(pairs.get_column("row")),
                        execution_id="execution_id").with_columns(weight=pl.Series(weight))


def _touched(seg: pl.DataFrame, opened: pl.DataFrame) -> pl.DataFrame:
    """execution_id, path: the files each execution touched itself (a segment attributed to it
    on its own thread) or opened in its context on any thread."""
    own = seg.filter((pl.col("attribution") == "exact-thread")
                     & pl.col("execution_id").is_not_null()).select("execution_id", "path")
    return pl.concat([own, opened.select("execution_id", "path")]).unique()


def helper_io(att: IOAttribution, executions: pl.DataFrame, opens: pl.DataFrame,
              processes: pl.DataFrame, marker_paths: list[str]) -> IOAttribution:
    """``att`` with its helper segments attributed (see the module doc): their ``attribution``
    says which rule gave them; shares of ``helper-file`` and ``helper-split`` join ``split``."""
    seg = att.segments
    cand = _candidates(seg, executions, processes, marker_paths)
    if cand.is_empty():
        return att
    opened = _opened(opens, executions)
    exact = _by_context(cand, opened)
    cand = cand.join(exact, on="row", how="anti")
    by_file = _by_file(cand, _touched(seg, opened), executions, seg.get_column("seg_id"))
    rest = cand.join(by_file.select("row").unique(), on="row", how="anti").filter("loop_known")
    window = np.zeros(seg.height, dtype=bool)
    window[rest.get_column("row").to_numpy()] = True
    split = window_split(seg, pl.Series(window), executions)

    method = seg.get_column("attribution").cast(pl.String)
    eid = seg.get_column("execution_id")
    weight = seg.get_column("attributed_weight")
    at = exact.get_column("row")
    method = method.scatter(at, "helper-context")
    eid = eid.scatter(at, exact.get_column("execution_id"))
    weight = weight.scatter(at, 1.0)
    shares = pl.concat([by_file, split])
    if shares.height:
        rows, total, best = largest_shares(shares, seg.height)
        eid, weight = eid.scatter(rows, best), weight.scatter(rows, total)
        readers = by_file.group_by("row").len()
        method = (method.scatter(readers.filter(pl.col("len") == 1).get_column("row"),
                                 "helper-file")
                  .scatter(readers.filter(pl.col("len") > 1).get_column("row"),
                           "helper-shared")
                  .scatter(split.get_column("row").unique(), "helper-split"))
    seg = seg.with_columns(method.cast(METHOD), eid, weight)
    return IOAttribution(segments=seg, split=_concat_shares(att.split, shares))


def _concat_shares(*frames: pl.DataFrame) -> pl.DataFrame:
    return pl.concat([f for f in frames if f.height] or [frames[0]])



@segment_pass("helper-context")
def helper_pass(att: IOAttribution, given: Partition) -> IOAttribution:
    """``helper_io`` as the attribution's pass."""
    return helper_io(att, given.executions, given.opens, given.processes, given.marker_paths)
