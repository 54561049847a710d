"""The short summary ``correlate`` prints: heaviest prefixes, tasks and files, attributed
shares of I/O and CPU, clock uncertainty and data-quality warnings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from rich.text import Text

from correlate.console import name_table, results
from correlate.outcome import outcome_line
from correlate.reports import aggregate as agg
from correlate.reports import findings_text
from correlate.reports.fmt import human_bytes, requests, times
from correlate.reports.load import load_outputs
from correlate.reports.writer import ReportOptions
from correlate.summary import destinations
from correlate.timeline import endings, lost, task_threads

if TYPE_CHECKING:  # (the engine is not imported to print what it returned)
    from correlate.engine import Correlated


def _prefix_rows(prefixes: pl.DataFrame, top: int, io_known: bool = True) -> list[list[Any]]:
    return [[r["prefix"], r["executions"], f"{r['wall_s']:.3f}", _secs(r["cpu_s"]),
             *([human_bytes(r["read_bytes"]), human_bytes(r["write_bytes"]), _secs(r["io_s"])]
               if io_known else ["unknown"] * 3)]  # no Darshan log: not 0 B
            for r in prefixes.head(top).iter_rows(named=True)]


def _request_rows(rows: pl.DataFrame, name: str) -> list[list[Any]]:
    """Per row (a prefix or a file) that made requests: its reads and writes, each with its
    mean size (``aggregate.prefixes``/``files``); the others are left out (none to show)."""
    made = rows.filter((pl.col("read_ops") > 0) | (pl.col("write_ops") > 0))
    return [[r[name], requests(r["read_ops"], r["read_mean_bytes"]),
             requests(r["write_ops"], r["write_mean_bytes"])]
            for r in made.iter_rows(named=True)]


def _secs(s: float | None, digits: int = 3) -> str:
    """Seconds to ``digits`` decimals; ``-`` where the source measured none (not ``0.000``)."""
    return "-" if s is None else f"{s:.{digits}f}"


def _files(files: pl.DataFrame, unattributed: pl.DataFrame, top: int,
           segments: pl.LazyFrame | None = None) -> pl.DataFrame:
    """The busiest files as the reports show them (``aggregate.busiest_files``), with how
    many times their bytes were read where ``segments`` (the DXT segments) are given."""
    return agg.busiest_files(files, unattributed, top, segments)[0]


def _file_rows(shown: pl.DataFrame) -> list[list[Any]]:
    return [[f"{r['path']} (refiled)" if r["refiled"] else r["path"], human_bytes(r["total_bytes"]), f"{r['ops']:,.0f}", f"{r['io_s']:.3f}",
             r["tasks"] or 0, times(r["read_times"])] for r in shown.iter_rows(named=True)]


def _labelled(summary: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(title, rows) of the span breakdown and of each annotation grouping asked for."""
    out = [("By span (each with its sub-spans; dask cpu s: Dask's own thread-cpu)",
            summary["spans"])] if summary.get("spans") else []
    return out + [(f"By annotation {k!r}", rows)
                  for k, rows in (summary.get("groups") or {}).items()]


def _group_row(r: dict[str, Any], span: bool, io_known: bool) -> list[Any]:
    name = ("  " * r["depth"] + r["span"].rsplit(" / ", 1)[-1]) if span else (
        r["value"] if r["value"] is not None else "(not annotated)")
    return [name, r["executions"], _secs(r["wall_s"]), _secs(r["cpu_s"]),
            *([_secs(r["dask_thread_cpu_s"])] if span else []),
            *([human_bytes(r["read_bytes"]), human_bytes(r["write_bytes"]), _secs(r["io_time_s"])]
              if io_known else ["unknown"] * 3)]


def _by_method(io: dict[str, Any]) -> str:
    """How the attributed bytes were attributed: exact-thread, helper-*, window-split (the
    P2P shard writes given to a shuffle's owner are shown as the shuffles' part)."""
    total = io["total"]["bytes"]
    parts = [f"{m} {human_bytes(v['bytes'])}" + (f" ({v['bytes'] / total:.1%})" if total else "")
             for m, v in (io.get("attributed_by_method") or {}).items()
             if m != "p2p-shuffle" or "by_destination" not in io]
    return f", by {', '.join(parts)}" if parts else ""


def _destinations(summary: dict[str, Any]) -> str:
    """``; P2P shuffles 21.7 MiB (66.7%), spill 0 B (0.0%), unexplained …`` after the tasks'
    share, when the summary has ``by_destination``."""
    rest = [f"{name} {human_bytes(b)} ({s:.1%})" if s is not None else f"{name} {human_bytes(b)}"
            for name, b, s in destinations(summary) if name != "tasks"]
    return f"; {', '.join(rest)}" if rest else ""


