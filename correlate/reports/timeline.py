"""Timeline geometry shared by the PNG figure, the HTML page and (lanes only) the trace.

``task_bars`` places every execution on its lane with times relative to ``t0``;
``sample_bars`` keeps at most ``limit`` of them (the longest half, then a uniform stride over
the rest, so the picture keeps its shape) and says how many it dropped; ``io_bars`` places DXT
segments on the lane of their thread, exactly when there are few, otherwise merged into
fixed-width time bins per lane and operation (the note says so).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import polars as pl

from correlate.reports.aggregate import LANE_KEYS, SLOT_KEYS, with_slots

#: what ``task_bars`` reads of the tasks (a filter or join of every column copied all of it)
BAR_COLUMNS = ["execution_id", *SLOT_KEYS, "start_ns", "stop_ns", "cpu_s"]


@dataclass(frozen=True)
class Sampled:
    """A frame that may have been reduced, and how."""

    frame: pl.DataFrame
    total: int
    #: how the frame was reduced ("" when it holds every row)
    note: str = ""


def task_bars(tasks: pl.DataFrame, lanes: pl.DataFrame, t0: int) -> pl.DataFrame:
    """Timed executions (``tasks`` as drawn: a coroutine's slices) with their lane and ns
    offsets from ``t0``: ``execution_id, lane, start, stop, cpu_s``. What a picture says of
    the bars it draws is added to those only (``with_details``): ten million executions'
    keys and prefixes are not copied to draw twenty thousand."""
    t = with_slots(tasks.select(BAR_COLUMNS).filter(pl.col("start_ns").is_not_null()
                                                    & pl.col("stop_ns").is_not_null()))
    t = t.join(lanes.select(*LANE_KEYS, "lane"), on=list(LANE_KEYS), how="left",
               nulls_equal=True)
    return t.select(
        "execution_id", "lane", start=pl.col("start_ns") - t0,
        stop=pl.max_horizontal("stop_ns", "start_ns") - t0, cpu_s="cpu_s",
    ).sort("lane", "start", "execution_id")


def with_details(bars: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """``bars`` with their execution's key, prefix, bytes read and written, I/O time and
    status."""
    return bars.join(tasks.select("execution_id", "key", pl.col("prefix").fill_null("?"),
                                  "read_bytes", "write_bytes", "status", io_s="io_time_s"),
                     on="execution_id", how="left", maintain_order="left")


def sample_bars(bars: pl.DataFrame, limit: int) -> Sampled:
    """At most ``limit`` bars: the longest ``limit // 2``, then every k-th of the rest."""
    n = bars.height
    if n <= limit:
        return Sampled(bars, n)
    longest = bars.with_columns(d=pl.col("stop") - pl.col("start")).sort(
        "d", "execution_id", descending=[True, False]).head(limit // 2).drop("d")
    rest = bars.join(longest.select("execution_id"), on="execution_id", how="anti")
    step = max(1, -(-rest.height // (limit - longest.height)))
    sample = rest.sort("execution_id").gather_every(step)
    kept = pl.concat([longest, sample]).sort("lane", "start", "execution_id")
    note = (f"showing {kept.height:,} of {n:,} task executions (the {longest.height:,} "
            f"longest plus one in {step} of the others)")
    return Sampled(kept, n, note)


#: what ``io_bars`` uses of the segments
THREAD_KEYS = ["host", "pid", "thread_id"]
IO_BAR_COLUMNS = [*THREAD_KEYS, "execution_id", "start_ns", "stop_ns", "op", "length", "path"]


def io_bars(segments: pl.DataFrame | pl.LazyFrame, lanes: pl.DataFrame, bars: pl.DataFrame,
            t0: int, t1: int, limit: int) -> Sampled:
    """DXT segments on task lanes (threads that ran no task are left out; segments without a
    thread id, or of a thread without a lane given to an execution on a ``thread ?`` lane,
    go to the lane of the execution holding them), as
    ``lane, op, start, stop, bytes, ops, path`` relative to ``t0``; merged per time bin when
    there are more than ``limit``. ``segments`` may be a scan: the bins are then summed while
    reading, and a large run's segments are never held whole."""
    threads = lanes.filter(pl.col("slot").is_null()).select(*THREAD_KEYS, "lane")
    s = segments.lazy().select(IO_BAR_COLUMNS).join(threads.lazy(), on=THREAD_KEYS,
                                                     how="left")
    # an execution on a ``thread ?`` lane (thread unknown) shows the I/O given to it there
    slotted = lanes.filter(pl.col("slot").is_not_null()).get_column("lane").implode()
    by_exec = bars.select("execution_id", exec_lane="lane",
                          slotted=pl.col("lane").is_in(slotted)).unique("execution_id")
    s = s.join(by_exec.lazy(), on="execution_id", how="left").with_columns(
        lane=pl.coalesce("lane", pl.when(pl.col("thread_id").is_null()
                                         | pl.col("slotted").fill_null(False))
                         .then(pl.col("exec_lane")))).filter(pl.col("lane").is_not_null())
    s = s.filter((pl.col("stop_ns") >= t0) & (pl.col("start_ns") <= t1)).select(
        "lane", pl.col("op").cast(pl.String), start=pl.col("start_ns") - t0,
        stop=pl.col("stop_ns") - t0, bytes=pl.col("length").cast(pl.Float64),
        ops=pl.lit(1, pl.Int64), path="path", execution_id="execution_id")
    nlanes = max(1, lanes.height)
    nbins = max(100, min(4000, limit // (2 * nlanes)))
    binned, total = _binned(s, max(1, -(-(t1 - t0) // nbins)), nbins)
    if total <= limit:
        exact = s.collect().sort("lane", "start", "op", "path", nulls_last=True)
        return Sampled(exact, exact.height)
    return binned


def _binned(s: pl.LazyFrame, width: int, nbins: int) -> tuple[Sampled, int]:
    """Per lane × operation × time bin: bytes, ops and time inside I/O calls; drawn as a bar
    at the bin's start whose width is that I/O time (at most the bin width), so the picture
    keeps how much of each stretch went to I/O. A segment counts in the bin it starts in.
    Also the number of segments binned."""
    binned = s.select("lane", "op", "bytes", "ops",
                      bin=(pl.col("start") // width).clip(0, nbins - 1),
                      busy=pl.col("stop") - pl.col("start"))
    per_bin = binned.group_by("lane", "op", "bin").agg(
        bytes=pl.col("bytes").sum(), ops=pl.col("ops").sum(), busy=pl.col("busy").sum()
    ).collect(engine="streaming")
    total = int(per_bin["ops"].sum())
    frame = per_bin.select(
        "lane", "op", start=pl.col("bin") * width,
        stop=pl.col("bin") * width + pl.col("busy").clip(1, width), bytes="bytes", ops="ops",
        path=pl.lit(None, pl.String), execution_id=pl.lit(None, pl.Int64))
    frame = frame.sort("lane", "start", "op")
    note = (f"{total:,} I/O segments merged into {frame.height:,} bins of "
            f"{width / 1e6:.3g} ms per thread and operation (bar width = time in I/O)")
    return Sampled(frame, total, note), total


#: colours for prefixes in order of wall time (tab20-like, colour-blind-friendlier first)
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295", "#8cd17d", "#b6992d",
           "#a0cbe8", "#ffbe7d", "#499894", "#f1ce63", "#d4a6c8", "#fabfd2")
OTHER_COLOUR = "#c8c8c8"
IO_COLOURS = {"read": "#1b1b1b", "write": "#c2185b"}


def prefix_colours(prefix_names: list[str]) -> dict[str, str]:
    """Colour per prefix: the first ``len(PALETTE)`` (heaviest first) get their own colour,
    the rest share ``OTHER_COLOUR``. A prefix's colour is chosen by a hash of its name (the
    next free one when a heavier prefix holds it), so the same prefix has the same colour in
    two reports side by side, whatever else ran."""
    free = list(range(len(PALETTE)))
    out = {}
    for p in prefix_names:
        if not free:
            out[p] = OTHER_COLOUR
            continue
        want = zlib.crc32(p.encode("utf-8")) % len(PALETTE)
        slot = min(free, key=lambda i: (i - want) % len(PALETTE))
        free.remove(slot)
        out[p] = PALETTE[slot]
    return out
