"""``summary.json``: totals and shares of I/O and CPU, clocks, matched processes, warnings and
rejected records. Built from the output tables only (plus the run facts), so it is consistent
with them by construction.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate import host_load
from correlate.attribution import doubtful, local_dir, p2p
from correlate.attribution.counters import untraced_counters
from correlate.frames.grouping import group_agg, measured_sum, request_means, request_sums
from correlate.frames.per_process import runs, spread
from correlate.frames.scalars import count as _count
from correlate.frames.scalars import rounded as _round
from correlate.frames.scalars import total as total_of
from correlate.outcome import Seen, job_outcome
from correlate.schema.methods import AGAINST_RECORD
from correlate.sources.darshan_logs import incomplete_logs
from correlate.sources.frames import RunFrames
from correlate.timeline import endings, lost, spans


def _totals(d: dict[str, Any]) -> dict[str, Any]:
    return {k: _count(v) if k in ("bytes", "ops") else _round(v) for k, v in d.items()}


def _per_process(tables: dict[str, pl.DataFrame]) -> list[dict[str, Any]]:
    """Bytes read and written per process, attributed or not (every source's I/O is in
    task_files or unattributed), busiest first."""
    # (each task_files row given the number of its execution's run of one process's rows
    # in tasks, not that process's host and pid: the rows are a big run's largest table)
    tasks = tables["tasks"]
    procs = runs(tasks).with_row_index("run")
    ids = tasks.select("execution_id", run=spread(procs, ["run"]).get_column("run"))
    files = tables["task_files"].select("execution_id", "op", "bytes", "ops").join(
        ids, on="execution_id", how="left")

    def of(op: str) -> pl.Expr:
        return pl.col("bytes").filter(pl.col("op") == op).sum()

    sums = {"read_bytes": of("read"), "write_bytes": of("write"), "ops": pl.col("ops").sum()}
    per_run = files.group_by("run").agg(**sums).join(
        procs.select("run", "host", "pid"), on="run", how="left")
    per = pl.concat([per_run.drop("run"), tables["unattributed"].group_by("host", "pid").agg(
        **sums)], how="diagonal_relaxed").group_by("host", "pid").agg(
        pl.col("read_bytes", "write_bytes", "ops").sum())
    per = per.sort(pl.col("read_bytes") + pl.col("write_bytes"), "host", "pid",
                   descending=[True, False, False], nulls_last=True)
    return [{"host": h, "pid": p, "read_bytes": _count(r), "write_bytes": _count(w),
             "ops": _count(o)} for h, p, r, w, o in per.rows()]


def _io_totals(tables: dict[str, pl.DataFrame], segment_totals: pl.DataFrame,
               stdio: dict[str, float], counters: dict[str, float]) -> dict[str, Any]:
    seg = segment_totals
    # DXT segments, the C stdio bytes Darshan counts per file (DXT traces no stdio call) and
    # the POSIX counters of the processes whose logs have no DXT
    total = {"bytes": total_of(seg["bytes"]) + stdio["bytes"] + counters["bytes"],
             "ops": total_of(seg["segments"]) + stdio["ops"] + counters["ops"],
             "io_time_s": (total_of(seg["io_time_ns"]) / 1e9 + stdio["io_time_s"]
                           + counters["io_time_s"])}
    files, un = tables["task_files"], tables["unattributed"]
    attributed = {"bytes": total_of(files["bytes"]), "ops": total_of(files["ops"]),
                  "io_time_s": total_of(files["io_time_s"])}
    unattr = {"bytes": total_of(un["bytes"]), "ops": total_of(un["ops"]),
              "io_time_s": total_of(un["io_time_s"])}
    methods = (seg.group_by("attribution").agg(pl.col("segments").sum()).sort("attribution")
               .rows_by_key("attribution", unique=True))
    # grouped on the Enum (no string per row of the largest table), named in name order after
    by_method = group_agg(files, ["attribution"], bytes=pl.col("bytes").sum(),
                          ops=pl.col("ops").sum())
    by_method = by_method.with_columns(pl.col("attribution").cast(pl.String)).sort(
        "attribution", nulls_last=True)
    reasons = (un.group_by("reason").agg(bytes=pl.col("bytes").sum(), ops=pl.col("ops").sum())
               .sort("bytes", descending=True))
    by_destination = _destinations(total["bytes"], attributed["bytes"], by_method, reasons)
    return {
        "per_process": _per_process(tables),
        "total": _totals(total),
        "attributed": _totals(attributed),
        "unattributed": _totals(unattr),
        # the one share of bytes given to tasks, in every output: the tasks' own I/O
        # (``by_destination``), without the P2P shard writes accounted at a shuffle's barrier
        # (which ``attributed`` holds, beside ``unattributed``, so that the two add up)
        "attributed_bytes_share": by_destination["tasks"]["share"],
        "segments_by_method": {k: v[0] for k, v in methods.items()},
        # bytes and ops each method gave to tasks (a segment shared by several methods' rules
        # never is: one segment, one method)
        "attributed_by_method": {m: {"bytes": _count(b), "ops": _count(o)}
                                 for m, b, o in by_method.rows()},
        "unattributed_by_reason": [
            {"reason": r, "bytes": _count(b), "ops": _count(o)} for r, b, o in reasons.rows()],
        "by_destination": by_destination,
    }


def _io(tables: dict[str, pl.DataFrame], segment_totals: pl.DataFrame,
        stdio: dict[str, float], counters: dict[str, float], captured: bool
        ) -> dict[str, Any]:
    """The I/O totals; without a Darshan log every figure is null (unknown), never 0."""
    io = {**_io_totals(tables, segment_totals, stdio, counters), "captured": captured,
          "stdio": _totals(stdio), "posix_counters_without_dxt": _totals(counters)}
    if captured:
        return io
    unknown = {"bytes": None, "ops": None, "io_time_s": None}
    return {**io, **{k: dict(unknown) for k in ("total", "attributed", "unattributed",
                                                "stdio", "posix_counters_without_dxt")},
            "by_destination": None}


#: unattributed reasons that name what the bytes were, though no task's: the collector's own
#: markers, processes that run no task, files of a worker's directory that are Dask's own
KNOWN_NOT_TASKS = ("collector clock marker", "process is not a known Dask process",
                   local_dir.LOCK, local_dir.FOLDER, local_dir.OTHER, doubtful.MISPLACED)


def _destinations(total: float, attributed: float, by_method: pl.DataFrame,
                  reasons: pl.DataFrame) -> dict[str, Any]:
    """Where the bytes went, adding up to the total: ``tasks`` (given to executions by their
    threads, files or windows), ``shuffles`` (P2P shard I/O given to its shuffle's owner, or in
    a shuffle folder and held by no task), ``spill`` (Dask's spill store), ``not_tasks`` (known
    and no task's: other processes, the collector's markers, the worker directory's own
    files) and ``unexplained`` (the rest: outside any task, …; ``unattributed_by_reason``)."""
    def method(m: str) -> float:
        return float(by_method.filter(pl.col("attribution") == m).get_column("bytes").sum())

    def reason(r: pl.Expr) -> float:
        return float(reasons.filter(r).get_column("bytes").sum())
    why = pl.col("reason")
    shuffles = method(p2p.METHOD_NAME) + reason(why == local_dir.P2P)
    spill = reason(why == local_dir.SPILL)
    known = reason(why.is_in(KNOWN_NOT_TASKS) | why.str.ends_with(" process"))
    unattributed = float(reasons.get_column("bytes").sum())
    parts = {"tasks": attributed - method(p2p.METHOD_NAME), "shuffles": shuffles,
             "spill": spill, "not_tasks": known,
             "unexplained": unattributed - reason(why == local_dir.P2P) - spill - known}
    return {k: {"bytes": _count(v), "share": _round(v / total, 4) if total else None}
            for k, v in parts.items()}


def _cpu_per_worker(tasks: pl.DataFrame, samples: pl.DataFrame) -> list[dict[str, Any]]:
    """Per worker process: its whole CPU (last sample), CPU inside task executions and the
    rest (event loop, communication, start-up, profiler and other threads)."""
    proc = (samples.filter(pl.col("process_cpu_s").is_not_null())
            .group_by("host", "pid").agg(process_cpu_s=pl.col("process_cpu_s").max()))
    if proc.is_empty():
        return []
    in_tasks = group_agg(tasks, ["host", "pid"], worker=pl.col("worker").drop_nulls().first(),
                         executions=pl.len(), task_cpu_s=measured_sum("cpu_s"))
    # a process that ran no task spent none of its CPU in tasks; one whose executions have no
    # CPU measured has an unknown split
    rows = proc.join(in_tasks, on=["host", "pid"], how="left").with_columns(
        task_cpu_s=pl.when(pl.col("executions").is_null()).then(0.0)
        .otherwise(pl.col("task_cpu_s"))).with_columns(
        outside_tasks_cpu_s=pl.col("process_cpu_s") - pl.col("task_cpu_s")).drop("executions")
    return [{k: (_round(v) if isinstance(v, float) else v) for k, v in r.items()}
            for r in rows.sort("host", "pid").iter_rows(named=True)]


def _cpu(tasks: pl.DataFrame, samples: pl.DataFrame) -> dict[str, Any]:
    # (columns filtered, not the table: a filter copies every column of a big run's tasks)
    measured = tasks.get_column("cpu_s").drop_nulls()
    return {
        "executions_with_cpu": measured.len(),
        "executions": tasks.height,
        "task_cpu_s": _round(measured.sum()) if measured.len() else None,
        # runs' wall: an execution handed back is in ``handed_back`` (its CPU stays in
        # ``task_cpu_s``: its thread did spend it inside a task)
        "task_wall_s": _round(tasks.select(pl.col("duration_s").filter(endings.is_run()))
                              .to_series().sum()),
        "per_worker": _cpu_per_worker(tasks, samples),
    }


def _top(tasks: pl.DataFrame, by: str, n: int = 10) -> list[dict[str, Any]]:
    agg = group_agg(  # runs only: an execution handed back is not a run of its task
        tasks, ["prefix"], endings.is_run(), executions=pl.len(),
        wall_s=pl.col("duration_s").sum(),
        cpu_s=measured_sum("cpu_s"), **request_sums(), io_time_s=measured_sum("io_time_s")
    ).with_columns(**request_means())
    rows = agg.sort(by, "prefix", descending=[True, False], nulls_last=True).head(n)
    return [{k: (_round(v) if isinstance(v, float) else v) for k, v in r.items()}
            for r in rows.iter_rows(named=True)]


def _spill_per_worker(spilled: pl.DataFrame | None) -> list[dict[str, Any]]:
    """Per worker process that spilled: keys, bytes written and read back, and their time."""
    if spilled is None or spilled.is_empty():
        return []

    def by_op(op: str, col: str) -> pl.Expr:
        return pl.col(col).filter(pl.col("op") == op).sum()
    per = spilled.group_by("host", "pid").agg(
        keys=pl.col("key").n_unique(), spilled_bytes=by_op("write", "bytes"),
        spill_write_s=by_op("write", "io_time_s"), unspilled_bytes=by_op("read", "bytes"),
        unspill_read_s=by_op("read", "io_time_s")).sort("host", "pid", nulls_last=True)
    return [{k: (_round(v) if isinstance(v, float) and k.endswith("_s") else
                 _count(v) if k.endswith("_bytes") else v) for k, v in r.items()}
            for r in per.iter_rows(named=True)]


def _spill(tasks: pl.DataFrame, frames: RunFrames,
           spilled: pl.DataFrame | None = None) -> dict[str, Any]:
    """Spill totals and where each figure came from; the figures read from Darshan's spill
    file segments are null (unknown) in a run whose Darshan logs traced no operation."""
    source = spill_source(frames)
    known = source is not None
    written = int((tasks.get_column("spill_writes") > 0).sum())  # (nulls: not counted)

    def total(col: str) -> float | None:
        return total_of(tasks[col]) if known else None

    return {
        "source": {"bytes_and_times": source if known
                   else "unknown (no DXT trace)" if io_captured(frames)
                   else "unknown (no Darshan logs)",
                   "input_read_back_s": "dask startstops (disk-read)"},
        "keys_spilled": written if known else None,
        "spilled_bytes": _count(total("spilled_bytes")),
        "spill_write_s": _round(total("spill_write_s")),
        "unspilled_bytes": _count(total("unspilled_bytes")),
        "unspill_read_s": _round(total("unspill_read_s")),
        "input_read_back_s": _round(tasks["input_read_back_s"].sum()),
        "per_worker": _spill_per_worker(spilled) if known else None,
    }


def _clocks(clocks: pl.DataFrame) -> list[dict[str, Any]]:
    return [dict(r) for r in clocks.iter_rows(named=True)]


def _worker_pauses(pauses: pl.DataFrame) -> list[dict[str, Any]]:
    return [dict(r) for r in pauses.select("worker", "start_ns", "stop_ns")
            .sort("worker", "start_ns").iter_rows(named=True)]


def _rejects(rejects: pl.DataFrame) -> list[dict[str, Any]]:
    return [dict(r) for r in rejects.sort("source", "file", "reason").iter_rows(named=True)]


def _processes(processes: pl.DataFrame) -> list[dict[str, Any]]:
    cols = ["host", "pid", "role", "worker", "nthreads", "match", "closed_cleanly"]
    p = processes.select(cols).with_columns(pl.col("role").cast(pl.String))
    return [dict(r) for r in p.sort("host", "pid", "worker", nulls_last=True).iter_rows(
        named=True)]


def io_captured(frames: RunFrames) -> bool:
    """Whether any Darshan log was read (or I/O segments handed over without one, as frames
    built in memory are): without either, tasks' I/O is unknown, not zero."""
    segments = frames.io_segments
    return not frames.darshan_logs.is_empty() or (
        isinstance(segments, pl.DataFrame) and not segments.is_empty())


