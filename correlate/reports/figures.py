"""PNG figures for ``report.md``: a per-thread timeline with I/O overlaid and bar charts per
task prefix.

Rendering is deterministic: the Agg canvas is used directly (no pyplot state), sizes, dpi and
fonts are fixed, every input is sorted, and the PNG carries no "Software" or time metadata, so
the same output tables give byte-identical files. Text from the run (prefixes, keys) is shown
literally: ``$`` is escaped so it never turns into mathtext.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib import rc_context
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from correlate.frames.scalars import number
from correlate.reports import aggregate as agg
from correlate.reports.aggregate import DIED, PAUSED
from correlate.reports.load import Outputs
from correlate.reports.timeline import (
    BAR_COLUMNS,
    IO_COLOURS,
    OTHER_COLOUR,
    io_bars,
    prefix_colours,
    sample_bars,
    task_bars,
    with_details,
)
from correlate.reports.writer import ReportOptions

#: the critical path's outline and line on the timeline
PATH_COLOUR = "black"
#: a worker's memory pause behind its lanes
PAUSED_COLOUR = "#e6dec8"  # (not in the prefix PALETTE)

DPI = 100
WIDTH_IN = 12.0
MAX_LANES = 48
MAX_PREFIX_BARS = 15
#: bars drawn at most on the timeline: executions, I/O
TASK_BARS = 50_000
IO_BARS = 50_000
RC: dict[Any, Any] = {"font.family": "DejaVu Sans", "font.size": 9, "svg.hashsalt": "dask-correlate",
      "path.simplify": False, "axes.spines.top": False, "axes.spines.right": False}


def plain(text: object) -> str:
    """Text for matplotlib that is never parsed as mathtext."""
    return str(text).replace("$", r"\$")


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png", metadata={"Software": None})
    return path


def _rects(start_s: np.ndarray, stop_s: np.ndarray, y0: np.ndarray, h: float) -> np.ndarray:
    """(n, 4, 2) polygon vertices of rectangles."""
    x0, x1, y1 = start_s, np.maximum(stop_s, start_s), y0 + h
    return np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1),
                     np.stack([x0, y1], 1)], 1)


def timeline(bars: pl.DataFrame, io: pl.DataFrame, lane_labels: list[str],
             colours: dict[str, str], path: Path, *, note: str = "",
             critical: pl.DataFrame | None = None,
             states: pl.DataFrame | None = None) -> Path:
    """Lanes (worker · thread) top to bottom, tasks coloured by prefix, I/O as thin strips
    along the bottom of each lane (dark: read, magenta: write); ``critical``: the critical
    path's links as bars (lane, start, stop), outlined and joined by a black line;
    ``states``: the workers' memory pauses, shaded behind their lanes, and deaths, a cross
    where their lanes end (``aggregate.state_bars``)."""
    shown = min(len(lane_labels), MAX_LANES)
    bars = bars.filter(pl.col("lane") < shown)
    io = io.filter(pl.col("lane") < shown)
    height = 1.6 + 0.32 * max(shown, 1)
    with rc_context(RC):
        fig = Figure(figsize=(WIDTH_IN, height), dpi=DPI, layout="constrained")
        ax = fig.add_subplot()
        states = (states if states is not None else pl.DataFrame(
            schema={"lane": pl.Int64, "state": pl.String, "start": pl.Int64,
                    "stop": pl.Int64})).filter(pl.col("lane") < shown)
        _draw_states(ax, states)
        _draw_tasks(ax, bars, colours)
        _draw_io(ax, io)
        if critical is not None:
            _draw_path(ax, critical.filter(pl.col("lane") < shown))
        ax.set_yticks(np.arange(shown) + 0.4, [plain(x) for x in lane_labels[:shown]])
        ax.set_ylim(shown, -0.2)
        ax.set_xlabel("seconds since the first task started")
        end = max((number(bars["stop"].max()) or 0.0) / 1e9 if bars.height else 1.0,
                  (number(states["stop"].max()) or 0.0) / 1e9)
        ax.set_xlim(0, max(end, 1e-6) * 1.01)
        title = "Task executions per worker thread, I/O overlaid"
        if len(lane_labels) > shown:
            title += f" (first {shown} of {len(lane_labels)} threads)"
        wrapped = "\n".join(textwrap.wrap(note, 110)) if note else ""
        ax.set_title(plain(title + (f"\n{wrapped}" if wrapped else "")), loc="left")
        _legend(ax, colours, critical is not None and not critical.is_empty(),
                set(states["state"].to_list()))
        return _save(fig, path)


def _draw_states(ax: Axes, states: pl.DataFrame) -> None:
    """Memory pauses behind their worker's lanes (hatched grey), deaths as a black cross
    where the worker's lanes end."""
    paused = states.filter(pl.col("state") == PAUSED)
    if paused.height:
        verts = _rects(paused["start"].to_numpy() / 1e9, paused["stop"].to_numpy() / 1e9,
                       paused["lane"].to_numpy().astype(float) - 0.05, 0.9)
        ax.add_collection(PolyCollection(list(verts), facecolors=PAUSED_COLOUR,
                                         edgecolors="#9a9a9a", hatch="//", linewidths=0.3,
                                         zorder=0))
    died = states.filter(pl.col("state") == DIED)
    if died.height:
        ax.plot(died["start"].to_numpy() / 1e9, died["lane"].to_numpy() + 0.4, "x",
                color="black", markersize=7, markeredgewidth=1.6, zorder=3)


