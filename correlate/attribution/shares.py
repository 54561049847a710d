"""What the attribution methods share: the method labels' type, the shape of an attribution
(``IOAttribution``), how a call is split over the task windows it overlaps, why I/O belongs to
no task, and how a Darshan counter record's bytes are shared in time among the windows that ran
between its first and last call (the counters say how much, not when in between)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from correlate.attribution import local_dir
from correlate.schema.methods import WHOLE
from correlate.schema.outputs import SEGMENTS


def time_shares(first: int, last: int, starts: np.ndarray, stops: np.ndarray,
                bins: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Each window's share of the bytes a record moved between ``first`` and ``last``: the span
    cut at every window edge; a piece's weight is its bytes by the bins (``(starts, stops,
    bytes)`` of consecutive bins, bytes spread evenly within a bin; even in time without bins,
    or when the bins hold no bytes in the span), shared equally among the windows covering it.
    The shares sum to the part of the span some window covers (≤ 1)."""
    last = max(last, first + 1)  # one call: a 1 ns span
    cut = np.unique(np.clip(np.concatenate([[first, last], starts, stops]), first, last))
    if bins is not None and len(bins[0]):
        # the process's cumulative bytes over time, linear within a bin
        edges = np.append(bins[0], bins[1][-1]).astype(np.float64)
        cum = np.concatenate([[0.0], np.cumsum(bins[2])])
        heat = np.diff(np.interp(cut.astype(np.float64), edges, cum))
    else:
        heat = np.zeros(len(cut) - 1)
    weight = heat if heat.sum() > 0 else np.diff(cut).astype(np.float64)
    weight = weight / weight.sum()
    # windows covering each piece: those started at or before its start, minus those stopped
    lo = cut[:-1]
    n = (np.searchsorted(np.sort(starts), lo, side="right")
         - np.searchsorted(np.sort(stops), lo, side="right"))
    per_piece = np.where(n > 0, weight / np.maximum(n, 1), 0.0)
    acc = np.concatenate([[0.0], np.cumsum(per_piece)])
    # a window's share: the pieces between its clipped edges (each edge is a cut point)
    i0 = np.searchsorted(cut, np.clip(starts, first, last))
    i1 = np.searchsorted(cut, np.clip(stops, first, last))
    return acc[i1] - acc[i0]


METHOD = SEGMENTS.column("attribution").polars_dtype()


OP = SEGMENTS.column("op").polars_dtype()




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
    found = []
    if rows.height:  # (the executions of the rows' processes alone are cut per process)
        own = executions.join(rows.select("host", "pid").unique(), on=["host", "pid"],
                              how="semi", maintain_order="left").partition_by(
            "host", "pid", as_dict=True)
        found = [_overlapping(part, own[process])
                 for process, part in rows.partition_by("host", "pid", as_dict=True).items()
                 if None not in process and process in own]
    if not found:
        return pl.DataFrame(schema={"row": pl.UInt32, "execution_id": pl.Int64,
                                    "w_start": pl.Int64, "w_stop": pl.Int64})
    return pl.concat(found)


