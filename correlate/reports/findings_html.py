"""The first screen of report.html: the findings and the critical path, rendered by the
template itself (``findings.html``), so that they read before any script runs."""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.reports import findings_text
from correlate.reports.fmt import seconds
from correlate.reports.load import Outputs

#: findings and links of the path in the first screen (1400 × 900 holds both with room for
#: long evidence); the rest are folded below them
FINDINGS_FIRST = 3
LINKS_FIRST = 8
#: links folded below them at most: a path of a long job has one link per task it waited for,
#: which would make most of the page (docs/performance.md, "Reports"), so the longest are
#: kept, in path order, and critical_path.parquet holds them all
LINKS_FOLDED = 1_000


def _s(x: float | None) -> str:
    return "not captured" if x is None else seconds(x)


def context(out: Outputs) -> dict[str, Any]:
    """``findings`` (rows, or None for an output folder from before findings existed),
    ``findings_threshold``, ``path_sentence``, ``path_links`` (the first screen's rows, first
    link first), ``links_folded`` (the rows folded below, ``longest``) and ``links_more`` (how
    many links follow the first screen's)."""
    s = out.summary
    if "findings" not in s:
        return {"findings": None, "path_sentence": None, "path_links": [], "links_folded": [],
                "links_more": 0}
    found = [{"rank": f["rank"], "kind": f["kind"], "cost": _s(f["cost_s"]),
              "where": ", ".join([*f["prefixes"], *f["files"][:2]]) or "—",
              "evidence": f["evidence"] + (f" (partial evidence: {f['partial']})"
                                           if f.get("partial") else ""),
              "advice": f["advice"]} for f in s["findings"]]
    path = out["critical_path"]
    folded = path.slice(LINKS_FIRST)
    return {"findings": found, "findings_threshold": findings_text.threshold(s),
            "path_sentence": findings_text.path_summary(s),
            "path_links": _links(path.head(LINKS_FIRST)),
            "links_folded": _links(longest(folded, LINKS_FOLDED)),
            "links_more": folded.height, "findings_first": FINDINGS_FIRST}


def longest(links: pl.DataFrame, n: int) -> pl.DataFrame:
    """The ``n`` links that hold the most of the span (their time and the wait before them;
    one not measured counts nothing), in path order."""
    if links.height <= n:
        return links
    held = pl.col("duration_s").fill_null(0.0) + pl.col("wait_s").fill_null(0.0)
    return links.with_row_index("_at").top_k(n, by=held).sort("_at").drop("_at")


def _links(path: pl.DataFrame) -> list[dict[str, Any]]:
    return [{"position": r["position"], "key": r["key"], "prefix": r["prefix"] or "?",
             "worker": r["worker"] or "?", "time": _s(r["duration_s"]), "cpu": _s(r["cpu_s"]),
             "io": _s(r["io_time_s"]), "wait": _s(r["wait_s"]), "gate": r["gate"]}
            for r in path.iter_rows(named=True)]