def _shuffle_lines(summary: dict[str, Any], top: int) -> list[str]:
    out = []
    for r in agg.shuffles(summary)[:top]:
        read = (human_bytes(r["read_bytes"]) + " read back by its unpack tasks"
                if r["read_bytes"] is not None else "reads not traced (memory-mapped)")
        owner = (f"given to {r['owner']} (p2p-shuffle)" if r["owner"]
                 else "no barrier execution: not given to a task")
        out.append(f"P2P shuffle {r['shuffle_id'][:12]}: {human_bytes(r['written_bytes'])} of "
                   f"shards written on {r['workers']} worker(s) ({r['write_s'] or 0:.3f} s), "
                   f"{owner}; {read}; tasks: {r['transfer_executions']} transfer, "
                   f"{r['barrier_executions']} barrier, {r['unpack_executions']} unpack")
    return out


def _arrival_line(summary: dict[str, Any]) -> str | None:
    a = agg.arrivals(summary)
    if a is None:
        return None
    last = max(a["senders"], key=lambda r: (r["last_in_steps"], r["sender"]))
    return (f"arrivals: {a['keys']:,} keys ({human_bytes(a['nbytes'])}) from outside Dask in "
            f"{a['steps']:,} steps from {len(a['senders'])} senders (largest spread "
            f"{_secs(a['max_spread_s'])} s; {last['sender']} last in {last['last_in_steps']} "
            f"steps); {a['sentence']}")


def _print_findings(c: Any, summary: dict[str, Any], top: int) -> None:
    """The findings and the critical path, first after the totals."""
    for line in findings_text.finding_lines(summary, top):
        c.print(Text(line, style="bold"))
    path = findings_text.path_summary(summary)
    if path:
        c.print(Text(path))
        for line in findings_text.link_lines(summary):
            c.print(Text("  " + line))


def print_summary(summary: dict[str, Any], tables: dict[str, pl.DataFrame], *, out: Path,
                  top: int = 10, segments: pl.LazyFrame | None = None) -> None:
    """``segments``: the run's DXT segments (read lazily), for how many times each busiest
    file's bytes were read (``-`` without)."""
    c = results()
    _print_head(c, summary)
    io_known = summary["io"].get("captured", True) is not False
    _print_totals(c, summary, io_known)
    _print_findings(c, summary, top)
    for line in _shuffle_lines(summary, top):
        c.print(Text(line))
    arrived = _arrival_line(summary)
    if arrived:
        c.print(Text(arrived))
    outside = agg.cpu_outside_tasks(summary)
    if outside:
        c.print("CPU outside tasks (event loop, comms, start-up, other threads): " + ", ".join(
            f"{w['worker']} {_secs(w['outside_tasks_cpu_s'], 2)} of "
            f"{w['process_cpu_s']:.2f} s" for w in outside[:top]))
    _print_tables(c, summary, tables, top, io_known, segments)
    _print_notes(c, summary, top)
    c.print(f"tables written to {out}")


def _print_head(c: Any, summary: dict[str, Any]) -> None:
    """The executions, how some ended, the job's outcome, and the problems that change the
    numbers below (first, not after the tables)."""
    runs = summary.get("runs", summary["executions"])
    c.print(f"[bold]{runs:,}[/] executions of {summary['tasks']:,} tasks "
            f"({summary['source_format']})")
    for line in [*endings.sentences(summary.get("handed_back")),
                 *lost.sentences(summary.get("lost")),
                 *task_threads.sentences(summary.get("task_code_on_other_threads"))]:
        c.print(Text(line))
    failure = outcome_line(summary.get("job"))
    if failure:
        c.print(Text(failure, style="bold red"))
    for p in summary.get("headline", []):
        c.print(Text(f"data quality: {p}", style="bold yellow"))


