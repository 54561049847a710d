"""``correlate compare BEFORE AFTER``: what got slower, where, and why.

Each argument is a run folder (ours or imported) or an output folder written by ``correlate``.
A run folder without a ``correlated/`` output is correlated into the comparison's output folder
(``before/`` or ``after/`` there), never into the input folder, and the command says so. Writes
``compare_<dimension>.parquet`` for prefix, file and function, ``compare.md`` with
``figures/compare.png``, and ``compare.html`` (self-contained, styled like ``report.html``) into
``-o`` (default ``AFTER/compare``), and prints the top changes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import polars as pl

from correlate.errors import InputError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("before", type=Path, help="the reference run (folder or its output folder)")
    p.add_argument("after", type=Path, help="the run to explain")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="output folder (default: AFTER/compare)")
    p.add_argument("--by", choices=("prefix", "file", "function"), default="prefix",
                   help="dimension shown first (all three are written)")
    p.add_argument("--top", type=int, default=10, help="rows in the printed table")


def _output_dir(path: Path, cache: Path) -> Path:
    """The correlate output folder of ``path``. A run without one is correlated into
    ``cache`` (inside the comparison's output): an input folder may be someone else's (a
    repository's sample), so nothing is written into it."""
    if not path.exists():
        raise InputError(path, "no such file or directory")
    if (path / "tasks.parquet").exists():
        return path
    if (path / "correlated" / "tasks.parquet").exists():
        return path / "correlated"
    from correlate.console import console
    from correlate.engine import correlate_to
    from correlate.sources.detect import load

    console().print(f"{path} has no correlate output yet: correlating it into {cache}")
    correlate_to(load(path, None, lazy=True), cache)
    return cache


def read_outputs(out: Path) -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    tables = {n: pl.read_parquet(out / f"{n}.parquet")
              for n in ("tasks", "task_files", "task_functions")}
    return tables, json.loads((out / "summary.json").read_text())


def run(args: argparse.Namespace) -> int:
    from correlate import compare
    from correlate.reports.compare import Comparison, print_comparison, write_comparison

    out = args.out or (args.after / "compare")
    (tb, sb), (ta, sa) = (read_outputs(_output_dir(p, out / side))
                          for p, side in ((args.before, "before"), (args.after, "after")))
    profiles = {by: (compare.profile(tb, by), compare.profile(ta, by))
                for by in compare.DIMENSIONS}
    diffs = {by: compare.diff(b, a) for by, (b, a) in profiles.items()}
    c = Comparison(diffs=diffs, names=(str(args.before), str(args.after)), by=args.by,
                   setup=compare.setup_differences(sb, sa),
                   explained=compare.explanations(
                       diffs[args.by], args.by,
                       call_counts=compare.exact_call_counts(sb) and compare.exact_call_counts(sa)),
                   totals=" ".join(filter(None, (
                       compare.totals_line(*profiles["prefix"], diffs["prefix"]),
                       compare.destinations_line(sb, sa)))),
                   noise_floor_s=compare.ABS_NOISE_SHARE * compare.dimension_total(
                       *profiles[args.by]), rel_noise=compare.REL_NOISE)
    write_comparison(out, c)
    print_comparison(c, top=args.top, out=out)
    return 0
