"""The trace's critical-path process (``critical_path``; docs/findings.md), drawn apart from
the workers' tracks: "links" (a slice per link of the path, named by its key: its worker,
thread, gate, CPU and I/O in the args) and "waits before links" (a slice per wait between two
links, named by its largest cause). Follows a link from the path to its thread's track by key.
"""

from __future__ import annotations

import polars as pl

from correlate.findings.critical_path import WAIT_CAUSES
from correlate.reports.trace import perfetto as pf

#: trace pid of the critical-path process (beside the notes and arrivals processes)
PATH_PID = 999_997
LINKS_TID, WAITS_TID = 1, 2
_CAUSES = WAIT_CAUSES


def path_events(path: pl.DataFrame, t0: int, w0: int | None = None, w1: int | None = None
                ) -> list[pl.DataFrame]:
    """The critical-path process's metadata and slices, encoded as ``perfetto`` does (empty
    list: no path); ``w0``/``w1``: the trace's window (links starting in it)."""
    if w0 is not None and w1 is not None:
        path = path.filter((pl.col("start_ns") >= w0) & (pl.col("start_ns") < w1))
    if path.is_empty():
        return []
    pid, tid = pl.col("pid_t"), pl.col("tid_t")
    zero = {"ts_t": pl.lit(0.0), "dur_t": pl.lit(0.0)}
    proc = pl.DataFrame({"pid_t": [PATH_PID], "tid_t": [0], "name": ["critical path"]},
                        schema_overrides={"pid_t": pl.Int64, "tid_t": pl.Int64}).with_columns(
        **zero)
    tracks = pl.DataFrame({"tid_t": [LINKS_TID, WAITS_TID],
                           "name": ["links", "waits before links"]},
                          schema_overrides={"tid_t": pl.Int64}).with_columns(
        pid_t=pl.lit(PATH_PID, pl.Int64), **zero)
    meta = [
        pf._encode(proc, 0, name=pl.lit("process_name"), ph=pl.lit("M"), pid=pid, tid=tid,
                   args=pl.struct(name=pl.col("name"))),
        pf._encode(proc, 0, name=pl.lit("process_sort_index"), ph=pl.lit("M"), pid=pid,
                   tid=tid, args=pl.struct(sort_index=pl.lit(-1))),
        pf._encode(tracks, 0, name=pl.lit("thread_name"), ph=pl.lit("M"), pid=pid, tid=tid,
                   args=pl.struct(name=pl.col("name"))),
        pf._encode(tracks, 0, name=pl.lit("thread_sort_index"), ph=pl.lit("M"), pid=pid,
                   tid=tid, args=pl.struct(sort_index=tid))]
    links = pf._no_overlap(path.with_columns(s=pl.col("start_ns"), e=pl.col("stop_ns"),
                                             tid=pl.lit(LINKS_TID, pl.Int64)), ["tid"])
    links = links.with_columns(pid_t=pl.lit(PATH_PID, pl.Int64), tid_t="tid",
                               ts_t=pf._us("s", t0),
                               dur_t=(pf._us("e", t0) - pf._us("s", t0)).round(3))
    slices = pf._encode(links, 1, name=pl.col("key"), cat=pl.lit("critical path"),
                        ph=pl.lit("X"), ts=pl.col("ts_t"), dur=pl.col("dur_t"), pid=pid,
                        tid=tid, args=pl.struct("position", "prefix", "worker", "thread_id",
                                                "cpu_s", "io_time_s", "other_s",
                                                gate=pl.col("gate").cast(pl.String)))
    parts = [*meta, slices]
    waits = path.filter(pl.col("wait_s") > 0).with_columns(
        e=pl.col("start_ns"),
        # (a wait that began before the trace's first event is drawn from there)
        s=pl.max_horizontal(pl.col("start_ns") - (pl.col("wait_s") * 1e9).cast(pl.Int64),
                            pl.lit(t0, pl.Int64)),
        tid=pl.lit(WAITS_TID, pl.Int64),
        cause=pl.concat_list([pl.col(f"wait_{c}_s").fill_null(-1.0) for c in _CAUSES])
        .list.arg_max().replace_strict(list(range(len(_CAUSES))), list(_CAUSES)))
    if not waits.is_empty():
        waits = pf._no_overlap(waits, ["tid"]).with_columns(
            pid_t=pl.lit(PATH_PID, pl.Int64), tid_t="tid", ts_t=pf._us("s", t0),
            dur_t=(pf._us("e", t0) - pf._us("s", t0)).round(3))
        parts.append(pf._encode(
            waits, 1, name=pl.format("wait: {}", pl.col("cause")), cat=pl.lit("critical path"),
            ph=pl.lit("X"), ts=pl.col("ts_t"), dur=pl.col("dur_t"), pid=pid, tid=tid,
            args=pl.struct("wait_s", *(f"wait_{c}_s" for c in _CAUSES),
                           before=pl.col("key"))))
    return parts
