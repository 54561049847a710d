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

from correlate.compare import DIMENSIONS
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


Loaded = dict[str, list[tuple[dict[str, pl.DataFrame], dict[str, Any]]]]


def _logical_paths(loaded: Loaded) -> Loaded:
    """Every run's ``task_files`` with logical paths matched to the first BEFORE run's
    (``correlate.logical_paths``): scratch, shuffle and output folders differ by run."""
    from correlate.logical_paths import logical_task_files

    runs = [(side, t, s) for side in ("before", "after") for t, s in loaded[side]]
    files = logical_task_files([t["task_files"] for _, t, _ in runs],
                               [t["tasks"] for _, t, _ in runs])
    out: Loaded = {"before": [], "after": []}
    for (side, t, s), f in zip(runs, files, strict=True):
        out[side].append(({**t, "task_files": f}, s))
    return out


def run(args: argparse.Namespace) -> int:
    from correlate import compare
    from correlate.compare_arrivals import explain_arrivals
    from correlate.findings import compare as findings_compare
    from correlate.reports import explain
    from correlate.reports.compare import Comparison, print_comparison, write_comparison

    before, after = sides(args)
    out = args.out or default_out(before[0], after[0])
    loaded = {side: [read_outputs(_output_dir(
        p, out / (side if len(paths) == 1 else f"{side}-{i + 1}"))) for i, p in enumerate(paths)]
              for side, paths in (("before", before), ("after", after))}
    loaded = _logical_paths(loaded)
    sb, sa = loaded["before"][0][1], loaded["after"][0][1]
    exact = compare.exact_call_counts(sb) and compare.exact_call_counts(sa)
    setup = compare.setup_differences(sb, sa)
    spans = ([compare.job_span(t) for t, _ in loaded["before"]],
             [compare.job_span(t) for t, _ in loaded["after"]])
    span = max((s for side in spans for s in side if s is not None), default=None)
    diffs, profiles = {}, {}
    spanned = all(compare.has_spans(t) for side in loaded.values() for t, _ in side)
    if args.by == "span" and not spanned:
        raise InputError(Path(" ".join(map(str, before + after))),
                         "--by span: not every run's tasks ran in a Dask span "
                         "(distributed.span); compare them --by prefix")
    for by in (d for d in compare.DIMENSIONS if d != "span" or spanned):
        prof = [compare.mean_profile([compare.profile(t, by) for t, _ in loaded[side]])
                for side in ("before", "after")]
        smp = [pl.concat([compare.samples(t, by, i) for i, (t, _) in enumerate(loaded[side])])
               for side in ("before", "after")]
        profiles[by] = prof
        diffs[by] = compare.diff(prof[0], prof[1], smp[0], smp[1], by=by, exact_calls=exact,
                                 span_s=span)
    load = compare.load_change([s for _, s in loaded["before"]],
                               [s for _, s in loaded["after"]])
    diffs["prefix"], machine = compare.machine_change(diffs["prefix"], setup, load)
    io_known = all(compare.io_captured(s) for side in loaded.values() for _, s in side)
    explained = explain.explanations(diffs[args.by], args.by, call_counts=exact,
                                     machine=machine is not None, io_known=io_known)
    arrivals = explain_arrivals(sb, sa)
    if arrivals is not None:  # (first: it says whether the analytics' rows are the cause)
        explained.insert(0, arrivals)
    if not io_known:
        diffs = {by: compare.without_unmeasured_io(d) for by, d in diffs.items()}
    # rows whose counts moved come before the machine's line: facts no machine explains
    moved = set(diffs[args.by].filter(pl.col("counts_changed").is_not_null())["item"]
                .cast(pl.String).to_list()) if "counts_changed" in diffs[args.by].columns else set()
    machine_at = next((i for i, (item, _w) in enumerate(explained) if item not in moved),
                      len(explained))
    c = Comparison(diffs=diffs,
                   names=(" ".join(map(str, before)), " ".join(map(str, after))), by=args.by,
                   setup=setup, machine=machine, machine_at=machine_at,
                   explained=explained,
                   findings=findings_compare.lines([s for _, s in loaded["before"]],
                                                   [s for _, s in loaded["after"]]),
                   totals=" ".join(filter(None, (
                       explain.totals_line(profiles["prefix"][0], profiles["prefix"][1], diffs["prefix"],
                                           spans=spans,
                                           runs=(len(before), len(after))),
                       explain.destinations_line(sb, sa)))))
    write_comparison(out, c)
    print_comparison(c, top=args.top, out=out)
    return 0