#: the profile modes that record every call of every execution (Yappi): an execution without
#: function rows lost them; the sampler, by design, never sees executions shorter than its
#: interval
DETERMINISTIC_PROFILES = ("yappi", "yappi-all", "yappi-cpu")


def profile_coverage(facts: dict[str, Any], executions: int, profiled: int) -> dict[str, Any]:
    """The profile mode and how many executions have function rows (``task_functions``)."""
    mode = (facts.get("collector_options") or {}).get("profile")
    return {"mode": mode, "executions": executions, "executions_with_functions": profiled,
            "executions_without_functions": executions - profiled
            if mode in DETERMINISTIC_PROFILES else None}


def profile_warnings(profile: dict[str, Any]) -> list[str]:
    """A line when a deterministic profile is missing for some executions (a killed worker,
    Yappi stopped at its memory budget, a worker that did not close)."""
    missing = profile.get("executions_without_functions")
    if not missing:
        return []
    return [f"the {profile['mode']} profile is missing for {missing:,} of "
            f"{profile['executions']:,} executions (no function rows: a worker killed or "
            "not closed cleanly, Yappi stopped at its memory budget, or executions cut by a "
            "forced clear of Yappi's tables; see the warnings)"]


def dxt_captured(frames: RunFrames) -> bool:
    """Whether any Darshan log traced operations (DXT): the spill figures come from the spill
    files' DXT segments."""
    modules = frames.darshan_logs.get_column("modules").explode()
    return bool(modules.str.starts_with("DXT_").any())


