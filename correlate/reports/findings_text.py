"""The findings and the critical path as sentences, from ``summary.json`` alone: what the
terminal prints after its totals and what report.md and report.html show first."""

from __future__ import annotations

from typing import Any

from correlate.findings.rules import MIN_COST_S, MIN_COST_SHARE


def _s(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f} s"


def threshold(summary: dict[str, Any]) -> str:
    window = (summary.get("critical_path") or {}).get("window_s")
    floor = f"{MIN_COST_SHARE:.0%} of the task window"
    return (f"{floor} ({max(MIN_COST_S, MIN_COST_SHARE * window):.3f} s)" if window
            else floor)


def finding_lines(summary: dict[str, Any], top: int = 10) -> list[str]:
    """One line per finding, costliest first; a line saying there is none above the threshold
    (nothing at all for a summary written before findings existed)."""
    if "findings" not in summary:
        return []
    found = summary["findings"]
    if not found:
        return [f"findings: none above the threshold ({threshold(summary)})"]
    out = []
    for f in found[:top]:
        partial = f" (partial evidence: {f['partial']})" if f.get("partial") else ""
        out.append(f"{f['rank']}. {f['kind']}, {_s(f['cost_s'])} of the span at stake: "
                   f"{f['evidence']}{partial}. Advice: {f['advice']}.")
    return out


def path_summary(summary: dict[str, Any]) -> str | None:
    """One sentence: the path's links, their split and the waits between them."""
    cp = summary.get("critical_path")
    if not cp:
        return None
    w = cp["waits"]
    prefixes = ", ".join(f"{p['prefix']} {_s(p['duration_s'])} ({p['links']})"
                         for p in cp["by_prefix"][:5])
    return (f"critical path: {cp['links']:,} link(s) over the {_s(cp['window_s'])} task "
            f"window: executions {_s(cp['executions_s'])} (CPU {_s(cp['cpu_s'])}, I/O "
            f"{_s(cp['io_time_s'])}, other {_s(cp['other_s'])}), waits {_s(cp['wait_s'])} "
            f"(submission {_s(w.get('submission'))}, scheduler {_s(w['scheduler'])}, "
            f"transfers {_s(w['transfer'])}, read-back "
            f"{_s(w['read_back'])}, "
            + (f"worker paused (memory) {_s(w['paused'])}, " if w.get("paused") else "")
            + (f"a thread free (worker event loop) {_s(w['free_thread'])}, "
               if w.get("free_thread") else "")
            + f"other {_s(w['other'])}); by prefix: {prefixes}")


def link_lines(summary: dict[str, Any], top: int = 5) -> list[str]:
    """The path's longest links, one line each."""
    cp = summary.get("critical_path") or {}
    return [f"#{r['position']} {r['key']} ({r['prefix']}) {_s(r['duration_s'])} on "
            f"{r['worker']}: CPU {_s(r['cpu_s'])}, I/O {_s(r['io_time_s'])}; waited "
            f"{_s(r['wait_s'])} before it ({r['gate']})"
            for r in (cp.get("longest") or [])[:top]]
