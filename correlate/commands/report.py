"""``correlate report OUT_DIR``: (re)render reports from an existing output folder.

Reads only the output tables and ``summary.json`` in ``OUT_DIR`` (what ``correlate RUN_DIR``
wrote), so reports can be regenerated at any time without the raw run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from correlate.reports import KINDS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out_dir", type=Path,
                   help="output folder of `correlate RUN_DIR` (its -o), or the run folder "
                        "itself: its correlated/ is used")
    p.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS),
                   help="which reports to write (default: all): report.md + figures/, "
                        "report.html, trace.json")
    p.add_argument("--trace-window", metavar="START:END", type=trace_window, default=None,
                   help="draw in trace.json the executions starting START to END seconds after "
                        "the first task start (END empty: to the last; `0:` all). Default: "
                        "all, or the first 100,000 executions of a larger run and, beside "
                        "them, the critical path's and the 1,000 longest (the trace's first "
                        "track says which), so that Perfetto's UI can open it")


def trace_window(text: str) -> tuple[float, float | None]:
    """``START:END`` seconds (END may be empty) → (start, end or None)."""
    start, sep, end = text.partition(":")
    try:
        window = (float(start or 0), float(end) if end else None)
    except ValueError:
        window = None
    if not sep or window is None or window[0] < 0 or (
            window[1] is not None and window[1] <= window[0]):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected START:END in seconds after the first task start, "
            "START < END (END may be empty), e.g. 0:30 or 120:")
    return window


def _output_folder(path: Path) -> Path:
    """``path``, or its ``correlated/`` when ``path`` is the run folder `correlate` wrote into."""
    inner = path / "correlated"
    if not (path / "summary.json").exists() and (inner / "summary.json").exists():
        return inner
    return path


def run(args: argparse.Namespace) -> int:
    from correlate.console import console, results
    from correlate.reports import write_reports

    out = _output_folder(args.out_dir)
    with console().status(f"writing reports into {out}"):
        written = write_reports(out, kinds=tuple(args.kinds),
                                trace_window=args.trace_window)
    for path in written:
        results().print(f"wrote {path}")
    return 0