def spill_source(frames: RunFrames) -> str | None:
    """Where the run's spill figures come from: the spill files' DXT segments, or (logs with
    POSIX counters and no DXT) the counters of each spill file, which Darshan keeps per file
    as it does every other; None: unknown (no log counted the files)."""
    if dxt_captured(frames):
        return "darshan (spill file segments)"
    if not untraced_counters(frames.io_file_counters, frames.darshan_logs).is_empty():
        return "darshan (POSIX counters of each spill file, no DXT)"
    return None


def headline_problems(frames: RunFrames) -> list[str]:
    """Data-quality problems that change the totals and shares: I/O not captured, incomplete
    Darshan logs, processes that did not close, rejected records."""
    out = [] if io_captured(frames) else [_not_captured(frames.facts)]
    out += _incomplete_logs(frames.darshan_logs)
    closed = frames.processes.get_column("closed_cleanly")
    if (n := int((closed == False).sum())):  # noqa: E712 (null: unknown, not counted)
        out.append(f"{n} process(es) did not close cleanly (killed or crashed): their last "
                   "records are missing from every total")
    if (rejected := int(frames.rejects["count"].sum() or 0) if frames.rejects.height else 0):
        out.append(f"{rejected:,} record(s) could not be used and are left out of the totals "
                   "(see Data quality)")
    return out


