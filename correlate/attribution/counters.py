"""I/O of processes whose Darshan log has no DXT trace (how most HPC centres run Darshan): the
POSIX counters per file and process (bytes, calls, time in the calls, and the times of the
first and last read and write) are all there is. The process and file totals are exact; what
each task moved is inferred, and the method says how.

Each POSIX record (process × file × operation) with bytes is given, in this order of evidence:

- ``counter-file``: whole, to the one execution of the process whose context opened the file in
  a mode that allows the operation (the collectors' record of opens, as for C stdio) and whose
  window holds the record's first and last call (within the process's clock uncertainty);
- ``counter-split``: otherwise across those openers, by when the bytes moved: the record's span
  (first to last call) is cut at the openers' window edges and at the HEATMAP bin edges; each
  piece carries the bytes the process's HEATMAP bins put in it (uniform in time without a
  HEATMAP), shared equally among the openers running then. The part of the span no opener ran
  in stays unattributed;
- ``counter-window``: a run with no record of opens (imported runs): the same time rule over
  every execution of the process, since nothing says which of them touched the file;
- otherwise unattributed, with its reason (no task opened it; its calls lie outside every
  opener's window; not a worker's).

A Dask spill file (``<local_directory>/storage/<quoted key>#<n>``) is none of these: its
counters are the spill of the key its name carries (``spill.storage_keys``), whoever ran then.

The time rule assumes a file's bytes moved at the process's HEATMAP rate (or evenly) over its
span: a stated estimate, never presented as exact.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from correlate.attribution import local_dir, spill
from correlate.attribution.passes import Run, Untraced, untraced_pass
from correlate.attribution.shares import (
    METHOD,
    darshan_records,
    not_a_tasks_reason,
    openers,
    time_shares,
)
from correlate.frames.scalars import total
from correlate.sources import darshan_logs

#: what the unattributed reasons call it
NOT_TRACED = "POSIX counters (no DXT trace)"

_FILES_SCHEMA = pl.Schema({"execution_id": pl.Int64, "path": pl.String, "op": pl.String,
                           "bytes": pl.Float64, "ops": pl.Float64, "io_time_s": pl.Float64,
                           "attribution": METHOD})
_RECORD = ["host", "pid", "path", "op"]


def untraced_counters(counters: pl.DataFrame, logs: pl.DataFrame) -> pl.DataFrame:
    """The POSIX counter rows of the logs that hold no DXT_POSIX segment: their bytes reach no
    segment, so the counters are their only account."""
    traced = logs.filter(pl.col("modules").list.contains("DXT_POSIX")
                         & (pl.col("segment_count").fill_null(0) > 0))
    posix = counters.filter(pl.col("module") == "POSIX")
    if traced.is_empty():
        return posix
    return posix.join(traced.select(pl.col("log").cast(pl.String)).unique(),
                      left_on=pl.col("log").cast(pl.String), right_on="log", how="anti")


def counter_totals(counters: pl.DataFrame) -> dict[str, float]:
    """bytes, ops and time of these counter rows (``untraced_counters``)."""
    return {"bytes": total(counters["read_bytes"]) + total(counters["write_bytes"]),
            "ops": total(counters["read_ops"]) + total(counters["write_ops"]),
            "io_time_s": (total(counters["read_time_s"].fill_null(0))
                          + total(counters["write_time_s"].fill_null(0)))}


def _holders(cand: pl.DataFrame) -> pl.DataFrame:
    """Records that exactly one candidate's window holds whole (within ``slack_ns``)."""
    holds = ((pl.col("local_start_ns") - pl.col("slack_ns") <= pl.col("first_ns"))
             & (pl.col("last_ns") <= pl.col("local_stop_ns") + pl.col("slack_ns")))
    per = cand.group_by(*_RECORD, "execution_id").agg(holds.any().alias("holds"))
    one = per.filter(pl.col("holds")).filter(pl.len().over(_RECORD) == 1)
    return one.select(*_RECORD, "execution_id")


Candidates = Callable[[dict], tuple[np.ndarray, np.ndarray, np.ndarray] | None]


def _split(rec: pl.DataFrame, candidates: Candidates, heat: pl.DataFrame) -> pl.DataFrame:
    """(record…, execution_id, weight) by ``time_shares`` over each record's candidate windows
    (``candidates(record)``: starts, stops, execution ids)."""
    bins = {k: (g["bin_start_ns"].to_numpy(), g["bin_stop_ns"].to_numpy(),
                g["bytes"].to_numpy())
            for k, g in heat.sort("bin_start_ns").partition_by("host", "pid", "op",
                                                                as_dict=True).items()}
    rows, ids, shares = [], [], []
    for i, r in enumerate(rec.iter_rows(named=True)):
        got = None if r["first_ns"] is None else candidates(r)
        if got is None or not len(got[0]):
            continue
        shares.append(time_shares(r["first_ns"], r["last_ns"], got[0], got[1],
                                  bins.get((r["host"], r["pid"], r["op"]))))
        ids.append(got[2])
        rows.append(np.full(len(got[2]), i))
    if not rows:
        return rec.select(_RECORD).head(0).with_columns(
            execution_id=pl.lit(None, pl.Int64), weight=pl.lit(None, pl.Float64))
    # an execution with several windows (a coroutine's slices) sums them
    split = pl.DataFrame({"row": np.concatenate(rows), "execution_id": np.concatenate(ids),
                          "weight": np.concatenate(shares)}).group_by("row", "execution_id").agg(
        pl.col("weight").sum()).filter(pl.col("weight") > 0)
    return split.join(rec.select(_RECORD).with_row_index("row").with_columns(
        pl.col("row").cast(split.schema["row"])), on="row").select(
        *_RECORD, pl.col("execution_id").cast(pl.Int64), "weight")


