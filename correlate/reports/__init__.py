"""Reports rendered from a correlate output folder: ``report.md`` (+ ``figures/*.png``),
``report.html`` and ``trace.json``.

``write_reports(out_dir, kinds=...)`` reads only ``out_dir/*.parquet`` and
``out_dir/summary.json`` (``correlate.reports.load``), so reports can be regenerated from an
output folder at any time (``correlate report OUT_DIR``). Output is deterministic: the same
tables give byte-identical files.

Every writer has one signature, ``write(outputs, out_dir, options) -> written paths``, and is
named in ``WRITERS``; a new output is a module here with such a function and a line there.
Also here: ``compare`` (``compare.md``/``compare.html`` of two runs, from ``correlate.compare.changes``'s
data), ``explain`` (its sentences) and ``terminal`` (the summary ``correlate`` prints).

This module imports no renderer (nor polars) until one is asked for: the CLI reads ``KINDS``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from correlate.errors import CorrelateError

if TYPE_CHECKING:
    from correlate.reports.load import Outputs

#: report kind -> "module:function" of its writer
WRITERS = {"markdown": "correlate.reports.markdown:write_markdown",
           "html": "correlate.reports.html:write_html",
           "trace": "correlate.reports.trace.perfetto:write_trace"}
KINDS = tuple(WRITERS)


@dataclass(frozen=True)
class ReportOptions:
    #: the trace's (start, end) in seconds after the first task start (end None: to the
    #: last); None: a large run's trace shows its first executions
    trace_window: tuple[float, float | None] | None = None


def writer(kind: str) -> Callable[[Outputs, Path, ReportOptions], list[Path]]:
    if kind not in WRITERS:
        raise CorrelateError(None, f"unknown report kind {kind!r} (choose from "
                                   f"{', '.join(KINDS)})")
    module, function = WRITERS[kind].split(":")
    write: Callable[[Outputs, Path, ReportOptions], list[Path]] = getattr(
        importlib.import_module(module), function)
    return write


def write_reports(out_dir: Path, *, kinds: Sequence[str] = KINDS,
                  trace_window: tuple[float, float | None] | None = None) -> list[Path]:
    """Render the requested report kinds into ``out_dir``; return the written paths."""
    from correlate.reports.load import load_outputs

    writers = [writer(k) for k in kinds]
    outputs = load_outputs(Path(out_dir))
    options = ReportOptions(trace_window=trace_window)
    return [path for write in writers for path in write(outputs, Path(out_dir), options)]



__all__ = ["KINDS", "WRITERS", "ReportOptions", "write_reports", "writer"]
