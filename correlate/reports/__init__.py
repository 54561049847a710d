"""Reports rendered from a correlate output folder: ``report.md`` (+ ``figures/*.png``),
``report.html`` and ``trace.json``.

``write_reports(out_dir, kinds=...)`` reads only ``out_dir/*.parquet`` and
``out_dir/summary.json`` (``correlate.reports.load``), so reports can be regenerated from an
output folder at any time (``correlate report OUT_DIR``). Output is deterministic: the same
tables give byte-identical files.

Also here: ``compare`` (``compare.md``/``compare.html`` of two runs) and ``terminal`` (the
summary ``correlate`` prints).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from correlate.errors import CorrelateError
from correlate.reports.load import Outputs, load_outputs

__all__ = ["KINDS", "load_outputs", "write_reports"]

KINDS = ("markdown", "html", "trace")


def _writer(kind: str) -> Callable[[Outputs, Path], list[Path]]:
    if kind == "markdown":
        from correlate.reports.markdown import write_markdown

        return write_markdown
    if kind == "html":
        from correlate.reports.html import write_html

        return write_html
    if kind == "trace":
        from correlate.reports.perfetto import write_trace

        return write_trace
    raise CorrelateError(None, f"unknown report kind {kind!r} (choose from {', '.join(KINDS)})")


def write_reports(out_dir: Path, *, kinds: Sequence[str] = KINDS,
                  trace_window: tuple[float, float | None] | None = None) -> list[Path]:
    """Render the requested report kinds into ``out_dir``; return the written paths.
    ``trace_window``: the trace's (start, end) in seconds after the first task start (end
    None: to the last); by default a large run's trace shows its first executions."""
    writers = [_writer(k) for k in kinds]
    outputs = load_outputs(Path(out_dir))
    written: list[Path] = []
    for kind, write in zip(kinds, writers, strict=True):
        if kind == "trace":
            written += write_trace_window(outputs, Path(out_dir), trace_window)
        else:
            written += write(outputs, Path(out_dir))
    return written


def write_trace_window(outputs: Outputs, out_dir: Path,
                       window: tuple[float, float | None] | None) -> list[Path]:
    from correlate.reports.perfetto import write_trace

    return write_trace(outputs, out_dir, window)
