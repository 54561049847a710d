"""Compare the findings of two sides of runs: which appeared, went away, or changed cost, and
which moved only within noise. A pure function over the runs' ``summary.json`` (``findings``
and ``critical_path.window_s``), used by ``correlate compare``.

A finding is named by its kind and prefixes (its keys and files differ from run to run); a
run without it had it below that run's threshold (``MIN_COST_SHARE`` of its window, at least
``MIN_COST_S``), not at 0. Each side's cost is the mean of its runs' (a run without the finding
counts its threshold: the most it can have had). A change is said only when what it must at
least be (an appearance: the cost after less the threshold before; a disappearance: the reverse;
else the difference of the means) exceeds the noise: the spread of each side's runs (max −
min, with several runs per side) and ``NOISE_SHARE`` of the larger cost (a cost is an estimate:
the tests check it against the span saved to within 25%). Anything smaller is listed as within
noise, so that a finding near the threshold that comes and goes with one run per side is never
told as a change.
"""

from __future__ import annotations

from typing import Any

from correlate.findings.context import MIN_COST_S, MIN_COST_SHARE

#: the share of a finding's cost its estimate may be off by (the 25% its tests allow)
NOISE_SHARE = 0.25

Name = tuple[str, tuple[str, ...]]


def _threshold(summary: dict[str, Any]) -> float | None:
    window = (summary.get("critical_path") or {}).get("window_s")
    return None if window is None else max(MIN_COST_S, MIN_COST_SHARE * float(window))


def _costs(summary: dict[str, Any]) -> dict[Name, float]:
    """Name → cost of one run's findings (findings of one name added: one per file)."""
    out: dict[Name, float] = {}
    for f in summary.get("findings") or []:
        name = (str(f["kind"]), tuple(f.get("prefixes") or ()))
        out[name] = out.get(name, 0.0) + float(f["cost_s"])
    return out


def _label(name: Name) -> str:
    kind, prefixes = name
    return f"{kind} ({', '.join(prefixes)})" if prefixes else kind


def changes(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``appeared``, ``went_away``, ``changed`` and ``within_noise``: lists of dicts (``name``,
    ``before_s``, ``after_s``: the sides' mean costs, ``present``: in how many runs of each
    side, ``noise_s``), each ordered by the size of the change; None when a run has no
    findings in its summary (made before findings existed) or no window."""
    if any("findings" not in s for s in before + after):
        return None
    sides = []
    for runs in (before, after):
        floors = [_threshold(s) for s in runs]
        if any(f is None for f in floors):
            return None
        sides.append(([_costs(s) for s in runs], [float(f) for f in floors if f is not None]))
    names = sorted({n for costs, _ in sides for c in costs for n in c})
    out: dict[str, Any] = {"appeared": [], "went_away": [], "changed": [], "within_noise": []}
    for name in names:
        per = [[c.get(name, floor) for c, floor in zip(costs, floors, strict=True)]
               for costs, floors in sides]
        present = [sum(name in c for c in costs) for costs, _ in sides]
        b, a = (sum(v) / len(v) for v in per)
        spread = max(max(v) - min(v) for v in per)
        noise = max(spread, NOISE_SHARE * max(b, a))
        if not present[0]:
            kind, at_least = "appeared", a - max(sides[0][1])
        elif not present[1]:
            kind, at_least = "went_away", b - max(sides[1][1])
        else:
            kind, at_least = "changed", abs(a - b)
        row = {"name": _label(name), "before_s": b, "after_s": a, "present": present,
               "noise_s": noise, "at_least_s": at_least}
        out[kind if at_least > noise else "within_noise"].append(row)
    for rows in out.values():
        rows.sort(key=lambda r: (-abs(r["after_s"] - r["before_s"]), r["name"]))
    return out


def lines(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str] | None:
    """compare's lines on the findings: one per finding that appeared, went away or changed
    cost beyond noise, then one naming those within noise (None: a run's summary has no
    findings, made before they existed)."""
    c = changes(before, after)
    if c is None:
        return None
    if not any(c.values()):
        return ["no finding above the threshold on either side"]
    runs = (len(before), len(after))

    def cost(r: dict[str, Any], side: int) -> str:
        s = r["before_s" if side == 0 else "after_s"]
        if not r["present"][side]:
            return f"below its threshold ({s:.3f} s at most)"
        if r["present"][side] < runs[side]:
            return f"{s:.3f} s (mean; found in {r['present'][side]} of {runs[side]} runs)"
        return f"{s:.3f} s"
    said = {"appeared": "appeared", "went_away": "went away", "changed": "changed cost"}
    out = [f"{said[kind]}: {r['name']}: {cost(r, 0)} → {cost(r, 1)}"
           for kind in said for r in c[kind]]
    if c["within_noise"]:
        out.append("within noise (a change no larger than the runs' spread or "
                   f"{NOISE_SHARE:.0%} of the cost): " + "; ".join(
                       f"{r['name']} {cost(r, 0)} → {cost(r, 1)}" for r in c["within_noise"]))
    return out
