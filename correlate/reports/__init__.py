"""Reports rendered from a correlate output folder: ``report.md`` (+ ``figures/*.png``),
``report.html`` and ``trace.json``.

``write_reports(out_dir, kinds=...)`` reads only ``out_dir/*.parquet`` and
``out_dir/summary.json`` (``correlate.reports.load``), so reports can be regenerated from an
output folder at any time (``correlate report OUT_DIR``). Output is deterministic: the same
tables give byte-identical files.

Every output is a ``Writer`` (``writer.py``): ``write(data, out_dir, options) -> written
paths``. Those of an output folder are named in ``WRITERS``: a new report is a module here
with such a function and one line there. The other outputs are writers of their own input:
``compare`` (``compare.md``/``compare.html`` and the printed comparison, from a
``correlate.compare.Comparison``), ``terminal`` (the summary ``correlate`` prints) and
``lifecycles`` (``task_lifecycles.jsonl`` of a run's ``RunFrames``); ``figures`` draws
report.md's PNGs.
Formatting helpers: ``fmt`` (numbers) and ``cells`` (Markdown cells).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from correlate.errors import CorrelateError
from correlate.reports import html, markdown
from correlate.reports.load import Outputs, load_outputs
from correlate.reports.trace import perfetto
from correlate.reports.writer import ReportOptions, Writer

#: report kind -> its writer, in the order they are written
WRITERS: dict[str, Writer[Outputs]] = {
    "markdown": markdown.write_markdown,
    "html": html.write_html,
    "trace": perfetto.write_trace,
}
KINDS = tuple(WRITERS)


def writer(kind: str) -> Writer[Outputs]:
    if kind not in WRITERS:
        raise CorrelateError(None, f"unknown report kind {kind!r} (choose from "
                                   f"{', '.join(KINDS)})")
    return WRITERS[kind]


def write_reports(out_dir: Path, *, kinds: Sequence[str] = KINDS,
                  trace_window: tuple[float, float | None] | None = None) -> list[Path]:
    """Render the requested report kinds into ``out_dir``; return the written paths."""
    writers = [writer(k) for k in kinds]
    outputs = load_outputs(Path(out_dir))
    options = ReportOptions(trace_window=trace_window)
    return [path for write in writers for path in write(outputs, Path(out_dir), options)]


__all__ = ["KINDS", "WRITERS", "ReportOptions", "Writer", "write_reports", "writer"]
