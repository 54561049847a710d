"""The package's door: ``compare_runs(loaded, names, by) -> Comparison``, the whole comparison
of two sides' correlate outputs (``correlate compare`` reads them; ``reports.compare`` writes
and prints the result)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from correlate.compare import changes, explain
from correlate.compare.arrivals import explain_arrivals
from correlate.compare.logical_paths import logical_task_files
from correlate.errors import InputError
from correlate.findings import compare as findings_compare

#: one run's output tables (tasks, task_files, task_functions) and its summary.json
Run = tuple[dict[str, pl.DataFrame], dict[str, Any]]
#: "before"/"after" -> that side's runs
Loaded = dict[str, list[Run]]


@dataclass(frozen=True)
class Comparison:
    """Everything a comparison writer shows. ``explained`` holds ``(item, why)`` pairs for the
    ``by`` dimension; ``machine`` the sentence on a machine or concurrency change (or None),
    shown after the first ``machine_at`` of them (the rows whose counts moved: facts, which
    no machine explains). ``findings``: the lines on the runs' findings (appeared, went away,
    changed cost, within noise: ``correlate.findings.compare``), None for outputs made before
    findings existed."""

    diffs: dict[str, pl.DataFrame]
    names: tuple[str, str]
    by: str = "prefix"
    setup: list[str] = field(default_factory=list)
    explained: list[tuple[str, str]] = field(default_factory=list)
    totals: str = ""
    machine: str | None = None
    machine_at: int = 0
    findings: list[str] | None = None


def compare_runs(loaded: Loaded, names: tuple[str, str], by: str = "prefix") -> Comparison:
    """Compare the ``before`` and ``after`` runs of ``loaded`` (one or several each); ``by``
    is the dimension explained first (every dimension the runs have is diffed)."""
    loaded = _logical_paths(loaded)
    sb, sa = loaded["before"][0][1], loaded["after"][0][1]
    exact = changes.exact_call_counts(sb) and changes.exact_call_counts(sa)
    setup = changes.setup_differences(sb, sa)
    spans = ([changes.job_span(t) for t, _ in loaded["before"]],
             [changes.job_span(t) for t, _ in loaded["after"]])
    profiles, diffs = _diffs(loaded, names, by, exact, spans)
    load = changes.load_change([s for _, s in loaded["before"]],
                               [s for _, s in loaded["after"]])
    diffs["prefix"], machine = changes.machine_change(diffs["prefix"], setup, load)
    io_known = all(changes.io_captured(s) for side in loaded.values() for _, s in side)
    explained = explain.explanations(diffs[by], by, call_counts=exact,
                                     machine=machine is not None, io_known=io_known)
    arrivals = explain_arrivals(sb, sa)
    if arrivals is not None:  # (first: it says whether the analytics' rows are the cause)
        explained.insert(0, arrivals)
    if not io_known:
        diffs = {dim: changes.without_unmeasured_io(d) for dim, d in diffs.items()}
    # rows whose counts moved come before the machine's line: facts no machine explains
    moved = set(diffs[by].filter(pl.col("counts_changed").is_not_null())["item"]
                .cast(pl.String).to_list()) if "counts_changed" in diffs[by].columns else set()
    machine_at = next((i for i, (item, _w) in enumerate(explained) if item not in moved),
                      len(explained))
    runs = (len(loaded["before"]), len(loaded["after"]))
    totals = " ".join(filter(None, (
        explain.totals_line(profiles[0], profiles[1], diffs["prefix"], spans=spans, runs=runs),
        explain.destinations_line(sb, sa))))
    return Comparison(diffs=diffs, names=names, by=by, setup=setup, machine=machine,
                      machine_at=machine_at, explained=explained, totals=totals,
                      findings=findings_compare.lines([s for _, s in loaded["before"]],
                                                      [s for _, s in loaded["after"]]))


def _diffs(loaded: Loaded, names: tuple[str, str], by: str, exact: bool,
           spans: tuple[list[float | None], list[float | None]]
           ) -> tuple[list[pl.DataFrame], dict[str, pl.DataFrame]]:
    """Each side's mean profile per prefix, and the diff of every dimension the runs have
    (span only where every run's tasks ran in a Dask span)."""
    span = max((s for side in spans for s in side if s is not None), default=None)
    spanned = all(changes.has_spans(t) for side in loaded.values() for t, _ in side)
    if by == "span" and not spanned:
        raise InputError(Path(" ".join(names)),
                         "--by span: not every run's tasks ran in a Dask span "
                         "(distributed.span); compare them --by prefix")
    diffs, prefix = {}, []
    for dim in (d for d in changes.DIMENSIONS if d != "span" or spanned):
        prof = [changes.mean_profile([changes.profile(t, dim) for t, _ in loaded[side]])
                for side in ("before", "after")]
        smp = [pl.concat([changes.samples(t, dim, i) for i, (t, _) in enumerate(loaded[side])])
               for side in ("before", "after")]
        if dim == "prefix":
            prefix = prof
        diffs[dim] = changes.diff(prof[0], prof[1], smp[0], smp[1], by=dim, exact_calls=exact,
                                  span_s=span)
    return prefix, diffs


def _logical_paths(loaded: Loaded) -> Loaded:
    """Every run's ``task_files`` with logical paths matched to the first BEFORE run's
    (``correlate.compare.logical_paths``): scratch, shuffle and output folders differ by run."""
    runs = [(side, t, s) for side in ("before", "after") for t, s in loaded[side]]
    files = logical_task_files([t["task_files"] for _, t, _ in runs],
                               [t["tasks"] for _, t, _ in runs])
    out: Loaded = {"before": [], "after": []}
    for (side, t, s), f in zip(runs, files, strict=True):
        out[side].append(({**t, "task_files": f}, s))
    return out
