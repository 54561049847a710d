"""The trace's critical-path process (``critical_path``; docs/findings.md), drawn apart from
the workers' tracks: "links" (a slice per link of the path, named by its key: its worker,
thread, gate, CPU and I/O in the args) and "waits before links" (a slice per wait between two
links, named by its largest cause). Follows a link from the path to its thread's track by key.
"""

from __future__ import annotations

import polars as pl

from correlate.findings.critical_path import WAIT_CAUSES
from correlate.reports.trace.encode import encode, metadata, on_track

#: trace pid of the critical-path process (beside the notes and arrivals processes)
PATH_PID = 999_997
LINKS_TID, WAITS_TID = 1, 2
_CAUSES = WAIT_CAUSES


def path_events(path: pl.DataFrame, t0: int) -> list[pl.DataFrame]:
    """The critical-path process's metadata and slices of the links of ``path`` (those a
    bounded trace draws), encoded as ``perfetto`` does (empty list: no path)."""
    if path.is_empty():
        return []
    pid, tid = pl.col("pid_t"), pl.col("tid_t")
    proc = pl.DataFrame({"pid_t": [PATH_PID], "name": ["critical path"], "sort_index": [-1]},
                        schema_overrides={"pid_t": pl.Int64})
    tracks = pl.DataFrame({"tid_t": [LINKS_TID, WAITS_TID],
                           "name": ["links", "waits before links"]},
                          schema_overrides={"tid_t": pl.Int64}).with_columns(
        pid_t=pl.lit(PATH_PID, pl.Int64))
    links = on_track(path.with_columns(s=pl.col("start_ns"), e=pl.col("stop_ns"),
                                       tid=pl.lit(LINKS_TID, pl.Int64)), PATH_PID, t0)
    slices = encode(links, 1, name=pl.col("key"), cat=pl.lit("critical path"),
                        ph=pl.lit("X"), ts=pl.col("ts_t"), dur=pl.col("dur_t"), pid=pid,
                        tid=tid, args=pl.struct("position", "prefix", "worker", "thread_id",
                                                "cpu_s", "io_time_s", "other_s",
                                                gate=pl.col("gate").cast(pl.String)))
    parts = [metadata(proc, tracks), slices]
    waits = path.filter(pl.col("wait_s") > 0).with_columns(
        e=pl.col("start_ns"),
        # (a wait that began before the trace's first event is drawn from there)
        s=pl.max_horizontal(pl.col("start_ns") - (pl.col("wait_s") * 1e9).cast(pl.Int64),
                            pl.lit(t0, pl.Int64)),
        tid=pl.lit(WAITS_TID, pl.Int64),
        cause=pl.concat_list([pl.col(f"wait_{c}_s").fill_null(-1.0) for c in _CAUSES])
        .list.arg_max().replace_strict(list(range(len(_CAUSES))), list(_CAUSES)))
    if not waits.is_empty():
        parts.append(encode(
            on_track(waits, PATH_PID, t0), 1, name=pl.format("wait: {}", pl.col("cause")), cat=pl.lit("critical path"),
            ph=pl.lit("X"), ts=pl.col("ts_t"), dur=pl.col("dur_t"), pid=pid, tid=tid,
            args=pl.struct("wait_s", *(f"wait_{c}_s" for c in _CAUSES),
                           before=pl.col("key"))))
    return parts
