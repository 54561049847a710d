"""Clock alignment: one timeline for every source, and how sure we are.

Two corrections, both expressed as rows of the ``clocks`` table (``offset_ns`` to add):

- ``darshan`` domain, per (host, pid): Darshan's absolute segment times (header start time +
  relative time) are off the process's ``time.time()`` by milliseconds. Our collectors write
  marker records at known ``time.time_ns()`` instants; the matching DXT segments give the offset
  (median) and its residual (max deviation). Without markers the offset is 0 and the uncertainty
  unknown — say so.
- ``worker`` domain, per (host, pid): a worker's local clock → the scheduler's clock (the run
  timeline). A worker on the scheduler's host reads the same system clock: offset 0, exactly,
  and the method says so (Dask's ``scheduler_delay`` estimates are off by milliseconds there,
  a few heartbeats' network noise). On another host: the midpoint of the bound the task
  messages put on the offset by causality (``correlate.timeline.message_bounds``; uncertainty: half its
  width, a certain bound); without one, Dask's ``scheduler_delay`` estimates, every distinct
  sample the collector saw (median; uncertainty: half their spread plus half the median
  round-trip latency, an estimate only: the registration's sample can be off by more).

``apply`` adds aligned columns and never overwrites the raw ``local_*`` ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from correlate.frames import per_process
from correlate.schema import TABLES, conform

#: containment search: ± range, coarse and fine steps, segments sampled per process
SEARCH_NS = 250_000_000
COARSE_NS = 500_000
FINE_NS = 20_000
SAMPLE = 4000
#: below this share of contained segments the estimate is not used
MIN_CONTAINED = 0.5


SAME_HOST = "same host as the scheduler: one system clock, offset 0"
ESTIMATED = "dask scheduler_delay (median of distinct heartbeat samples)"
BOUNDED = ("task messages: midpoint of the causal bound (scheduler send <= worker receive, "
           "worker finish <= scheduler receive)")


def _scheduler_host(processes: pl.DataFrame | None) -> str | None:
    """The scheduler's host when the run recorded exactly one scheduler process."""
    if processes is None or processes.is_empty():
        return None
    hosts = processes.filter(pl.col("role") == "scheduler")["host"].drop_nulls().unique()
    return hosts[0] if hosts.len() == 1 else None


def worker_offsets(clock_samples: pl.DataFrame, processes: pl.DataFrame | None = None,
                   bounds: pl.DataFrame | None = None) -> pl.DataFrame:
    """``clocks`` rows (domain worker): 0 for workers on the scheduler's host (``processes``
    names it); elsewhere the midpoint of the causal bound from the task messages
    (``correlate.timeline.message_bounds``; uncertainty: half its width) where one holds, else Dask's
    scheduler_delay samples."""
    samples = clock_samples.filter(pl.col("scheduler_delay_s").is_not_null())
    host = _scheduler_host(processes)
    same = samples.filter(pl.col("host") == host) if host is not None else samples.clear()
    other = samples.filter(pl.col("host") != host) if host is not None else samples
    local = same.group_by("host", "pid").agg(samples=pl.len().cast(pl.Int64)).with_columns(
        offset_ns=pl.lit(0, pl.Int64), uncertainty_ns=pl.lit(0, pl.Int64),
        domain=pl.lit("worker"), method=pl.lit(SAME_HOST))
    bounded = _bounded(bounds, host)
    estimated = _estimated(other).join(bounded.select("host", "pid"), on=["host", "pid"],
                                       how="anti", nulls_equal=True)
    return pl.concat([conform(local, TABLES["clocks"]), bounded, estimated])