def _draw_tasks(ax: Axes, bars: pl.DataFrame, colours: dict[str, str]) -> None:
    if bars.is_empty():
        return
    verts = _rects(bars["start"].to_numpy() / 1e9, bars["stop"].to_numpy() / 1e9,
                   bars["lane"].to_numpy().astype(float), 0.8)
    faces = [colours.get(p, OTHER_COLOUR) for p in bars["prefix"].to_list()]
    # white separators help few bars; with thousands they would wash the colours out
    edges = "white" if bars.height <= 2000 else "face"
    ax.add_collection(PolyCollection(list(verts), facecolors=faces, edgecolors=edges,
                                     linewidths=0.3))


def _draw_io(ax: Axes, io: pl.DataFrame) -> None:
    for op, colour in sorted(IO_COLOURS.items()):
        part = io.filter(pl.col("op") == op)
        if part.is_empty():
            continue
        y = part["lane"].to_numpy().astype(float) + (0.6 if op == "read" else 0.7)
        verts = _rects(part["start"].to_numpy() / 1e9, part["stop"].to_numpy() / 1e9, y, 0.1)
        ax.add_collection(PolyCollection(list(verts), facecolors=colour, edgecolors=colour,
                                         linewidths=0.6))


def _draw_path(ax: Axes, links: pl.DataFrame) -> None:
    """The critical path: each link outlined, a line from each link's end to the next's
    start (through the wait between them)."""
    if links.is_empty():
        return
    start, stop = links["start"].to_numpy() / 1e9, links["stop"].to_numpy() / 1e9
    lane = links["lane"].to_numpy().astype(float)
    ax.add_collection(PolyCollection(list(_rects(start, stop, lane, 0.8)), facecolors="none",
                                     edgecolors=PATH_COLOUR, linewidths=1.4))
    xs = np.column_stack([start, stop]).ravel()
    ys = np.repeat(lane + 0.4, 2)
    ax.plot(xs, ys, color=PATH_COLOUR, linewidth=1.2, label="critical path")


def _legend(ax: object, colours: dict[str, str], with_path: bool = False,
            states: set[str] | frozenset[str] = frozenset()) -> None:
    handles: list[Artist] = [Patch(color=c, label=plain(p))
                             for p, c in list(colours.items())[:12]]
    if len(colours) > 12:
        handles.append(Patch(color=OTHER_COLOUR, label="other prefixes"))
    handles += [Patch(color=c, label=f"I/O {op}") for op, c in sorted(IO_COLOURS.items())]
    if with_path:
        handles += [Patch(facecolor="none", edgecolor=PATH_COLOUR, label="critical path")]
    if PAUSED in states:
        handles += [Patch(facecolor=PAUSED_COLOUR, edgecolor="#9a9a9a", hatch="//",
                          label="worker paused (memory)")]
    if DIED in states:
        handles += [Line2D([], [], marker="x", color="black", linestyle="none",
                           label="worker died (removed)")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0),  # type: ignore[attr-defined]
              fontsize=8, frameon=False)