def _not_captured(facts: dict[str, Any]) -> str:
    why = facts.get("darshan_reason")
    if facts.get("darshan"):  # a runtime was preloaded but wrote nothing
        why = f"Darshan runtime {facts['darshan']} wrote no logs"
    return ("I/O was not captured (no Darshan logs" + (f"; Darshan: {why}" if why else "")
            + "): read, written and I/O time per task are unknown, not zero")


def _incomplete_logs(logs: pl.DataFrame) -> list[str]:
    """One line for the Darshan logs whose I/O is partly missing (truncated, a module that
    could not be read or that Darshan flagged partial, untraced DXT calls)."""
    why = incomplete_logs(logs)
    if why.is_empty():
        return []
    names = [_log_problem(r) for r in why.head(3).iter_rows(named=True)]
    more = f"; … ({why.height} in all)" if why.height > 3 else ""
    return [f"{why.height} of {logs.height} Darshan log(s) incomplete, so I/O totals and "
            f"attributed shares count only what was read: {'; '.join(names)}{more}"]


def _log_problem(r: dict[str, Any]) -> str:
    from pathlib import Path

    parts = [r["failed"]] if r["failed"] else []
    parts += ["flagged partial"] if r["partial"] else []
    parts += [f"{r['untraced']:,} untraced calls"] if r["untraced"] else []
    return f"{Path(r['log']).name} ({', '.join(parts)})"


