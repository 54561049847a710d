"""``correlate report OUT_DIR``: (re)render reports from an existing output folder.

Reads only the output tables and ``summary.json`` in ``OUT_DIR`` (what ``correlate RUN_DIR``
wrote), so reports can be regenerated at any time without the raw run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

KINDS = ("markdown", "html", "trace")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out_dir", type=Path,
                   help="output folder of `correlate RUN_DIR` (its -o), or the run folder "
                        "itself: its correlated/ is used")
    p.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS),
                   help="which reports to write (default: all): report.md + figures/, "
                        "report.html, trace.json")


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
        written = write_reports(out, kinds=tuple(args.kinds))
    for path in written:
        results().print(f"wrote {path}")
    return 0