def window_split(seg: pl.DataFrame, window: pl.Series, executions: pl.DataFrame
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


def largest_shares(split: pl.DataFrame, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


#: a call's seconds inside I/O, and its bytes
IO_SECONDS = (pl.col("host_stop_ns") - pl.col("host_start_ns")).cast(pl.Float64) / 1e9


#: the unattributed reason of a process that is no scheduler, worker or client of the run
UNKNOWN_PROCESS = "process is not a known Dask process"


def not_a_tasks_reason(otherwise: pl.Expr) -> pl.Expr:
    """Why I/O of a row (``role``, ``local_directory`` of its process, ``path``) belongs to no
    task: a process that is no known Dask process or no worker, a file of the worker's local
    directory (spill store, P2P shuffle buffer, lock or other file: ``local_dir.reason``); for
    a worker's other I/O, ``otherwise``."""
    return (pl.when(pl.col("role").is_null())
            .then(pl.lit(UNKNOWN_PROCESS))
            .when(pl.col("role") != "worker")
            .then(pl.concat_str(pl.col("role"), pl.lit(" process")))
            .otherwise(pl.coalesce(local_dir.reason(pl.col("path"), pl.col("local_directory")),
                                   otherwise)))


#: how far outside an execution's window a stdio call may seem to lie and still be its own,
#: when the process's Darshan clock has no measured uncertainty (the log header's clock base is
#: typically a few ms off the process's own)
HEADER_CLOCK_SLACK_NS = 5_000_000


def darshan_records(counters: pl.DataFrame, processes: pl.DataFrame, clocks: pl.DataFrame,
             module: str = "STDIO", keep_offset: bool = False) -> pl.DataFrame:
    """``module``'s (STDIO by default) records with bytes, one row per (record, op) with the first and last such call
    on the process's own clock (``first_ns``/``last_ns``, and ``slack_ns`` around them), the
    host filled from the processes table where the log had no DXT record to name it (the pid
    alone then decides, when one host has it)."""
    stdio = counters.filter((pl.col("module") == module)
                            & ((pl.col("read_bytes") > 0) | (pl.col("write_bytes") > 0)))
    if stdio.is_empty():
        return pl.DataFrame(schema={
            "host": pl.String, "pid": pl.Int64, "path": pl.String, "op": pl.String,
            "bytes": pl.Float64, "ops": pl.Float64, "io_time_s": pl.Float64,
            "first_ns": pl.Int64, "last_ns": pl.Int64, "slack_ns": pl.Int64,
            **({"offset_ns": pl.Int64} if keep_offset else {})})
    hosts = (processes.filter(pl.col("pid").is_not_null()).select("pid", "host").unique()
             .filter(pl.col("pid").count().over("pid") == 1).rename({"host": "pid_host"}))
    darshan = clocks.filter(pl.col("domain") == "darshan").select(
        "host", "pid", "offset_ns", "uncertainty_ns").unique(["host", "pid"])
    stdio = stdio.join(hosts, on="pid", how="left").with_columns(
        host=pl.coalesce("host", "pid_host")).join(
        darshan, on=["host", "pid"], how="left", nulls_equal=True).with_columns(
        pl.col("offset_ns").fill_null(0),
        slack_ns=pl.col("uncertainty_ns").fill_null(HEADER_CLOCK_SLACK_NS))
    kept = ["offset_ns"] if keep_offset else []
    parts = [stdio.select("host", "pid", "path", "slack_ns", *kept, op=pl.lit(op),
                          bytes=pl.col(f"{op}_bytes").cast(pl.Float64),
                          ops=pl.col(f"{op}_ops").cast(pl.Float64),
                          io_time_s=pl.col(f"{op}_time_s").fill_null(0.0),
                          first_ns=pl.col(f"first_{op}_ns") + pl.col("offset_ns"),
                          last_ns=pl.col(f"last_{op}_ns") + pl.col("offset_ns"))
             for op in ("read", "write")]
    return pl.concat(parts).filter(pl.col("bytes") > 0).group_by(
        "host", "pid", "path", "op").agg(pl.col("bytes", "ops", "io_time_s").sum(),
                                         pl.col("first_ns").min(), pl.col("last_ns").max(),
                                         pl.col("slack_ns").max(),
                                         *(pl.col(k).first() for k in kept))


def openers(opens: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """host, pid, path, op, execution_id, weight, openers: each execution that opened a path in
    its context in a mode that allows ``op`` (an open of unknown mode allows both), weighted
    by its share of those opens in that process."""
    ex = executions.filter(pl.col("execution_seq").is_not_null()).select(
        "host", "pid", "execution_seq", "execution_id")
    access = pl.col("access").cast(pl.String)
    found = opens.join(ex, on=["host", "pid", "execution_seq"], how="inner",
                       nulls_equal=True).with_columns(access=access)
    parts = [found.filter(access.is_null() | (access == op) | (access == "read-write"))
             .with_columns(op=pl.lit(op)) for op in ("read", "write")]
    per = pl.concat(parts).group_by("host", "pid", "path", "op", "execution_id").len()
    where = ("host", "pid", "path", "op")
    return per.with_columns(weight=pl.col("len") / pl.col("len").sum().over(where),
                            openers=pl.len().over(where)).drop("len")
