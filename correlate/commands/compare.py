"""``correlate compare BEFORE AFTER`` (or ``correlate compare B1 B2 … --after A1 A2 …``): what
got slower, where, and why.

Each argument is a run folder (ours or imported) or an output folder written by ``correlate``.
With several runs per side, counts are averaged and judged against their run-to-run range, and
a timing must differ by the rank test over all executions *and* lie beyond every run of the
other side. A run folder without a ``correlated/`` output is correlated into the comparison's
output folder (``before/`` or ``after/`` there; ``before-<i>/`` with several runs a side),
never into the input folder, and the command says so. Writes ``compare_<dimension>.parquet``
for prefix, file and function, ``compare.md`` with ``figures/compare.png``, and
``compare.html`` (self-contained, styled like ``report.html``) into ``-o``; the default is ``compare-<BEFORE name>-vs-<AFTER name>`` in the
current folder (never inside a run folder, which may be someone else's or read-only), and
prints the top changes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import polars as pl

from correlate.compare.changes import DIMENSIONS
from correlate.errors import InputError
from correlate.provenance import check, record


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN",
                   help="BEFORE AFTER; or, with --after, every run of the reference side")
    p.add_argument("--after", dest="after_runs", type=Path, nargs="+", default=None,
                   metavar="RUN", help="the runs to explain (several runs of each side: "
                   "`compare B1 B2 --after A1 A2` uses their run-to-run variance)")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="output folder (default: ./compare-<BEFORE>-vs-<AFTER>)")
    p.add_argument("--by", choices=DIMENSIONS, default="prefix",
                   help="dimension shown first (all are written; span: the Dask span each "
                        "task ran in, where both sides' runs have spans)")
    p.add_argument("--top", type=int, default=10, help="rows in the printed table")


def sides(args: argparse.Namespace) -> tuple[list[Path], list[Path]]:
    """The runs of each side from ``RUN…`` and ``--after RUN…``."""
    if args.after_runs:
        return list(args.runs), list(args.after_runs)
    if len(args.runs) != 2:
        raise InputError(Path(" ".join(map(str, args.runs))),
                         f"{len(args.runs)} runs given: name two (BEFORE AFTER), or several "
                         "runs of each side as `compare B1 B2 --after A1 A2`")
    return [args.runs[0]], [args.runs[1]]


def output_folder(args: argparse.Namespace) -> Path:
    """Where ``correlate compare`` writes: ``-o``, else ``default_out`` of the first run of
    each side."""
    before, after = sides(args)
    return args.out or default_out(before[0], after[0])


def default_out(before: Path, after: Path) -> Path:
    """``./compare-<before>-vs-<after>`` from the run folders' names (``correlated`` output
    folders are named by their run)."""
    def name(p: Path) -> str:
        p = p.resolve()
        return p.parent.name if p.name == "correlated" else p.name
    return Path(f"compare-{name(before)}-vs-{name(after)}")


def _output_dir(path: Path, cache: Path) -> Path:
    """The correlate output folder of ``path``. A run without one is correlated into
    ``cache`` (inside the comparison's output): an input folder may be someone else's (a
    repository's sample), so nothing is written into it."""
    if not path.exists():
        raise InputError(path, "no such file or directory")
    if (path / "tasks.parquet").exists():
        parent = path.resolve().parent
        if path.resolve().name == "correlated" and _is_run_folder(parent):
            _made_from(parent, path)  # a run folder's own output: made from it?
        return path
    if (path / "correlated" / "tasks.parquet").exists():
        _made_from(path, path / "correlated")
        return path / "correlated"
    from correlate.console import console
    from correlate.engine import correlate_to
    from correlate.sources.detect import load

    console().print(f"{path} has no correlate output yet: correlating it into {cache}")
    frames = load(path, None, lazy=True)
    correlate_to(frames, cache, inputs=record(path, cache, frames.facts.get("run_id")))
    return cache


def _is_run_folder(path: Path) -> bool:
    from correlate.sources.detect import detect

    try:
        detect(path)
    except InputError:
        return False
    return True


def _made_from(run_dir: Path, out: Path) -> None:
    """Refuse an output folder inside a run folder that was not made from that run folder
    (``correlate r2 -o r1/correlated`` would make ``compare r1 r2`` compare r2 with itself)."""
    check(run_dir, out, json.loads((out / "summary.json").read_text()))


def read_outputs(out: Path) -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    tables = {n: pl.read_parquet(out / f"{n}.parquet")
              for n in ("tasks", "task_files", "task_functions")}
    return tables, json.loads((out / "summary.json").read_text())


def run(args: argparse.Namespace) -> int:
    from correlate.compare import compare_runs
    from correlate.reports.compare import print_comparison, write_comparison
    from correlate.reports.writer import ReportOptions

    before, after = sides(args)
    out = output_folder(args)
    loaded = {side: [read_outputs(_output_dir(
        p, out / (side if len(paths) == 1 else f"{side}-{i + 1}"))) for i, p in enumerate(paths)]
              for side, paths in (("before", before), ("after", after))}
    c = compare_runs(loaded, (" ".join(map(str, before)), " ".join(map(str, after))), args.by)
    options = ReportOptions(top=args.top)
    for write in (write_comparison, print_comparison):
        write(c, out, options)
    return 0