def _print_totals(c: Any, summary: dict[str, Any], io_known: bool) -> None:
    """The run's I/O, CPU and spill."""
    io, cpu = summary["io"], summary["cpu"]
    share = io["attributed_bytes_share"]  # the tasks' own bytes (not P2P shard writes)
    if io_known:
        c.print(f"I/O: {human_bytes(io['total']['bytes'])} in {io['total']['ops']:,.0f} ops; "
                f"attributed to tasks: "
                + (f"{share:.1%}" if share is not None else "n/a (no DXT segments)")
                + _by_method(io) + _destinations(summary)
                + ("; of the I/O that was read (see data quality above)"
                   if summary.get("headline") else ""))
    else:
        c.print("I/O: unknown (not captured)")
    inside = ("not captured in tasks" if cpu.get("task_cpu_s") is None
              else f"{cpu['task_cpu_s']:.3f} s in tasks")
    c.print(f"CPU: {inside} (measured for {cpu['executions_with_cpu']:,}/"
            f"{cpu['executions']:,} executions), task wall {_secs(cpu['task_wall_s'])} s"
            + "".join(f" (+ {h['wall_s']:.3f} s {status})" for status, h in
                      (summary.get("handed_back") or {}).items() if h.get("executions")))
    sp = summary.get("spill") or {}
    if sp.get("keys_spilled") or sp.get("input_read_back_s"):
        waited = (f"Dask's disk-read {_secs(sp['input_read_back_s'])} s (inputs out of the "
                  "workers' stores, spilled or not)")
        if sp.get("keys_spilled") is None:
            c.print(f"spill: bytes written and read back {sp['source']['bytes_and_times']}; "
                    + waited)
        else:
            c.print(f"spill: {human_bytes(sp['spilled_bytes'])} of {sp['keys_spilled']:,} keys "
                    f"written ({_secs(sp['spill_write_s'])} s in write calls), "
                    f"{human_bytes(sp['unspilled_bytes'])} read back ({_secs(sp['unspill_read_s'])} s "
                    f"in read calls); {waited}")
        if back := agg.read_back_sentence(summary):
            c.print(Text(back))


def _print_tables(c: Any, summary: dict[str, Any], tables: dict[str, pl.DataFrame], top: int,
                  io_known: bool, segments: pl.LazyFrame | None) -> None:
    """The heaviest prefixes, the labelled groups and the busiest files."""
    tasks, files = tables["tasks"], tables["task_files"]
    if tasks.height:
        prefixes = agg.prefixes(tasks)
        c.print(name_table("Heaviest task prefixes (by wall time)",
                           ["prefix", "runs", "wall s", "cpu s", "read", "written", "io s"],
                           _prefix_rows(prefixes, top, io_known), width=c.width))
        if io_known and (requested := _request_rows(prefixes.head(top), "prefix")):
            c.print(name_table("Their requests (reads and writes × mean size)",
                               ["prefix", "reads", "writes"], requested, width=c.width))
    for title, groups in _labelled(summary):
        c.print(name_table(title, ["span" if title.startswith("By span") else "value", "runs",
                                   "wall s", "cpu s", *(["dask cpu s"] if title.startswith(
                                       "By span") else []), "read", "written", "io s"],
                           [_group_row(r, title.startswith("By span"), io_known)
                            for r in groups[:top * 3]], width=c.width))
    if files.height or tables["unattributed"].height:
        busiest = _files(files, tables["unattributed"], top, segments)
        c.print(name_table("Busiest files (times read: bytes read ÷ distinct bytes read, "
                           "from DXT)", ["path", "bytes", "ops", "io s", "tasks", "times read"],
                           _file_rows(busiest), width=c.width, keep_tail=True))
        if requested := _request_rows(busiest, "path"):
            c.print(name_table("Their requests (reads and writes × mean size)",
                               ["path", "reads", "writes"], requested, width=c.width,
                               keep_tail=True))


def _print_notes(c: Any, summary: dict[str, Any], top: int) -> None:
    """The unattributed I/O's reasons, the clocks, the warnings and the rejected records."""
    io = summary["io"]
    for r in (io.get("unattributed_by_reason") or [])[:top]:
        c.print(Text(f"unattributed: {human_bytes(r['bytes'])} / {r['ops']:,.0f} ops — {r['reason']}"))
    unc = [r["uncertainty_ns"] for r in summary["clocks"] if r["uncertainty_ns"] is not None]
    if unc:
        c.print(f"clocks: {len(summary['clocks'])} offsets, worst uncertainty "
                f"{max(unc) / 1e6:.3f} ms")
    headline = set(summary.get("headline") or [])
    for w in (w for w in summary["warnings"] if w not in headline):  # printed at the top
        c.print(Text(f"warning: {w}", style="yellow"))
    for r in summary["rejects"]:
        c.print(Text(f"rejected: {r['count']:,} from {r['source']} {r['file'] or ''}: "
                     f"{r['reason']}", style="yellow"))


def print_run(run: Correlated, out_dir: Path, options: ReportOptions) -> list[Path]:
    """The summary of a run just correlated into ``out_dir`` (its segments read back from
    there), ``options.top`` rows a table; it writes no file."""
    print_summary(run.summary, run.tables, out=out_dir, top=options.top,
                  segments=load_outputs(out_dir).scan("segments"))
    return []