def _of_openers(cand: pl.DataFrame) -> Candidates:
    """Candidates of a record: its openers' windows (``cand`` rows)."""
    groups = {k: (g["local_start_ns"].to_numpy(), g["local_stop_ns"].to_numpy(),
                  g["execution_id"].to_numpy())
              for k, g in cand.partition_by(*_RECORD, as_dict=True).items()}
    return lambda r: groups.get(tuple(r[c] for c in _RECORD))


def _of_process(executions: pl.DataFrame, win: pl.DataFrame) -> Candidates:
    """Candidates of a record: the windows of its process's executions that overlap its span
    (within the clock's slack), found by a binary search over the windows in start order."""
    ex = executions.select("host", "pid", "execution_id").join(win, on="execution_id").sort(
        "local_start_ns")
    procs = {k: (g["local_start_ns"].to_numpy(), g["local_stop_ns"].to_numpy(),
                 g["execution_id"].to_numpy())
             for k, g in ex.partition_by("host", "pid", as_dict=True).items()}

    def of(r: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        p = procs.get((r["host"], r["pid"]))
        if p is None:
            return None
        n = np.searchsorted(p[0], r["last_ns"] + r["slack_ns"], side="right")
        keep = p[1][:n] + r["slack_ns"] >= r["first_ns"]
        return p[0][:n][keep], p[1][:n][keep], p[2][:n][keep]
    return of


def _heat(heatmap: pl.DataFrame, rec: pl.DataFrame) -> pl.DataFrame:
    """The POSIX heatmap bins of the records' processes, shifted by their clock offsets like
    the records (host filled from the records: a HEATMAP has no host of its own)."""
    if heatmap.is_empty():
        return pl.DataFrame(schema={"host": pl.String, "pid": pl.Int64, "op": pl.String,
                                    "bin_start_ns": pl.Int64, "bin_stop_ns": pl.Int64,
                                    "bytes": pl.Float64})
    procs = rec.select("host", "pid", "offset_ns").unique(["host", "pid"])
    return heatmap.filter(pl.col("module") == "POSIX").join(procs, on="pid").select(
        "host", "pid", "op", pl.col("bin_start_ns") + pl.col("offset_ns"),
        pl.col("bin_stop_ns") + pl.col("offset_ns"), "bytes")


def attribute_counters(counters: pl.DataFrame, heatmap: pl.DataFrame, opens: pl.DataFrame,
                       executions: pl.DataFrame, processes: pl.DataFrame, clocks: pl.DataFrame,
                       windows: pl.DataFrame | None = None,
                       markers: pl.DataFrame | None = None
                       ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(task_files rows without ``key``, unattributed rows, spill per key as
    ``spill.spill_io`` gives it) of POSIX counter rows (``untraced_counters``); ``heatmap`` as
    ``darshan_logs.read_heatmap`` gives it (any number of logs); ``windows`` as for
    ``stdio_io.attribute_stdio``; ``markers`` the collectors' clock marker writes (their file
    is no task's). A spill file's counters are the spill of the key its name carries (written,
    read back), never a task's I/O: no time rule shares them out."""
    rec = darshan_records(counters, processes, clocks, module="POSIX", keep_offset=True)
    rec, marked, spilled = _no_task_files(rec, markers, processes, executions)
    if rec.is_empty():
        return (pl.DataFrame(schema=_FILES_SCHEMA),
                pl.concat([_unattributed(rec, processes), marked]), spilled)
    win = (executions if windows is None else windows).select(
        "execution_id", "local_start_ns", "local_stop_ns")
    with_opens = not opens.is_empty()
    if with_opens:
        who = openers(opens, executions).select(*_RECORD, "execution_id")
        cand = rec.join(who, on=_RECORD, nulls_equal=True).join(win, on="execution_id")
        cand = cand.filter(  # windows that overlap the span (with the clock's slack)
            (pl.col("local_start_ns") - pl.col("slack_ns") <= pl.col("last_ns"))
            & (pl.col("first_ns") <= pl.col("local_stop_ns") + pl.col("slack_ns")))
        whole = _holders(cand)
        split = _split(rec.join(whole, on=_RECORD, how="anti", nulls_equal=True),
                       _of_openers(cand.join(whole, on=_RECORD, how="anti",
                                             nulls_equal=True)), _heat(heatmap, rec))
        method = "counter-split"
    else:  # nothing says who touched the file: every execution of the process running then
        whole = rec.select(*_RECORD).head(0).with_columns(execution_id=pl.lit(None, pl.Int64))
        split = _split(rec, _of_process(executions, win), _heat(heatmap, rec))
        who = split.select(*_RECORD, "execution_id")
        method = "counter-window"
    given = pl.concat([whole.with_columns(weight=pl.lit(1.0),
                                          attribution=pl.lit("counter-file")),
                       split.with_columns(attribution=pl.lit(method))])
    files = rec.join(given, on=_RECORD, nulls_equal=True).select(
        "execution_id", "path", "op",
        *(pl.col(c) * pl.col("weight") for c in ("bytes", "ops", "io_time_s")),
        attribution=pl.col("attribution").cast(METHOD))
    left = _left_over(rec, given, who, with_opens)
    return (files.cast(_FILES_SCHEMA), pl.concat([_unattributed(left, processes), marked]),
            spilled)


def _no_task_files(rec: pl.DataFrame, markers: pl.DataFrame | None, processes: pl.DataFrame,
                   executions: pl.DataFrame
                   ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The records a task may have made; the unattributed rows of those no task made (the
    collectors' clock markers, spill files); the spill per key (``spill.counter_spill_io``)."""
    marked = (rec.head(0) if markers is None or markers.is_empty() else rec.filter(
        pl.col("path").is_in(markers.get_column("path").unique().implode())))
    rec = rec.join(marked.select(_RECORD), on=_RECORD, how="anti", nulls_equal=True)
    marked = _unattributed(marked.with_columns(why=pl.lit("collector clock marker")),
                           processes).with_columns(reason=pl.lit("collector clock marker"))
    keys = spill.storage_keys(rec, processes, executions.get_column("key"))
    spilled = spill.counter_spill_io(rec, keys)
    marked = pl.concat([marked, _unattributed(rec.filter(keys.is_not_null()), processes)
                        .with_columns(reason=pl.lit(local_dir.SPILL))])
    return rec.filter(keys.is_null()), marked, spilled


def _left_over(rec: pl.DataFrame, given: pl.DataFrame, who: pl.DataFrame, with_opens: bool
               ) -> pl.DataFrame:
    """What of each record no execution was given (``given``'s weights), with why."""
    taken = given.group_by(_RECORD).agg(pl.col("weight").sum())
    left = rec.join(taken, on=_RECORD, how="left", nulls_equal=True).with_columns(
        left=(1 - pl.col("weight").fill_null(0)).clip(0)).filter(pl.col("left") > 1e-12)
    opened = who.select(_RECORD).unique()
    left = left.join(opened.with_columns(opened=pl.lit(True)), on=_RECORD, how="left",
                     nulls_equal=True)
    why = (pl.when(pl.col("first_ns").is_null()).then(pl.lit("no time of its calls recorded"))
           .when(pl.col("opened").is_null()).then(
               pl.lit("no task opened the file for it in Python" if with_opens
                      else "no task of the process ran then"))
           .otherwise(pl.lit("outside every window of the executions that could have done "
                             "it")))
    return left.with_columns(*(pl.col(c) * pl.col("left") for c in ("bytes", "ops",
                                                                     "io_time_s")), why=why)


def _unattributed(rec: pl.DataFrame, processes: pl.DataFrame) -> pl.DataFrame:
    """``unattributed`` rows of what the counters gave no execution, with why."""
    procs = processes.select("host", "pid", pl.col("role").cast(pl.String),
                             "local_directory").unique(["host", "pid"])
    if "why" not in rec.columns:
        rec = rec.with_columns(why=pl.lit("", pl.String))
    rem = rec.join(procs, on=["host", "pid"], how="left", nulls_equal=True)
    reason = not_a_tasks_reason(pl.concat_str(pl.lit(f"{NOT_TRACED}: "), pl.col("why")))
    return rem.select("host", "pid", role=pl.col("role").fill_null("unknown"),
                      thread_kind=pl.lit("no-thread-id"), reason=reason, path="path",
                      op="op", bytes="bytes", ops="ops", io_time_s="io_time_s")


def _heatmaps(logs: pl.DataFrame, untraced: pl.DataFrame) -> pl.DataFrame:
    """The HEATMAP bins of the logs whose POSIX counters are attributed without DXT."""
    wanted = set(untraced.get_column("log").cast(pl.String).unique().to_list())
    paths = logs.filter(pl.col("modules").list.contains("HEATMAP")).get_column("log").cast(
        pl.String).to_list()
    got = [darshan_logs.read_heatmap(p) for p in paths if p in wanted]
    return (pl.concat(got) if got
            else pl.DataFrame(schema=darshan_logs.HEATMAP_SCHEMA))


@untraced_pass("counter-file")
def counter_pass(given: Run) -> Untraced | None:
    """``attribute_counters`` as the attribution's pass: the POSIX counters of the logs
    without DXT (none: nothing to do)."""
    if given.counted.is_empty():
        return None
    frames = given.frames
    files, unattributed, spilled = attribute_counters(
        given.counted, _heatmaps(frames.darshan_logs, given.counted), frames.file_opens,
        given.executions, frames.processes, given.clocks, given.windows, frames.clock_markers)
    return Untraced(files, unattributed, spilled)
