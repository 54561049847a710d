"""The top of report.md: the findings (what to fix first) and the critical path."""

from __future__ import annotations

from correlate.reports import findings_text
from correlate.reports.cells import code, measured, table, text
from correlate.reports.fmt import count
from correlate.reports.load import Outputs

#: links of the path listed in report.md (all of them are in critical_path.parquet)
LINKS_SHOWN = 20


def findings_section(out: Outputs) -> list[str]:
    s = out.summary
    if "findings" not in s:  # an output folder from before findings existed
        return []
    lines = ["## What to fix first", ""]
    found = s["findings"]
    if not found:
        return [*lines, f"No finding above the threshold ({findings_text.threshold(s)}).", ""]
    lines += table(["#", "finding", "span at stake", "where", "evidence", "advice"], (
        [str(f["rank"]), code(f["kind"]), measured(f["cost_s"]),
         ", ".join(code(p) for p in f["prefixes"] + f["files"][:2]) or "—",
         text(f["evidence"] + (f" (partial evidence: {f['partial']})" if f.get("partial")
                               else "")), text(f["advice"])]
        for f in found), "rlrlll")
    return [*lines, f"Only findings above {findings_text.threshold(s)} are listed; "
            "`span at stake` is what removing the problem would save, bounded by the critical "
            "path (docs/findings.md).", ""]


def path_section(out: Outputs) -> list[str]:
    sentence = findings_text.path_summary(out.summary)
    if sentence is None:
        return []
    path = out["critical_path"]
    lines = ["## Critical path", "", text(sentence[:1].upper() + sentence[1:]) + ".", ""]
    shown = path.head(LINKS_SHOWN)
    lines += table(["#", "key", "prefix", "worker", "time", "CPU", "I/O", "waited before",
                    "released by"], (
        [str(r["position"]), code(r["key"]), code(r["prefix"]), text(r["worker"]),
         measured(r["duration_s"]), measured(r["cpu_s"]), measured(r["io_time_s"]),
         measured(r["wait_s"]), text(r["gate"])] for r in shown.iter_rows(named=True)),
        "rlllrrrrl")
    if path.height > shown.height:
        lines += ["", f"and {count(path.height - shown.height)} more link(s) "
                  "(critical_path.parquet)."]
    return lines
