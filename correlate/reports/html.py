"""``report.html``: one self-contained interactive page (inline CSS and JS, no network).

``build_data(outputs) -> dict`` gathers everything the page shows (from
``correlate.reports.aggregate`` and ``correlate.reports.timeline``); ``render_html`` embeds it as
JSON in a ``<script type="application/json">`` block with ``<``, ``>``, ``&``, U+2028 and U+2029
escaped as ``\\uXXXX``, so no run-provided string (key, path, function) can close the script or
inject markup; the page's JS inserts every such string with ``textContent``, never as HTML.

Large runs stay small: at most ``TASK_LIMIT`` task rectangles (the longest half plus a uniform
sample) and ``IO_LIMIT`` I/O rectangles (else merged into time bins) are embedded, and the page
says so. Output is deterministic (sorted rows, ``sort_keys`` JSON, no "now").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from correlate.reports import aggregate as agg
from correlate.reports import findings_html
from correlate.reports.load import Outputs
from correlate.reports.page import render_page
from correlate.reports.timeline import (
    BAR_COLUMNS,
    IO_COLOURS,
    io_bars,
    prefix_colours,
    sample_bars,
    task_bars,
    with_details,
)
from correlate.reports.writer import ReportOptions
from correlate.summary import destinations

TASK_LIMIT = 20_000
IO_LIMIT = 20_000
TOP_TASKS = 100
TOP_FILES = 200
TOP_FUNCTION_PREFIXES = 10
TOP_FUNCTIONS = 15



def _rows(df: pl.DataFrame, cols: list[str]) -> list[dict[str, Any]]:
    """Small frames only (top-N tables)."""
    return [dict(r) for r in df.select(cols).iter_rows(named=True)]


def _columns(df: pl.DataFrame, spec: dict[str, pl.Expr]) -> dict[str, list[Any]]:
    """Columnar lists (compact JSON for the timeline)."""
    sel = df.select(**spec)
    return {name: sel[name].to_list() for name in sel.columns}


def _budget(tasks: pl.DataFrame, summary: dict[str, Any]) -> pl.DataFrame:
    b = agg.worker_budget(tasks, agg.executor_threads(summary), agg.workers_died(summary))
    return b.with_columns(threads_label=pl.Series(
        [agg.threads_text(n, bound) for n, bound in b.select("threads", "threads_bound")
         .iter_rows()], dtype=pl.String))


def _timeline(out: Outputs, colours: dict[str, str]) -> dict[str, Any]:
    tasks = out["tasks"]
    window = agg.run_window(tasks)
    lanes = agg.lanes(tasks)
    if window is None:
        return {"lanes": [], "lane_threads": [], "tasks": {}, "io": {}, "notes": [],
                "span_ms": 0}
    bars = task_bars(out.drawn_tasks(BAR_COLUMNS), lanes, window[0])
    shown = sample_bars(bars, TASK_LIMIT)
    io = io_bars(out.scan("segments"), lanes, bars, window[0], window[1],
                 IO_LIMIT)
    names = list(colours)
    ms = 1e6
    task_cols = _columns(with_details(shown.frame, tasks).with_columns(
        p=pl.col("prefix").replace_strict(names, list(range(len(names))), default=0)), {
        "lane": pl.col("lane"), "start": (pl.col("start") / ms).round(4),
        "dur": ((pl.col("stop") - pl.col("start")) / ms).round(4), "prefix": pl.col("p"),
        "key": pl.col("key"), "cpu": pl.col("cpu_s").round(6),
        "rb": pl.col("read_bytes").round(1), "wb": pl.col("write_bytes").round(1),
        "io": pl.col("io_s").round(6), "id": pl.col("execution_id")})
    states = agg.state_bars(agg.worker_states(out.summary), lanes, window[0], window[1])
    paths = sorted(set(io.frame["path"].drop_nulls().to_list()))
    io_cols = _columns(io.frame.with_columns(
        pi=pl.col("path").replace_strict(paths, list(range(len(paths))), default=None,
                                         return_dtype=pl.Int64)), {
        "lane": pl.col("lane"), "start": (pl.col("start") / ms).round(4),
        "dur": ((pl.col("stop") - pl.col("start")) / ms).round(4),
        "op": (pl.col("op") == "write").cast(pl.Int8), "bytes": pl.col("bytes").round(1),
        "ops": pl.col("ops"), "path": pl.col("pi")})
    return {"lanes": lanes["label"].to_list(), "tasks": task_cols, "io": io_cols,
            "lane_threads": lanes["thread_id"].cast(pl.String).to_list(),
            "paths": paths, "span_ms": round((window[1] - window[0]) / ms, 4),
            "task_total": shown.total, "io_total": io.total,
            # the workers' memory pauses and deaths on their lanes
            "states": _columns(states, {
                "lane": pl.col("lane"), "start": (pl.col("start") / ms).round(4),
                "dur": ((pl.col("stop") - pl.col("start")) / ms).round(4),
                "died": (pl.col("state") == agg.DIED).cast(pl.Int8)}),
            "notes": [n for n in (shown.note, io.note) if n]}


def _top_tasks(tasks: pl.DataFrame) -> list[dict[str, Any]]:
    ids: set[int] = set()
    for by in ("duration_s", "cpu_s", "io_bytes"):
        ids |= set(agg.top_tasks(tasks, by, TOP_TASKS)["execution_id"].to_list())
    top = agg.top_tasks(tasks.filter(pl.col("execution_id").is_in(sorted(ids))), "duration_s",
                        len(ids))
    return _rows(top, ["execution_id", "key", "prefix", "worker", "thread_id", "duration_s",
                       "awaiting_s", "cpu_s", "io_time_s", "read_bytes", "write_bytes", "io_bytes",
                       "attribution", "status"])


def _functions(out: Outputs) -> list[dict[str, Any]]:
    names = agg.prefixes(out["tasks"]).head(TOP_FUNCTION_PREFIXES)["prefix"].to_list()
    f = agg.top_functions(out.scan("task_functions"), out["tasks"], names, TOP_FUNCTIONS)
    return _rows(f.with_columns(pl.col("clock").cast(pl.String),
                                pl.col("ncall_kind").cast(pl.String)),
                 ["prefix", "module", "name", "file", "line", "tsub_s", "ttot_s", "ncall",
                  "ncall_kind", "executions", "clock"])


def _quality(out: Outputs) -> dict[str, Any]:
    q = agg.quality(out.summary, out["clocks"], out["tasks"], out.missing)
    clocks = q["clocks"].with_columns(pl.col("domain").cast(pl.String))
    return {"clocks": _rows(clocks, clocks.columns), "warnings": q["warnings"],
            "rejects": q["rejects"], "not_closed": q["not_closed"],
            "segments_by_method": q["segments_by_method"],
            "attributed_by_method": q["attributed_by_method"],
            "statuses": _rows(q["statuses"], ["status", "executions"]),
            "notes": q["notes"],
            "missing_tables": q["missing_tables"],
            "matching": [{"text": m, "warn": w} for m, w in q["matching"]],
            "worst_uncertainty_ns": q["worst_uncertainty_ns"]}


def build_data(out: Outputs) -> dict[str, Any]:
    """Everything the page shows, as plain JSON-able values."""
    tasks = out["tasks"]
    pre = agg.prefixes(tasks)
    colours = prefix_colours(pre["prefix"].fill_null("?").to_list())
    s = out.summary
    files, file_total = agg.busiest_files(out["task_files"], out["unattributed"], TOP_FILES,
                                          out.scan("segments"))
    prefixes = _rows(pre.with_columns(pl.col("prefix").fill_null("?")),
                     ["prefix", "executions", "wall_s", "mean_s", "max_s", "cpu_s", "other_s",
                      "io_s", "read_bytes", "write_bytes", "read_ops", "read_mean_bytes",
                      "write_ops", "write_mean_bytes"])
    for row in prefixes:
        row["colour"] = colours[row["prefix"]]
    return {
        "facts": [list(f) for f in agg.run_facts(s, tasks)],
        "headline": {"executions": s.get("runs", tasks.height), "tasks": tasks["key"].n_unique(),
                     "source_format": s.get("source_format"), "io": s.get("io") or {},
                     "cpu": s.get("cpu") or {},
                     # problems that change the numbers: shown under the headline
                     "problems": s.get("headline") or []},
        "timeline": _timeline(out, colours),
        "io_colours": IO_COLOURS,
        "prefixes": prefixes,
        "workers": _rows(_budget(tasks, s), ["worker", "threads", "threads_label", "executions",
                                          "thread_s", "cpu_s", "io_s", "other_s",
                                          "other_includes_io", "idle_s", "busy_share",
                                          "coroutine_s", "coroutines", "waiting_s",
                                          "paused_s", "free_thread_s", "transfer_s",
                                          "read_back_s"]),
        "spill": _rows(agg.spill(tasks, "key").head(TOP_FILES), ["key", *agg.SPILL])
        if set(agg.SPILL) <= set(tasks.columns) else [],
        "read_back": agg.read_back_sentence(s),
        "shuffles": agg.shuffles(s),
        "arrivals": agg.arrivals(s),
        "destinations": [list(d) for d in destinations(s)],
        "top_tasks": _top_tasks(tasks),
        "files": _rows(files,
                       ["path", "read_bytes", "write_bytes", "outside_bytes", "ops",
                        "read_ops", "read_mean_bytes", "write_ops", "write_mean_bytes",
                        "read_times", "io_s", "tasks", "doubtful_name", "refiled"]),
        "file_total": file_total,
        "functions": _functions(out),
        "unattributed": _rows(agg.unattributed_io(out["unattributed"]),
                              ["reason", "role", "thread_kind", "bytes", "ops", "io_s",
                               "files", "processes"]),
        "cpu_outside": agg.cpu_outside_tasks(s),
        "cpu_coverage": _rows(agg.cpu_coverage(tasks), ["worker", "executions", "unmeasured",
                                                        "unmeasured_wall_s", "cpu_s",
                                                        "wall_s"]),
        "quality": _quality(out),
        "spans": s.get("spans") or [],
        "groups": s.get("groups") or {},
    }


def render_html(out: Outputs) -> str:
    """The whole page as a string."""
    return render_page("report", title="Dask run report", data=build_data(out),
                       **findings_html.context(out))


def write_html(out: Outputs, out_dir: Path, options: ReportOptions) -> list[Path]:
    """Write ``report.html``; return its path."""
    path = Path(out_dir) / "report.html"
    path.write_text(render_html(out), encoding="utf-8")
    return [path]