def prefix_bars(prefixes: pl.DataFrame, colours: dict[str, str], path: Path) -> Path:
    """Per prefix (heaviest by wall time first): wall, CPU and I/O seconds; MiB read and
    written. A quantity no execution had measured (null for every prefix) is not drawn: no
    bar of 0, and no bytes panel at all for a run whose I/O was not captured."""
    p = prefixes.head(MAX_PREFIX_BARS)
    names = [plain(x) for x in p["prefix"].fill_null("?").to_list()]
    y = np.arange(len(names))
    times = _measured([("wall", p["wall_s"], "#4e79a7"), ("CPU", p["cpu_s"], "#f28e2b"),
                       ("I/O", p["io_s"], "#1b1b1b")])
    sizes = _measured([("read", p["read_bytes"] / 2**20, IO_COLOURS["read"]),
                       ("written", p["write_bytes"] / 2**20, IO_COLOURS["write"])])
    with rc_context(RC):
        fig = Figure(figsize=(WIDTH_IN, 1.4 + 0.36 * max(len(names), 1)), dpi=DPI,
                     layout="constrained")
        axes = fig.subplots(1, 2 if sizes else 1, sharey=True, squeeze=False)[0]
        left = axes[0]
        _grouped(left, y, times)
        left.set_xlabel("seconds (sum over executions)")
        if sizes:
            _grouped(axes[1], y, sizes)
            axes[1].set_xlabel("MiB")
            axes[1].set_title("Bytes per task prefix", loc="left")
        left.set_yticks(y, names)
        left.set_ylim(len(names) - 0.5, -0.5)
        left.set_title("Time per task prefix" + ("" if sizes else " (I/O not captured)"),
                       loc="left")
        return _save(fig, path)


def _measured(series: list[tuple[str, pl.Series, str]]) -> list[tuple[str, pl.Series, str]]:
    """The series with at least one measured value."""
    return [s for s in series if s[1].is_not_null().any()]


def _grouped(ax: object, y: np.ndarray, series: list[tuple[str, pl.Series, str]]) -> None:
    h = 0.8 / len(series)
    for i, (label, values, colour) in enumerate(series):
        ax.barh(y - 0.4 + h * (i + 0.5), values.fill_null(0.0).to_numpy(), height=h,  # type: ignore[attr-defined]
                color=colour, label=label)
    ax.legend(loc="lower right", fontsize=8, frameon=False)  # type: ignore[attr-defined]


def write_figures(out: Outputs, out_dir: Path, options: ReportOptions) -> list[Path]:
    """Draw report.md's PNGs into ``out_dir/figures`` (``timeline.png``, ``prefixes.png``;
    none for a run without executions); return their paths."""
    tasks = out["tasks"]
    window = agg.run_window(tasks)
    if window is None:
        return []
    pre = agg.prefixes(tasks)
    colours = prefix_colours(pre["prefix"].fill_null("?").to_list())
    lanes = agg.lanes(tasks)
    bars = task_bars(out.drawn_tasks(BAR_COLUMNS), lanes, window[0])
    io = io_bars(out.scan("segments"), lanes, bars, window[0], window[1], IO_BARS)
    shown = sample_bars(bars, TASK_BARS)
    note = "; ".join(n for n in (shown.note, io.note) if n)
    fig_dir = out_dir / "figures"
    critical = bars.join(out["critical_path"].select("execution_id"), on="execution_id",
                         how="semi").sort("start", "execution_id")
    states = agg.state_bars(agg.worker_states(out.summary), lanes, window[0], window[1])
    return [timeline(with_details(shown.frame, tasks), io.frame, lanes["label"].to_list(), colours,
                     fig_dir / "timeline.png", note=note, critical=critical, states=states),
            prefix_bars(pre, colours, fig_dir / "prefixes.png")]
