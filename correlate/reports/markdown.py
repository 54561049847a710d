"""``report.md`` (+ ``figures/*.png``): a page to paste into a performance ticket.

``render_markdown(outputs, figures=...) -> str`` is pure; ``write_markdown(outputs, out_dir, options)``
draws the figures and writes the page. Everything comes from ``correlate.reports.aggregate``
over the output tables and summary, so the page is deterministic for the same output folder.
Run-provided strings (keys, paths, functions) are emitted as code spans with ``|`` escaped, and
free text (warnings) with ``<``, ``>``, ``&`` as entities, so nothing in a key can inject
Markdown or HTML into the ticket.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from correlate.outcome import outcome_line
from correlate.reports import aggregate as agg
from correlate.reports.cells import UNKNOWN, code, measured, table, text
from correlate.reports.findings_md import findings_section, path_section
from correlate.reports.fmt import count, human_bytes, requests, seconds, share, times
from correlate.reports.load import Outputs
from correlate.reports.writer import ReportOptions
from correlate.summary import destinations
from correlate.timeline import endings, lost

TOP = 10
TOP_PREFIXES_FOR_FUNCTIONS = 3
TOP_FUNCTIONS = 5


def _io_known(out: Outputs) -> bool:
    """False when the run has no Darshan logs: its tasks' I/O is unknown, and a table showing
    0 B would claim they did none. (A summary.json from before ``captured`` existed: known.)"""
    return (out.summary.get("io") or {}).get("captured", True) is not False


def _headline(out: Outputs) -> list[str]:
    """Problems that change the numbers on this page, at its top rather than after the tables."""
    problems = out.summary.get("headline") or []
    if not problems:
        return []
    return ["**Read this first — these change the numbers below:**", "",
            *[f"- **{text(p)}**" for p in problems], ""]


def _outcome(out: Outputs) -> list[str]:
    """The exit code and erred tasks of a job that failed, above everything else."""
    line = outcome_line(out.summary.get("job"), keys_shown=10)
    return [f"**{text(line[:1].upper() + line[1:])}**", ""] if line else []


def _facts(out: Outputs) -> list[str]:
    rows = [(k, code(v) if k in ("command", "working directory") else text(v))
            for k, v in agg.run_facts(out.summary, out["tasks"])]
    return ["## Run", "", *table(["fact", "value"], rows, "ll")]


def _budget(out: Outputs, figures: dict[str, str]) -> list[str]:
    b = agg.worker_budget(out["tasks"], agg.executor_threads(out.summary),
                          agg.workers_died(out.summary))
    lines = ["## Where time went", ""]
    if b.is_empty():
        return [*lines, "No task executions were recorded.", ""]
    known = _io_known(out)
    coroutines = bool(b.get_column("coroutines").sum())
    paused = bool(b.get_column("paused_s").sum())
    rows = [[code(r["worker"]) + (" (died⁴)" if r["died"] else ""), agg.threads_text(r["threads"], r["threads_bound"]),
             count(r["executions"]), seconds(r["thread_s"]), measured(r["cpu_s"]),
             measured(r["io_s"]) if known else UNKNOWN, measured(r["other_s"]),
             seconds(r["idle_s"]), share(r["busy_share"]),
             *([seconds(r["coroutine_s"])] if coroutines else []),
             seconds(r["waiting_s"]), *([seconds(r["paused_s"])] if paused else []),
             measured(r["free_thread_s"]),
             seconds(r["transfer_s"]), seconds(r["read_back_s"])]
            for r in b.iter_rows(named=True)]
    lines += table(["worker", "executor threads", "executions", "thread time", "CPU", "I/O",
                    "other²", "idle", "busy", *(["coroutines³"] if coroutines else []),
                    "waiting for a thread¹",
                    *(["waiting while the worker was paused (memory)¹"] if paused else []),
                    "waiting with a thread free¹",
                    "receiving inputs¹", "reading spilled inputs back¹"], rows)
    lines += ["Thread time = executor threads × task window, split into the tasks' thread CPU, "
              "time inside I/O calls, other² and idle (thread time not spent in tasks). "
              "¹ Task-seconds spent before a task ran (ready with every thread of its worker "
              "busy; ready with a thread free, while the worker's event loop had not yet handed "
              "it over (messages, transitions, transfers, the host's load: more threads would "
              "not start it sooner; — where the thread count was not recorded); "
              + ("ready while its worker was paused at its memory limit, when no task starts "
                 "whatever the threads: memory, not threads, held it; " if paused else "")
              + "fetching its inputs from peers; reading its inputs back from the spill "
              "directory); they "
              "overlap idle time and are not part of the thread-time sum. "
              "² The rest of the tasks' wall time: sleep, locks, the GIL, waits inside the task "
              "(an I/O call's own CPU counts in both CPU and I/O, so this is a lower bound)"
              + ("; it includes the time inside I/O calls, which was not captured"
                 if b.get_column("other_includes_io").any() else "")
              + ". Not captured where CPU was not measured."
              + (" ³ Wall time of `async def` tasks, which ran on the worker's event loop, not "
                 "on an executor thread (their awaiting time included); not in the thread "
                 "count or the busy share." if coroutines else "")
              + (" ⁴ The worker died during the run: its thread time ends with its last "
                 "execution's stop (it died after that, when exactly is not known); its "
                 "executions it never wrote are from the scheduler's records."
                 if b.get_column("died").any() else ""), ""]
    if b.get_column("threads_bound").any():
        lines += [agg.THREADS_BOUND_NOTE[0].upper() + agg.THREADS_BOUND_NOTE[1:] + ".", ""]
    if "timeline" in figures:
        lines += [f"![Task timeline per worker thread]({figures['timeline']})", ""]
    return lines


def _prefixes(out: Outputs, figures: dict[str, str]) -> list[str]:
    p = agg.prefixes(out["tasks"])
    if p.is_empty():
        return []
    rows = [[code(r["prefix"]), count(r["executions"]), seconds(r["wall_s"]),
             seconds(r["mean_s"]), seconds(r["max_s"]), measured(r["cpu_s"]),
             measured(r["other_s"]), *_io_cells(r, "io_s", known=_io_known(out)),
             *_request_cells(r, known=_io_known(out))]
            for r in p.head(TOP).iter_rows(named=True)]
    lines = [f"## Heaviest task prefixes ({_shown(p.height, 'wall time')})", ""]
    lines += table(["prefix", "runs", "wall", "mean", "max", "CPU", "other²", "I/O time",
                    "read", "written", "reads × mean size", "writes × mean size"], rows)
    if "prefixes" in figures:
        lines += [f"![Time and bytes per task prefix]({figures['prefixes']})", ""]
    return lines


def _labelled(out: Outputs) -> list[str]:
    """Per Dask span (each with its sub-spans, beside Dask's own thread-cpu for it) and per
    value of each annotation the summary was grouped by."""
    s = out.summary
    known = _io_known(out)
    lines: list[str] = []
    if s.get("spans"):
        lines += ["## By span", "",
                  "Each span (`distributed.span`) with its sub-spans, as Dask's fine performance "
                  "metrics count them; *Dask CPU* is Dask's own `execute` thread-cpu for the "
                  "span, reported with the workers' heartbeats (`-` where it reported none).", ""]
        rows = [[code(r["span"]), count(r["executions"]), seconds(r["wall_s"]),
                 measured(r["cpu_s"]), measured(r["dask_thread_cpu_s"]),
                 *_io_cells(r, "io_time_s", known=known), seconds(r["wait_thread_s"]),
                 seconds(r["transfer_s"]), human_bytes(r["spilled_bytes"])]
                for r in s["spans"]]
        lines += table(["span", "runs", "wall", "CPU", "Dask CPU", "I/O time", "read",
                        "written", "waiting for a thread", "receiving inputs", "spilled"],
                       rows)
    for key, groups in (s.get("groups") or {}).items():
        rows = [[code(r["value"]) if r["value"] is not None else "(not annotated)",
                 count(r["executions"]), seconds(r["wall_s"]), measured(r["cpu_s"]),
                 *_io_cells(r, "io_time_s", known=known)] for r in groups]
        lines += [f"## By annotation {code(key)}", "",
                  *table([key, "runs", "wall", "CPU", "I/O time", "read", "written"], rows)]
    return lines


def _shown(n: int, by: str | None) -> str:
    """``top 10 of 64 by wall time``, or ``all 4, by wall time`` when no row is left out (not
    "top 10 of 4")."""
    order = f" by {by}" if by else ""
    return f"top {TOP} of {n:,}{order}" if n > TOP else f"all {n:,}" + (f",{order}" if by else "")


def _io_cells(r: dict[str, Any], time_col: str, *, known: bool) -> list[str]:
    """I/O time, read and written of a row; ``unknown`` each when I/O was not captured."""
    if not known:
        return [UNKNOWN] * 3
    return [seconds(r[time_col]), human_bytes(r["read_bytes"]), human_bytes(r["write_bytes"])]


def _request_cells(r: dict[str, Any], *, known: bool) -> list[str]:
    """Read and write operations of a row with their mean size (``fmt.requests``);
    ``unknown`` each when I/O was not captured."""
    if not known:
        return [UNKNOWN] * 2
    return [requests(r["read_ops"], r["read_mean_bytes"]),
            requests(r["write_ops"], r["write_mean_bytes"])]


def _task_rows(t: pl.DataFrame, awaiting: bool, known: bool = True) -> list[list[str]]:
    return [[code(r["key"]), code(r["prefix"]), code(r["worker"]), seconds(r["duration_s"]),
             *([seconds(r["awaiting_s"]) if r["awaiting_s"] is not None else "thread"]
               if awaiting else []),
             measured(r["cpu_s"]), *_io_cells(r, "io_time_s", known=known)]
            for r in t.iter_rows(named=True)]


def _tasks(out: Outputs) -> list[str]:
    tasks = out["tasks"]
    # coroutine tasks (run on the event loop) show how much of their wall time they awaited
    awaiting = "awaiting_s" in tasks.columns and tasks["awaiting_s"].is_not_null().any()
    header = ["key", "prefix", "worker", "wall", *(["awaiting"] if awaiting else []), "CPU",
              "I/O time", "read", "written"]
    lines = ["## Heaviest task executions", ""]
    for title, by in (("By CPU", "cpu_s"), ("By I/O bytes", "io_bytes")):
        lines += [f"### {title} ({_shown(tasks.height, None)})", ""]
        if by == "io_bytes" and not _io_known(out):  # a ranking of unknowns ranks nothing
            lines += ["Unknown: I/O was not captured (see the top).", ""]
            continue
        if by == "cpu_s" and not tasks["cpu_s"].is_not_null().any():
            lines += ["Not captured: the source recorded no CPU time for any execution.", ""]
            continue
        t = agg.top_tasks(tasks, by, TOP)
        align = "lll" + "r" * (len(header) - 3)
        lines += (table(header, _task_rows(t, awaiting, _io_known(out)), align) if t.height
                  else ["None recorded.", ""])
    return lines


def _files(out: Outputs) -> list[str]:
    f = agg.files(out["task_files"], out["unattributed"])
    if f.is_empty():
        return ["## Busiest files", "", "No file I/O was recorded (no DXT segments)."
                if _io_known(out) else "Unknown: I/O was not captured (see the top).", ""]
    shown = agg.with_read_times(f.head(TOP), out.scan("segments"))
    rows = [[code(r["path"]) + (" (doubtful name¹)" if r["doubtful_name"] else ""),
             human_bytes(r["read_bytes"]), human_bytes(r["write_bytes"]),
             human_bytes(r["outside_bytes"]), count(r["ops"]), *_request_cells(r, known=True),
             times(r["read_times"]), seconds(r["io_s"]), count(r["tasks"])]
            for r in shown.iter_rows(named=True)]
    lines = [f"## Busiest files ({_shown(f.height, 'bytes')})", ""]
    note = (["¹ Darshan's name for some of this file's I/O is doubtful (a relative path, "
             "the collectors' own file named in another folder, or a name the record of opens "
             "contradicts): see the unattributed reasons.", ""]
            if shown.get_column("doubtful_name").any() else [])
    note += ["² The bytes read ÷ the distinct bytes read (the union of the reads' byte ranges "
             "in DXT): 2.0× is every byte read twice. - where DXT did not trace every read of "
             "the file (no DXT, C stdio, counters only) or nothing was read.", ""]
    return lines + table(["path", "read", "written", "outside tasks", "ops",
                          "reads × mean size", "writes × mean size", "times read²", "I/O time",
                          "tasks"], rows) + note


def _functions(out: Outputs) -> list[str]:
    names = agg.prefixes(out["tasks"]).head(TOP_PREFIXES_FOR_FUNCTIONS)["prefix"].to_list()
    f = agg.top_functions(out.scan("task_functions"), out["tasks"], names, TOP_FUNCTIONS)
    lines = ["## Top functions per heavy prefix", ""]
    if f.is_empty():
        return [*lines, "No function profiles were recorded for these prefixes.", ""]
    for prefix in names:
        part = f.filter(pl.col("prefix") == prefix)
        if part.is_empty():
            continue
        clock = "/".join(sorted({str(c) for c in part["clock"].to_list() if c}))
        rows = [[code(f"{r['module']}.{r['name']}" if r["module"] else r["name"]),
                 code(f"{r['file']}:{r['line']}"), seconds(r["tsub_s"]), seconds(r["ttot_s"]),
                 count(r["ncall"])] for r in part.iter_rows(named=True)]
        lines += [f"### {code(prefix)} ({clock or 'unknown'} clock)", ""]
        lines += table(["function", "where", "exclusive", "inclusive", ncall_header(part)],
                       rows, "llrrr")
    return lines


def ncall_header(functions: pl.DataFrame) -> str:
    """What the ``ncall`` column of these profile rows counts: ``calls`` (Yappi, pstats) or
    ``samples`` (the stack sampler counts samples, not calls)."""
    kinds = sorted({str(k) for k in functions["ncall_kind"].to_list() if k is not None})
    return " / ".join(kinds) or "calls"


def _unattributed(out: Outputs) -> list[str]:
    io = out.summary.get("io") or {}
    total, attributed = io.get("total") or {}, io.get("attributed") or {}
    lines = ["## Unattributed I/O and CPU", ""]
    if not _io_known(out):
        return [*lines, "I/O: unknown, not captured (no Darshan logs; see the top).", "",
                *_cpu(out)]
    if total:
        stdio = (io.get("stdio") or {}).get("bytes")
        posix = (io.get("posix_counters_without_dxt") or {}).get("bytes")
        parts = [f"C stdio ({human_bytes(stdio)} counted per file, untraced)"] if stdio else []
        if posix:
            parts.append(f"POSIX counters of processes without DXT ({human_bytes(posix)}, "
                         "per task by time: counter-*)")
        where = "I/O in DXT" + "".join(f" and {p}" for p in parts)
        own = (io.get("by_destination") or {}).get("tasks") or attributed
        lines += [f"{where}: {human_bytes(total.get('bytes'))} in "
                  f"{count(total.get('ops'))} operations; attributed to task executions: "
                  f"{human_bytes(own.get('bytes'))} "
                  f"({share(io.get('attributed_bytes_share'))} of bytes).", ""]
        procs = io.get("per_process") or []
        if procs:
            lines += ["| process | read | written | ops |", "| --- | ---: | ---: | ---: |"]
            lines += [f"| {p.get('host') or '?'} pid {p.get('pid')} | "
                      f"{human_bytes(p.get('read_bytes'))} | "
                      f"{human_bytes(p.get('write_bytes'))} | {count(p.get('ops'))} |"
                      for p in procs[:10]]
            more = len(procs) - 10
            lines += (["", f"and {more} more process(es) (summary.json: io.per_process)."]
                      if more > 0 else []) + [""]
        dest = destinations(out.summary)
        if dest:
            lines += ["Where the bytes went: " + ", ".join(
                f"{name} {human_bytes(b)} ({share(f)})" for name, b, f in dest)
                + " (P2P shuffles: the shards a P2P shuffle buffered on disk, given to its "
                "barrier task; known, no task's: other processes, the collector's markers, the "
                "worker directory's own files; unexplained: the other reasons below).", ""]
    u = agg.unattributed_io(out["unattributed"])
    if u.height:
        rows = [[text(r["reason"]), text(r["role"] or "-"), text(r["thread_kind"] or "-"),
                 human_bytes(r["bytes"]), count(r["ops"]), seconds(r["io_s"]),
                 count(r["files"]), count(r["processes"])] for r in u.iter_rows(named=True)]
        lines += table(["reason", "process role", "thread", "bytes", "ops", "I/O time",
                        "files", "processes"], rows, "lllrrrrr")
    else:
        lines += ["No I/O outside task executions.", ""]
    return lines + _cpu(out)


def _cpu(out: Outputs) -> list[str]:
    c = agg.cpu_coverage(out["tasks"])
    cpu = out.summary.get("cpu") or {}
    inside = (f"{seconds(cpu['task_cpu_s'])} of thread CPU inside task executions"
              if cpu.get("task_cpu_s") is not None
              else "not captured inside task executions (the source recorded none)")
    handed = "".join(f", + {seconds(h['wall_s'])} {status}" for status, h in
                     (out.summary.get("handed_back") or {}).items() if h.get("executions"))
    lines = [f"CPU: {inside} (task wall time {seconds(cpu.get('task_wall_s'))}{handed}). CPU spent "
             "outside task executions (event loop, communication, spilling) is not in the "
             "output tables.", ""]
    missing = c.filter(pl.col("unmeasured") > 0)
    if missing.height:
        rows = [[code(r["worker"]), count(r["unmeasured"]), count(r["executions"]),
                 seconds(r["unmeasured_wall_s"])] for r in missing.iter_rows(named=True)]
        lines += ["Executions without a CPU measurement (no per-thread CPU sample or profile "
                  "covered them):", ""]
        lines += table(["worker", "unmeasured", "executions", "their wall time"], rows)
    return lines


def _clock_rows(clocks: pl.DataFrame) -> list[list[str]]:
    def unc(v: Any) -> str:
        return "unknown" if v is None else seconds(v / 1e9)

    return [[text(r["host"]), text(r["pid"]), text(r["domain"]), seconds(r["offset_ns"] / 1e9),
             unc(r["uncertainty_ns"]), text(r["method"]), count(r["samples"])]
            for r in clocks.iter_rows(named=True)]


def _spill(out: Outputs) -> list[str]:
    tasks = out["tasks"]
    if not set(agg.SPILL) <= set(tasks.columns):
        return []
    rows = {by: agg.spill(tasks, by) for by in ("prefix", "key")}
    if rows["prefix"].is_empty():
        return []
    lines = ["## Spill", "",
             "Task results Dask wrote to its spill directory and read back (from the DXT "
             "segments of the spill files, whose names carry the key), and the time executions "
             "waited for spilled inputs to be read back (Dask's disk-read).", ""]
    for by, title in (("prefix", "By prefix"), ("key", f"Heaviest {TOP} keys")):
        body = [[code(r[by]), human_bytes(r["spilled_bytes"]), count(r["spill_writes"]),
                 seconds(r["spill_write_s"]), human_bytes(r["unspilled_bytes"]),
                 seconds(r["unspill_read_s"]), seconds(r["input_read_back_s"])]
                for r in rows[by].head(TOP).iter_rows(named=True)]
        lines += [f"**{title}**", "", *table(
            [by, "written", "times", "write time", "read back", "read time",
             "waited for spilled inputs"], body, "lrrrrrr")]
    return lines


def _shuffles(out: Outputs) -> list[str]:
    rows = agg.shuffles(out.summary)
    if not rows:
        return []
    lines = ["## P2P shuffles", "",
             "Dask's P2P shuffle buffers shards on disk in each worker's "
             "`shuffle-<id>-<run>/` folder: written by the worker itself (event loop), not by "
             "a task, and accounted whole at the shuffle's barrier task (method "
             "`p2p-shuffle`; which transfer task sent them is not recorded; not the barrier's "
             "own I/O in the task tables); read back by the unpack tasks on "
             "their own threads (thread-exact).", ""]
    body = [[code(r["shuffle_id"]), count(r["runs"]), count(r["workers"]),
             human_bytes(r["written_bytes"]), seconds(r["write_s"]),
             code(r["owner"]) if r["owner"] else "none recorded",
             human_bytes(r["read_bytes"]) if r["read_bytes"] is not None else "not traced¹",
             seconds(r["read_s"]), seconds(r["span_s"]),
             f"{count(r['transfer_executions'])} / {count(r['barrier_executions'])} / "
             f"{count(r['unpack_executions'])}"] for r in rows[:TOP]]
    lines += table(["shuffle", "runs", "workers", "written", "write time", "writes given to",
                    "read back", "read time", "span", "transfer / barrier / unpack"], body,
                   "lrrrrlrrrr")
    if any(r["read_bytes"] is None for r in rows):
        lines += ["¹ No read of its shards traced: array rechunks read them back through a "
                  "memory map, which Darshan does not see.", ""]
    return lines


def _arrivals(out: Outputs) -> list[str]:
    a = agg.arrivals(out.summary)
    if a is None:
        return []
    lines = ["## Data from outside Dask (arrivals)", "",
             f"{count(a['keys'])} keys ({human_bytes(a['nbytes'])}) entered Dask without an "
             f"execution (scattered, or external tasks), in {count(a['steps'])} steps from "
             f"{count(len(a['senders']))} senders; {text(a['sentence'])}. A step's spread: "
             "its first to its last arrival; lag: its last arrival to the end of the tasks "
             "that take its keys as inputs (docs/in-situ.md).", ""]
    body = [[code(r["sender"]), count(r["keys"]), human_bytes(r["nbytes"]),
             seconds(r["send_s"]) if r["send_s"] is not None else UNKNOWN,
             count(r["last_in_steps"])] for r in a["senders"][:TOP]]
    lines += table(["sender", "keys", "bytes", "in its scatter calls", "last in steps"],
                   body, "lrrrr")
    steps = a["per_step"]
    shown = f"first {min(len(steps), TOP)} of {count(a['steps'])} steps"
    body = [[code(r["step"]), count(r["keys"]), count(r["senders"]), human_bytes(r["nbytes"]),
             seconds(r["spread_s"]),
             code(f"rank {r['last_rank']}") if r["last_rank"] is not None
             else code(r["last_client"]) if r["last_client"] is not None else UNKNOWN,
             count(r["analytics_tasks"]), measured(r["wait_external_s"]), measured(r["lag_s"])]
            for r in steps[:TOP]]
    lines += [f"**Steps** ({shown}; arrival_steps.parquet holds every one)", ""]
    lines += table(["step", "keys", "senders", "bytes", "spread", "last sender",
                    "analytics tasks", "their wait on inputs", "lag"], body, "lrrrrlrrr")
    return lines


def _quality(out: Outputs) -> list[str]:
    q = agg.quality(out.summary, out["clocks"], out["tasks"], out.missing)
    lines = ["## Data quality", ""]
    headline = out.summary.get("headline") or []
    lines += [f"- {text(p)}" for p in headline]
    if q["clocks"].height:
        lines += ["Clock offsets onto the run timeline (± uncertainty):", ""]
        lines += table(["host", "pid", "clock", "offset", "± uncertainty", "method", "samples"],
                       _clock_rows(q["clocks"]), "lrlrrlr")
    methods = ", ".join(f"{text(k)}: {count(v)}" for k, v in q["segments_by_method"].items())
    lines += [f"- DXT segments by attribution method: {methods or 'none'}"]
    given = ", ".join(f"{text(k)}: {human_bytes(v['bytes'])}"
                      for k, v in q["attributed_by_method"].items())
    lines += [f"- bytes attributed to tasks by method: {given}"] if given else []
    bad = q["statuses"].filter(pl.col("status") != "ok")
    lines += [f"- executions with status {code(r['status'])}: {count(r['executions'])}"
              for r in bad.iter_rows(named=True)]
    lines += [f"- {text(h)}" for h in q["notes"]]
    lines += [f"- {text(m)}" for m, _problem in q["matching"]]
    lines += [f"- warning: {text(w)}" for w in q["warnings"]]
    lines += [f"- rejected {count(r.get('count'))} record(s) from {text(r.get('source'))} "
              f"{code(r['file']) if r.get('file') else ''}: {text(r.get('reason'))}"
              for r in q["rejects"]]
    lines += [f"- process {text(p.get('role'))} {text(p.get('host'))}:{text(p.get('pid'))} did "
              "not close cleanly (its last rows may be missing)" for p in q["not_closed"]]
    lines += [f"- table {code(t)} missing from the output folder" for t in q["missing_tables"]]
    if not (headline or q["warnings"] or q["rejects"] or q["not_closed"] or bad.height):
        lines += ["- no warnings, no rejected records, every process closed cleanly"]
    return [*lines, ""]


def render_markdown(out: Outputs, *, figures: dict[str, str] | None = None) -> str:
    """The whole page; ``figures`` maps ``timeline``/``prefixes`` to relative PNG paths."""
    figs = figures or {}
    s = out.summary
    head = ["# Dask run report", "",
            f"{count(s.get('runs', s.get('executions', out['tasks'].height)))} task "
            f"executions of {count(s.get('tasks', out['tasks']['key'].n_unique()))} tasks "
            f"({text(s.get('source_format', 'unknown'))}).", ""]
    handed_back = [*endings.sentences(s.get("handed_back")),
                   *lost.sentences(s.get("lost"))]
    head += [*(f"- {text(h)}" for h in handed_back), ""] if handed_back else []
    parts = [head, _outcome(out), _headline(out), findings_section(out), path_section(out),
             _facts(out), _budget(out, figs),
             _labelled(out), _prefixes(out, figs), _tasks(out), _files(out), _spill(out),
             _shuffles(out), _arrivals(out), _functions(out), _unattributed(out), _quality(out),
             ["---", "", "Generated by dask-correlate from the output tables in this folder "
              "(`correlate report OUT_DIR` regenerates it)."]]
    return "\n".join(line for part in parts for line in part).rstrip("\n") + "\n"


def write_markdown(out: Outputs, out_dir: Path, options: ReportOptions) -> list[Path]:
    """Write ``report.md`` and its figures; return the written paths."""
    # (imported here: matplotlib loads only when a figure is drawn)
    from correlate.reports.figures import write_figures

    drawn = write_figures(out, out_dir, options)
    path = out_dir / "report.md"
    path.write_text(render_markdown(out, figures={p.stem: p.relative_to(out_dir).as_posix()
                                                  for p in drawn}), encoding="utf-8")
    return [path, *drawn]
