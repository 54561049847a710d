"""The first screen of report.html: the findings and the critical path, rendered by the
template itself (``findings.html``), so that they read before any script runs."""

from __future__ import annotations

from typing import Any

from correlate.reports import findings_text
from correlate.reports.fmt import seconds
from correlate.reports.load import Outputs

#: findings and links of the path in the first screen (1400 × 900 holds both with room for
#: long evidence); the rest are folded below them
FINDINGS_FIRST = 3
LINKS_FIRST = 8


def _s(x: float | None) -> str:
    return "not captured" if x is None else seconds(x)


def context(out: Outputs) -> dict[str, Any]:
    """``findings`` (rows, or None for an output folder from before findings existed),
    ``findings_threshold``, ``path_sentence`` and ``path_links`` (rows, first link first)."""
    s = out.summary
    if "findings" not in s:
        return {"findings": None, "path_sentence": None, "path_links": []}
    found = [{"rank": f["rank"], "kind": f["kind"], "cost": _s(f["cost_s"]),
              "where": ", ".join([*f["prefixes"], *f["files"][:2]]) or "—",
              "evidence": f["evidence"] + (f" (partial evidence: {f['partial']})"
                                           if f.get("partial") else ""),
              "advice": f["advice"]} for f in s["findings"]]
    links = [{"position": r["position"], "key": r["key"], "prefix": r["prefix"] or "?",
              "worker": r["worker"] or "?", "time": _s(r["duration_s"]), "cpu": _s(r["cpu_s"]),
              "io": _s(r["io_time_s"]), "wait": _s(r["wait_s"]), "gate": r["gate"]}
             for r in out["critical_path"].iter_rows(named=True)]
    return {"findings": found, "findings_threshold": findings_text.threshold(s),
            "path_sentence": findings_text.path_summary(s), "path_links": links,
            "links_first": LINKS_FIRST, "findings_first": FINDINGS_FIRST}