#: what each method of bytes given against Darshan's file (``AGAINST_RECORD``) did with them
_INCONSISTENT_HOW = {"stdio-reassigned": "to the evident owner",
                     "stdio-refiled": "to the evident owner, under the file it opened",
                     "inconsistent-split": "by time"}


def _doubtful_paths(unattributed: pl.DataFrame, shown: int = 5) -> list[str]:
    """One line naming the records whose file name is doubtful (``attribution.doubtful``)
    and their bytes, the largest first."""
    per = (unattributed.filter(doubtful.is_doubtful(pl.col("reason")))
           .group_by("path").agg(pl.col("bytes").sum()).sort("bytes", "path",
                                                            descending=[True, False]))
    if per.is_empty():
        return []
    named = "; ".join(f"{p} ({b:,.0f} B)" for p, b in per.head(shown).rows())
    more = f"; and {per.height - shown} more" if per.height > shown else ""
    return [f"{per.height} file name(s) Darshan gave are doubtful (relative, the collectors' "
            f"own file in another folder, or contradicted by the record of opens; the "
            f"unattributed reasons say which), not files read as named: {named}{more}"]


def _inconsistent_records(files: pl.DataFrame) -> list[str]:
    """One line counting the bytes of Darshan records that contradict the record of opens,
    given not as Darshan filed them: per method, with the tasks and files (``task_files``'s
    attribution says which rows)."""
    odd = files.filter(pl.col("attribution").is_in(AGAINST_RECORD))
    if odd.is_empty():
        return []
    per = {m: b for m, b in odd.group_by(pl.col("attribution").cast(pl.String)).agg(
        pl.col("bytes").sum()).rows()}
    how = "; ".join(f"{per[m]:,.0f} B {_INCONSISTENT_HOW[m]} ({m})"
                    for m in AGAINST_RECORD if m in per)
    return [f"Darshan's C stdio records contradict the record of opens (calls outside the "
            f"windows of the tasks that opened the file, or a file opened only in the other "
            f"mode): {odd['bytes'].sum():,.0f} B of {odd['execution_id'].n_unique():,} "
            f"execution(s) on {odd['path'].n_unique():,} file(s) given not as Darshan filed "
            f"them: {how} (task_files' attribution says which rows)"]


