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
                   help="output folder of `correlate RUN_DIR` (default RUN_DIR/correlated)")
    p.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS),
                   help="which reports to write (default: all): report.md + figures/, "
                        "report.html, trace.json")


def run(args: argparse.Namespace) -> int:
    from correlate.console import console
    from correlate.reports import write_reports

    with console().status(f"writing reports into {args.out_dir}"):
        written = write_reports(args.out_dir, kinds=tuple(args.kinds))
    for path in written:
        console().print(f"wrote {path}")
    return 0
