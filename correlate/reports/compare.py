"""Writing a comparison: ``compare_<dim>.parquet``, ``compare.md`` with a PNG of the per-prefix
changes, ``compare.html`` (one self-contained page, styled like ``report.html``) and the terminal
view. Deterministic (sorted rows, fixed figure metadata, ``sort_keys`` JSON, no "now").

Run-provided strings (prefixes, paths, functions) go into Markdown as code spans
(``correlate.reports.cells.code``) and into the page as JSON escaped by
``correlate.reports.page.embed_json``, inserted by the page's script with ``textContent`` only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
from rich.text import Text

from correlate.compare import Comparison
from correlate.console import name_table, results
from correlate.reports.cells import code, table, text
from correlate.reports.fmt import human_bytes
from correlate.reports.page import render_page
from correlate.reports.writer import ReportOptions

HTML_ROWS = 500
#: rows a table in compare.md
MD_TOP = 20
TOP_FIGURE = 15


def _figure(d: pl.DataFrame, path: Path, top: int = TOP_FIGURE) -> None:
    # the Agg canvas directly, as figures.py does: no pyplot state, no backend switched in
    # the caller's process
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = d.head(top)
    labels = [str(x) for x in rows["item"].to_list()][::-1]
    values = rows["span_s_delta"].fill_null(0).to_list()[::-1]
    fig = Figure(figsize=(8, 0.35 * max(len(labels), 2) + 1), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.barh(labels, values, color=["#c0392b" if v > 0 else "#27ae60" for v in values])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("change in the job span's share (s), after − before")
    ax.set_title("Per-prefix contribution to the job span's change")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": None})


# ---------- Markdown ----------

#: a figure a side did not measure (I/O without Darshan)
UNKNOWN = "unknown"


def _s(x: float | None) -> str:
    return UNKNOWN if x is None else f"{x:.3f}"


def _ds(x: float | None) -> str:
    """Signed seconds with 3 decimals; a change that rounds to zero is ``0.000``, unsigned;
    ``unknown`` where a side did not measure it."""
    if x is None:
        return UNKNOWN
    return f"{x:+.3f}" if round(x, 3) else "0.000"


def _dbytes(x: float | None) -> str:
    # ASCII minus, as Python's signed formats (:+.3f) write it everywhere else in compare.md
    if x is None:
        return UNKNOWN
    return "0" if not x else ("+" if x > 0 else "-") + human_bytes(abs(x))


def _n(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def _both(r: dict[str, Any], m: str, fmt: Callable[[float], str] = _s) -> str:
    return f"{fmt(r[f'{m}_before'])} → {fmt(r[f'{m}_after'])}"


def _yes(r: dict[str, Any]) -> str:
    if r["significant"]:
        return "**yes**"
    if r.get("machine"):
        return "machine"
    return "too few runs" if r.get("evidence") else "no"


MD_TABLES = {
    "prefix": (["rank", "prefix", "runs", "Δ span share s", "task time s before → after",
                "Δ task time s", "Δ CPU s", "Δ I/O time s", "Δ bytes read + written",
                "Δ waiting s¹", "changed"],
               lambda r: [str(r["rank"]), code(r["item"]), _both(r, "executions", _n),
                          _ds(r["span_s_delta"]), _both(r, "wall_s"), _ds(r["wall_s_delta"]),
                          _ds(r["cpu_s_delta"]),
                          _ds(r["io_time_s_delta"]),
                          _dbytes(None if r["read_bytes_delta"] is None
                                  else r["read_bytes_delta"] + r["write_bytes_delta"]),
                          _ds(r["wait_s_delta"]), _yes(r)]),
    "file": (["rank", "path", "tasks", "I/O time s before → after", "Δ I/O time s", "Δ read",
              "Δ written", "changed"],
             lambda r: [str(r["rank"]), code(r["item"]), _both(r, "executions", _n),
                        _both(r, "io_time_s"), _ds(r["io_time_s_delta"]),
                        _dbytes(r["read_bytes_delta"]), _dbytes(r["write_bytes_delta"]),
                        _yes(r)]),
    "function": (["rank", "function", "executions", "exclusive s before → after",
                  "Δ exclusive s", "Δ inclusive s", "Δ calls", "changed"],
                 lambda r: [str(r["rank"]), code(r["item"]), _both(r, "executions", _n),
                            _both(r, "wall_s"), _ds(r["wall_s_delta"]), _ds(r["ttot_s_delta"]),
                            f"{r['ncall_delta']:+,.0f}", _yes(r)]),
}
#: by Dask span: the prefix table's columns, named for spans
MD_TABLES["span"] = (["rank", "span", *MD_TABLES["prefix"][0][2:]], MD_TABLES["prefix"][1])

MD_NOTES = {
    "prefix": "Task time = summed execution time (start to stop on a thread); span share = "
              "the prefix's part of the job's span (each instant shared by the executions "
              "running then); rows ranked by its change. ¹ Waiting (for dependencies, the "
              "queue, a thread, external data) happens before an execution starts and is not "
              "part of task time. Changed: counts beyond 2% (and their run-to-run range), or "
              "timings by a rank test of the executions (p below 0.01); machine: the machine or "
              "the concurrency, not this prefix.",
    "span": "By the Dask span each task ran in (`distributed.span`, its name path; each span "
            "without its sub-spans), compared as prefixes are: task time, span share of the "
            "job, counts and timings judged the same way.",
    "file": "I/O time = time inside the calls on the file, summed over attributed task "
            "executions; tasks = executions that touched it.",
    "function": "Exclusive = time in the function itself, inclusive = with its callees, "
                "from the function profiles (statistical with `--profile sample`, whose "
                "calls are stack samples).",
}


def _noise_text(c: Comparison) -> str:
    from correlate.compare.changes import COUNT_TOLERANCE
    from correlate.compare.stats import ALPHA

    return (f"no change beyond noise: no {c.by} moved a count (executions, bytes, "
            f"operations, calls, spill, transfers, files) by more than {COUNT_TOLERANCE:.0%}, "
            f"and no timing differs by a rank test of its executions (p below {ALPHA})")


def render_markdown(c: Comparison, *, top: int = 20, figure: str | None = None) -> str:
    md = [f"# Comparison: {code(c.names[0])} → {code(c.names[1])}", ""]
    md += ["## Setup differences", ""]
    md += [f"- {text(s)}" for s in c.setup] or [
        "- none: same command, workers, threads, versions, environment and collectors"]
    md += ["", "## What changed", ""]
    if c.totals:
        md += [text(c.totals), ""]
    lines = [f"- {code(item)}: {text(why)}" for item, why in c.explained]
    if c.machine:
        lines.insert(c.machine_at, f"- {text(c.machine)}")
    md += lines or [f"- {_noise_text(c)}"]
    md += [""]
    if c.findings is not None:
        md += ["## Findings", "", *(f"- {text(line)}" for line in c.findings), ""]
    if figure:
        md += [f"![per-prefix change]({figure})", ""]
    for dim, d in c.diffs.items():
        header, row = MD_TABLES[dim]
        shown = f"top {top} of {d.height}" if d.height > top else f"{d.height}"
        md += [f"## By {dim} ({shown}, by |Δ|)", ""]
        if d.is_empty():
            md += ["Nothing recorded in either run.", ""]
            continue
        md += table(header, [row(r) for r in d.head(top).iter_rows(named=True)],
                    "rl" + "r" * (len(header) - 3) + "l")
        md += [MD_NOTES[dim], ""]
    return "\n".join(md)


# ---------- HTML ----------

#: (column, label, kind) per dimension; kinds are formatters in compare.js.
HTML_COLUMNS = {
    "prefix": [("rank", "rank", "n"), ("item", "prefix", "text"),
               ("executions_before", "runs before", "n"), ("executions_after", "runs after", "n"),
               ("span_s_delta", "Δ span share", "ds"),
               ("wall_s_before", "task time before", "s"),
               ("wall_s_after", "task time after", "s"),
               ("wall_s_delta", "Δ task time", "ds"), ("wall_s_rel", "Δ task time %", "dpct"),
               ("cpu_s_delta", "Δ CPU", "ds"), ("io_time_s_delta", "Δ I/O time", "ds"),
               ("read_bytes_delta", "Δ read", "dbytes"),
               ("write_bytes_delta", "Δ written", "dbytes"),
               ("wait_s_delta", "Δ waiting", "ds"),
               ("transfer_bytes_delta", "Δ input transfers", "dbytes"),
               ("significant", "changed", "bool")],
    "file": [("rank", "rank", "n"), ("item", "path", "text"),
             ("executions_before", "tasks before", "n"), ("executions_after", "tasks after", "n"),
             ("io_time_s_before", "I/O time before", "s"),
             ("io_time_s_after", "I/O time after", "s"),
             ("io_time_s_delta", "Δ I/O time", "ds"), ("io_time_s_rel", "Δ I/O time %", "dpct"),
             ("read_bytes_delta", "Δ read", "dbytes"),
             ("write_bytes_delta", "Δ written", "dbytes"),
             ("significant", "changed", "bool")],
    "function": [("rank", "rank", "n"), ("item", "function", "text"),
                 ("executions_before", "executions before", "n"),
                 ("executions_after", "executions after", "n"),
                 ("wall_s_before", "exclusive before", "s"),
                 ("wall_s_after", "exclusive after", "s"),
                 ("wall_s_delta", "Δ exclusive", "ds"), ("wall_s_rel", "Δ exclusive %", "dpct"),
                 ("ttot_s_delta", "Δ inclusive", "ds"), ("ncall_delta", "Δ calls", "n"),
                 ("significant", "changed", "bool")],
}
HTML_COLUMNS["span"] = [("rank", "rank", "n"), ("item", "span", "text"),
                        *HTML_COLUMNS["prefix"][2:]]


def build_html_data(c: Comparison, *, rows: int = HTML_ROWS) -> dict[str, Any]:
    """Everything compare.html shows, as plain JSON-able values."""
    dims = {}
    for dim, d in c.diffs.items():
        cols = HTML_COLUMNS[dim]
        shown = d.head(rows).select([k for k, _, _ in cols]).with_columns(
            pl.col("item").cast(pl.String))
        dims[dim] = {"columns": [list(col) for col in cols],
                     "rows": [dict(r) for r in shown.iter_rows(named=True)],
                     "total": d.height}
    prefix = c.diffs["prefix"].head(TOP_FIGURE)
    return {
        "names": list(c.names), "by": c.by, "setup": list(c.setup), "totals": c.totals,
        "machine": c.machine, "machine_at": c.machine_at,
        "explained": [{"item": item, "why": why} for item, why in c.explained],
        "noise": _noise_text(c), "findings": c.findings,
        "chart": {"labels": prefix["item"].cast(pl.String).to_list(),
                  "values": prefix["span_s_delta"].fill_null(0).to_list()},
        "dimensions": dims, "notes": {dim: MD_NOTES[dim].replace("`", "").replace("¹ ", "")
                                     for dim in dims},
    }


def render_html(c: Comparison) -> str:
    return render_page("compare", title="Dask run comparison", data=build_html_data(c))


# ---------- files and terminal ----------

def write_comparison(c: Comparison, out: Path, options: ReportOptions) -> list[Path]:
    """Write every comparison file into ``out`` (``MD_TOP`` rows a table in compare.md);
    return the written paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for dim, d in c.diffs.items():
        path = out / f"compare_{dim}.parquet"
        d.write_parquet(path, statistics=False)
        written.append(path)
    png = out / "figures" / "compare.png"
    _figure(c.diffs["prefix"], png)
    md, html = out / "compare.md", out / "compare.html"
    md.write_text(render_markdown(c, top=MD_TOP, figure="figures/compare.png"),
                  encoding="utf-8")
    html.write_text(render_html(c), encoding="utf-8")
    return [*written, png, md, html]