def _bounded(bounds: pl.DataFrame | None, scheduler_host: str | None) -> pl.DataFrame:
    """Rows for processes off the scheduler's host whose bound holds (lower <= upper; a
    crossed bound means hooks out of order or a drifting clock: Dask's estimate is used)."""
    # only for runs that recorded their scheduler (ours): imported formats bring their own
    # estimates (the Mofka importer bounds its workers the same way)
    if bounds is None or bounds.is_empty() or scheduler_host is None:
        return TABLES["clocks"].empty()
    ok = bounds.filter((pl.col("lower_ns") <= pl.col("upper_ns"))
                       & (pl.col("host") != scheduler_host))
    out = ok.with_columns(
        offset_ns=((pl.col("lower_ns") + pl.col("upper_ns")) // 2),
        uncertainty_ns=(pl.col("upper_ns") - pl.col("lower_ns") + 1) // 2,
        samples=pl.col("pairs"), domain=pl.lit("worker"), method=pl.lit(BOUNDED))
    return conform(out, TABLES["clocks"])


def _estimated(samples: pl.DataFrame) -> pl.DataFrame:
    # the collector reads the worker's latest estimate every half flush interval: repeated
    # values are one heartbeat read twice, and an exact 0.0 is Dask's initial value, read
    # before the worker's first heartbeat
    samples = samples.filter(pl.col("scheduler_delay_s") != 0.0).unique(
        ["host", "pid", "scheduler_delay_s"], maintain_order=True)
    if samples.is_empty():
        return TABLES["clocks"].empty()
    out = samples.group_by("host", "pid").agg(
        offset_ns=(pl.col("scheduler_delay_s").median() * 1e9).round().cast(pl.Int64),
        spread_ns=((pl.col("scheduler_delay_s").max() - pl.col("scheduler_delay_s").min())
                   * 0.5e9),
        half_latency_ns=(pl.col("latency_s").median() * 0.5e9).fill_null(0.0),
        samples=pl.len().cast(pl.Int64),
    ).with_columns(
        domain=pl.lit("worker"),
        uncertainty_ns=(pl.col("spread_ns") + pl.col("half_latency_ns")).round().cast(pl.Int64),
        method=pl.lit(ESTIMATED),
    )
    return conform(out, TABLES["clocks"])


def darshan_offsets(io_segments: pl.DataFrame, clock_markers: pl.DataFrame) -> pl.DataFrame:
    """``clocks`` rows (domain darshan) from marker writes found in the DXT segments."""
    if clock_markers.is_empty() or io_segments.is_empty():
        return TABLES["clocks"].empty()
    paths = clock_markers.get_column("path").unique().implode()
    writes = io_segments.lazy().filter((pl.col("op") == "write") & pl.col("path").is_in(paths)
                                       ).select("host", "pid", "path", "offset", "length",
                                                seg_start_ns="local_start_ns").collect()
    matched = clock_markers.join(writes, on=["host", "pid", "path", "offset", "length"],
                                 how="inner")
    if matched.is_empty():
        return TABLES["clocks"].empty()
    diffs = matched.with_columns(diff_ns=pl.col("local_time_ns") - pl.col("seg_start_ns"))
    diff = pl.col("diff_ns")
    out = diffs.group_by("host", "pid").agg(
        offset_ns=diff.median().round().cast(pl.Int64),
        uncertainty_ns=(diff - diff.median()).abs().max().round().cast(pl.Int64),
        samples=pl.len().cast(pl.Int64),
    ).with_columns(
        domain=pl.lit("darshan"),
        method=pl.lit("collector marker writes found in DXT"),
    )
    return conform(out, TABLES["clocks"])


def counter_offsets(counters: pl.DataFrame, clock_markers: pl.DataFrame) -> pl.DataFrame:
    """``clocks`` rows (domain darshan) for processes whose log has no DXT: the marker file's
    POSIX counters keep the start of its first write and the end of its last, made at the
    first and last marker's known instants. The offset is the first's difference; the
    uncertainty how far the last's differs from it."""
    posix = counters.filter(pl.col("module") == "POSIX")
    if clock_markers.is_empty() or posix.is_empty():
        return TABLES["clocks"].empty()
    marks = clock_markers.group_by("host", "pid", "path").agg(
        first=pl.col("local_time_ns").min(), last=pl.col("local_time_ns").max(),
        samples=pl.len().cast(pl.Int64))
    stamps = posix.filter(pl.col("first_write_ns").is_not_null()).select(
        "pid", "path", "first_write_ns", "last_write_ns")
    out = marks.join(stamps, on=["pid", "path"]).with_columns(
        offset_ns=pl.col("first") - pl.col("first_write_ns"))
    if out.is_empty():
        return TABLES["clocks"].empty()
    out = out.with_columns(
        uncertainty_ns=(pl.col("last") - pl.col("last_write_ns") - pl.col("offset_ns")).abs(),
        domain=pl.lit("darshan"),
        method=pl.lit("collector marker writes in the POSIX counters (first and last)"))
    return conform(out.unique(["host", "pid"]), TABLES["clocks"])


def _contained(mids: np.ndarray, threads: np.ndarray, windows: dict[int, tuple[np.ndarray,
               np.ndarray]], deltas: np.ndarray) -> np.ndarray:
    """For each delta: how many ``mids + delta`` fall inside a window of their own thread."""
    counts = np.zeros(len(deltas), dtype=np.int64)
    for tid, (starts, stops) in windows.items():
        m = mids[threads == tid]
        if not len(m):
            continue
        shifted = m[None, :] + deltas[:, None]
        pos = np.searchsorted(starts, shifted, side="right") - 1
        inside = (pos >= 0) & (shifted <= stops[np.clip(pos, 0, None)])
        counts += inside.sum(axis=1)
    return counts


def _plateau(deltas: np.ndarray, counts: np.ndarray) -> tuple[int, int]:
    best = deltas[counts == counts.max()]
    return int(best.min()), int(best.max())


def _containment_offset(seg: pl.DataFrame, ex: pl.DataFrame) -> tuple[int, int, int] | None:
    """(offset, uncertainty, samples) that best puts thread segments inside their windows."""
    windows = {}
    for (tid,), w in ex.sort("local_start_ns").group_by("thread_id", maintain_order=True):
        windows[int(tid)] = (w["local_start_ns"].to_numpy(), w["local_stop_ns"].to_numpy())
    seg = seg.filter(pl.col("thread_id").is_in(list(windows)))
    if seg.is_empty():
        return None
    seg = seg.gather_every(max(1, seg.height // SAMPLE)).sort("local_start_ns")
    mids = ((seg["local_start_ns"] + seg["local_stop_ns"]) // 2).to_numpy()
    threads = seg["thread_id"].to_numpy().astype(np.int64)
    coarse = np.arange(-SEARCH_NS, SEARCH_NS + 1, COARSE_NS, dtype=np.int64)
    counts = _contained(mids, threads, windows, coarse)
    lo, hi = _plateau(coarse, counts)
    fine = np.arange(lo - COARSE_NS, hi + COARSE_NS + 1, FINE_NS, dtype=np.int64)
    counts = _contained(mids, threads, windows, fine)
    if counts.max() < MIN_CONTAINED * len(mids):
        return None
    lo, hi = _plateau(fine, counts)
    # the smallest correction consistent with the data: Darshan's header clock is usually
    # only milliseconds off, and a wide plateau (long tasks, sparse I/O) says nothing more
    return min(max(0, lo), hi), (hi - lo) // 2 + FINE_NS, len(mids)


def containment_offsets(io_segments: pl.DataFrame, executions: pl.DataFrame,
                        skip: pl.DataFrame) -> pl.DataFrame:
    """``clocks`` rows (domain darshan) for processes without markers: the shift of the DXT
    times that puts the most executor-thread segments inside their own thread's execution
    windows (of the best plateau, the point nearest zero; uncertainty = half its width). Needs thread ids
    on both sides; processes in ``skip`` (host, pid) already have an offset."""
    ex = executions.filter(pl.col("thread_id").is_not_null())
    seg = io_segments.filter(pl.col("thread_id").is_not_null()).join(
        skip.select("host", "pid"), on=["host", "pid"], how="anti", nulls_equal=True)
    procs = seg.select("host", "pid").unique().join(ex.select("host", "pid").unique(),
                                                    on=["host", "pid"], nulls_equal=True)
    rows = []
    seg_of = seg.partition_by("host", "pid", as_dict=True)
    ex_of = ex.partition_by("host", "pid", as_dict=True)
    for host, pid in procs.sort("host", "pid").iter_rows():
        if host is None or pid is None:  # (an equality with null holds for no row)
            continue
        found = _containment_offset(seg_of[(host, pid)], ex_of[(host, pid)])
        if found:
            rows.append({"host": host, "pid": pid, "offset_ns": found[0],
                         "uncertainty_ns": found[1], "samples": found[2]})
    if not rows:
        return TABLES["clocks"].empty()
    out = pl.DataFrame(rows).with_columns(
        domain=pl.lit("darshan"),
        method=pl.lit("estimated: shift that puts DXT thread segments inside their task "
                      "windows (no markers)"))
    return conform(out, TABLES["clocks"])


def shift_changes(before: pl.DataFrame, after: pl.DataFrame) -> tuple[int, int]:
    """The lowest and highest change of any row's ``worker_shift`` from clocks ``before`` to
    clocks ``after`` (0 among them: a row with no offset in either). A row's shift is its own
    process's offset, else its host's median, else 0: a process of either, one of every host
    with none of its own, and one of no host stand for every row."""
    procs = pl.concat([c.select("host", "pid") for c in (before, after)]).unique()
    rows = pl.concat([procs, procs.select("host").unique().with_columns(pid=pl.lit(-1, pl.Int64)),
                      pl.DataFrame({"host": [None], "pid": [-1]}, schema=procs.schema)])
    change = pl.col("change")
    low, high = (worker_shift(rows, after) - worker_shift(rows, before)).to_frame("change"
                                                                                ).select(
        low=pl.min_horizontal(change.min(), 0), high=pl.max_horizontal(change.max(), 0)).row(0)
    return low, high


def _offsets(clocks: pl.DataFrame, domain: str, name: str) -> pl.DataFrame:
    return clocks.filter(pl.col("domain") == domain).select("host", "pid",
                                                            pl.col("offset_ns").alias(name))


def _host_offsets(clocks: pl.DataFrame) -> pl.DataFrame:
    """Median worker offset per host: used for processes on that host without their own."""
    return (clocks.filter(pl.col("domain") == "worker").group_by("host")
            .agg(host_offset_ns=pl.col("offset_ns").median().round().cast(pl.Int64)))


def _shifts(df: pl.DataFrame, clocks: pl.DataFrame) -> pl.DataFrame:
    """Per row of ``df`` (same order): ``d_off`` (its process's Darshan offset, 0 if none) and
    ``w_off`` (its worker offset, else its host's median, else 0). Looked up once per run of
    rows of one process (rows come grouped by process) and repeated: joining ``df`` to the
    offsets would copy all of its columns."""
    runs = per_process.runs(df)
    if runs.height == 1:  # one process (an attribution partition: one per process of the run)
        return _one_process(runs.row(0, named=True), clocks)
    off = (runs
           .join(_offsets(clocks, "darshan", "d_off"), on=["host", "pid"], how="left",
                 nulls_equal=True, maintain_order="left")
           .join(_offsets(clocks, "worker", "w_off"), on=["host", "pid"], how="left",
                 nulls_equal=True, maintain_order="left")
           .join(_host_offsets(clocks), on="host", how="left", nulls_equal=True,
                 maintain_order="left"))
    per_run = off.with_columns(d_off=pl.col("d_off").fill_null(0),
                               w_off=pl.coalesce("w_off", "host_offset_ns", pl.lit(0, pl.Int64)))
    return per_process.spread(per_run, ["d_off", "w_off"])


def _one_process(run: dict[str, Any], clocks: pl.DataFrame) -> pl.DataFrame:
    """``_shifts`` of ``run["len"]`` rows of one process: the same lookups on the few clock
    rows of its host, without the joins (a run of a thousand processes has a thousand
    partitions, each aligning its segments and executions)."""
    host = clocks.filter(pl.col("host").eq_missing(pl.lit(run["host"], pl.String)))
    # (the first row of each domain, as the joins would take a process's only one)
    own = {domain: offset for pid, domain, offset in reversed(
        host.select("pid", "domain", "offset_ns").rows()) if pid == run["pid"]}
    d_off, w_off = own.get("darshan"), own.get("worker")
    if w_off is None:
        w_off = (host.filter(pl.col("domain") == "worker")
                 .select(pl.col("offset_ns").median().round().cast(pl.Int64)).item())
    return pl.DataFrame({"d_off": pl.repeat(d_off or 0, run["len"], dtype=pl.Int64,
                                            eager=True),
                         "w_off": pl.repeat(w_off or 0, run["len"], dtype=pl.Int64,
                                            eager=True)})


def worker_shift(df: pl.DataFrame, clocks: pl.DataFrame) -> pl.Series:
    """Per row of ``df``: what turns its process's local clock into the run timeline."""
    return _shifts(df, clocks).get_column("w_off")


def align_executions(executions: pl.DataFrame, clocks: pl.DataFrame) -> pl.DataFrame:
    """Add ``start_ns``/``stop_ns`` (run timeline) to executions."""
    shift = worker_shift(executions, clocks)
    return executions.with_columns(start_ns=pl.col("local_start_ns") + shift,
                                   stop_ns=pl.col("local_stop_ns") + shift)


def align_segments(io_segments: pl.DataFrame, clocks: pl.DataFrame) -> pl.DataFrame:
    """Add ``host_start_ns``/``host_stop_ns`` (Darshan times corrected onto the process's own
    ``time.time()`` clock, used for attribution) and ``start_ns``/``stop_ns`` (run timeline)."""
    off = _shifts(io_segments, clocks)
    d, w = off.get_column("d_off"), off.get_column("w_off")
    return io_segments.with_columns(
        host_start_ns=pl.col("local_start_ns") + d,
        host_stop_ns=pl.col("local_stop_ns") + d,
    ).with_columns(
        start_ns=pl.col("host_start_ns") + w,
        stop_ns=pl.col("host_stop_ns") + w,
    )