def _shared_readers(files: pl.DataFrame, shown: int = 5) -> list[str]:
    """A note per file whose helper-thread reads were shared among concurrent readers."""
    shared = files.filter(pl.col("attribution") == "helper-shared")
    if shared.is_empty():
        return []
    per = shared.group_by("path").agg(pl.col("bytes").sum(),
                                      readers=pl.col("execution_id").n_unique()).sort(
        "bytes", "path", descending=[True, False])
    named = "; ".join(f"{p}: {b:,.0f} B shared with {n} concurrent readers of the file"
                      for p, b, n in per.head(shown).rows())
    more = f"; and {per.height - shown} more file(s)" if per.height > shown else ""
    return [f"helper-thread reads of files several running tasks had opened cannot be told "
            f"apart (helper-shared, split by overlap): {named}{more}"]


def _clock_warnings(tasks: pl.DataFrame, clocks: pl.DataFrame, segment_totals: pl.DataFrame
                    ) -> list[str]:
    """Worker processes placed on the run timeline without their clock samples, and those
    whose Darshan times use the log header's clock (DXT without markers)."""
    warnings = []
    # (rows from the scheduler's startstops are on its clock already: no worker clock needed)
    workers = (tasks.lazy().filter(pl.col("window_source").ne_missing(lost.FROM_SCHEDULER))
               .select("host", "pid").unique().drop_nulls().collect())
    aligned = clocks.filter(pl.col("domain") == "worker").select("host", "pid")
    missing = workers.join(aligned, on=["host", "pid"], how="anti").height
    if missing:
        warnings.append(f"{missing} worker process(es) without clock samples: their times are "
                        "placed on the run timeline unshifted (uncertainty unknown)")
    if not segment_totals.is_empty():
        dxt_procs = segment_totals.select("host", "pid").unique()
        dclock = clocks.filter(pl.col("domain") == "darshan").select("host", "pid")
        n = dxt_procs.join(workers, on=["host", "pid"]).join(dclock, on=["host", "pid"],
                                                               how="anti").height
        if n:
            warnings.append(f"{n} worker process(es) with DXT but no clock markers: Darshan "
                            "times use the log header clock (typically a few ms off)")
    return warnings