def print_comparison(c: Comparison, out: Path, options: ReportOptions) -> list[Path]:
    """Print the comparison (``options.top`` rows); it writes no file."""
    cons = results()
    for s in c.setup:
        cons.print(Text(f"setup differs: {s}", style="yellow"))
    if c.totals:
        cons.print(Text(c.totals))
    if not c.explained and not c.machine:
        cons.print(Text(_noise_text(c)))
    for i, (item, why) in enumerate(c.explained):
        if c.machine and i == c.machine_at:
            cons.print(Text(c.machine, style="yellow"))
        cons.print(Text.assemble((item, "bold"), f": {why}"))
    if c.machine and c.machine_at >= len(c.explained):
        cons.print(Text(c.machine, style="yellow"))
    for line in c.findings or []:
        cons.print(Text.assemble(("findings", "bold"), f" {line}"))
    rows = [[r["item"], f"{r['executions_before']}→{r['executions_after']}",
             f"{r['wall_s_before']:.3f}", f"{r['wall_s_after']:.3f}", _ds(r["wall_s_delta"])]
            for r in c.diffs[c.by].head(options.top).iter_rows(named=True)]
    cons.print(name_table(None, ("item", "runs", "before s", "after s", "Δ s"), rows,
                          width=cons.width, keep_tail=c.by == "file"))
    cons.print(f"comparison written to {out} (compare.md, compare.html, compare_*.parquet)")
    return []