def build_summary(frames: RunFrames, tables: dict[str, pl.DataFrame],
                  segment_totals: pl.DataFrame, stdio: dict[str, float],
                  counters: dict[str, float] | None = None,
                  shuffle_io: pl.DataFrame | None = None,
                  group_by: tuple[str, ...] = (),
                  spilled: pl.DataFrame | None = None,
                  seen: Seen | None = None) -> dict[str, Any]:
    """From the small output tables (tasks, task_files, unattributed, clocks), the totals
    of the ``segments`` table per (host, pid, attribution), those of the C stdio I/O
    (``stdio_io.stdio_totals``) and those of the POSIX counters of logs without DXT
    (``counters_io.counter_totals``); ``group_by``: annotation keys to group the tasks by;
    ``seen``: what the transitions say of the job's end, if taken already."""
    counters = counters or {"bytes": 0.0, "ops": 0.0, "io_time_s": 0.0}
    tasks = tables["tasks"]
    headline = headline_problems(frames)
    clocks = tables["clocks"]
    warnings = [*frames.warnings, *_clock_warnings(tasks, clocks, segment_totals)]
    warnings += _doubtful_paths(tables["unattributed"])
    warnings += _inconsistent_records(tables["task_files"])
    warnings += _shared_readers(tables["task_files"])
    return {
        "source_format": frames.source_format,
        "facts": frames.facts,
        "job": job_outcome(frames.facts, seen or frames.transitions, tasks,
                           frames.clock_samples),
        "executions": tasks.height,
        # executions that ran to an end; the others were handed back (rescheduled,
        # cancelled) and are in ``handed_back``, not runs of their task
        "runs": tasks.select(endings.is_run().sum()).item(),
        "handed_back": endings.summary(tasks),
        # executions whose results died with their worker (runs, counted in ``runs``)
        "lost": lost.summary(tasks, frames.processes,
                             frames.facts.get("workers_removed_ns") or {}),
        # when each worker was paused by Dask's memory manager (run timeline; stop null: still
        # paused where the records end)
        "worker_pauses": _worker_pauses(frames.worker_pauses),
        "tasks": tasks["key"].n_unique(),
        "io": _io(tables, segment_totals, stdio, counters, io_captured(frames)),
        # the runtime that wrote the logs (lib_ver of each log's job metadata), not the
        # PyDarshan package of the environment (facts.versions.darshan)
        "darshan_runtime_versions": sorted(
            frames.darshan_logs.get_column("darshan_version").drop_nulls().unique().to_list()),
        # problems that change the numbers above: shown first, not only after the tables
        "headline": headline,
        "cpu": _cpu(tasks, frames.clock_samples),
        "spill": _spill(tasks, frames, spilled),
        "shuffles": (p2p.shuffle_summary(shuffle_io, tasks, frames.dependencies)
                     if shuffle_io is not None else []),
        "top_prefixes_by_wall": _top(tasks, "wall_s"),
        "top_prefixes_by_io": _top(tasks, "io_time_s"),
        "clocks": _clocks(clocks),
        # the host's load during the run: compare tells a loaded machine from a slower step
        "host_load": host_load.summary(frames.host_load),
        "processes": _processes(frames.processes),
        "rejects": _rejects(frames.rejects),
        "warnings": [*headline, *warnings],
        **_labelled(tasks, frames, group_by),
    }


def _labelled(tasks: pl.DataFrame, frames: RunFrames, group_by: tuple[str, ...]
              ) -> dict[str, Any]:
    """``spans`` (where the run has spans the user named: per span path, its subtree's
    figures beside Dask's own thread-cpu) and ``groups`` (per annotation key asked for)."""
    out: dict[str, Any] = {}
    if spans.has_spans(tasks):
        out["spans"] = spans.rows(spans.span_totals(tasks, frames.span_tree,
                                                    frames.span_dask_metrics))
    if group_by:
        out["groups"] = {k: spans.rows(spans.annotation_groups(tasks, k)) for k in group_by}
    return out


#: ``summary.json`` ``io.by_destination`` keys and how the reports name them
DESTINATIONS = (("tasks", "tasks"), ("shuffles", "P2P shuffles"), ("spill", "spill"),
                ("not_tasks", "known, no task's"), ("unexplained", "unexplained"))


def destinations(summary: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, bytes, share) of where the I/O went (tasks, P2P shuffles, spill, known I/O of no
    task, unexplained);
    empty for a summary written before ``by_destination`` existed."""
    dest = (summary.get("io") or {}).get("by_destination") or {}
    return [(name, dest[k]["bytes"], dest[k]["share"]) for k, name in DESTINATIONS if k in dest]
