"""Compare two runs' arrivals of data from outside Dask (in situ): did the job change because
the data came later (the simulation), or because the analytics fell behind it? A pure function
over the ``arrivals`` sections of the two summaries (``correlate.timeline.arrivals.summary``).

The simulation's side is the pace of its arrivals (the mean time between consecutive steps'
last arrivals) and their spread within a step; the analytics' side is its lag (a step's last
arrival to the end of the tasks using the step's keys). The side whose change is larger is
named; a change smaller than ``NOISE_S`` on both sides names neither.
"""

from __future__ import annotations

from typing import Any

#: changes below this (seconds per step) are taken for noise (a scheduler's event loop and a
#: task's start vary by milliseconds on a shared machine)
NOISE_S = 0.02
ITEM = "arrivals"


def _get(section: dict[str, Any], *path: str) -> float | None:
    value: Any = section
    for p in path:
        value = value.get(p) if isinstance(value, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def _delta(b: float | None, a: float | None) -> float | None:
    return None if b is None or a is None else a - b


def _last_sender(section: dict[str, Any]) -> str | None:
    senders = [s for s in section.get("senders") or [] if s.get("last_in_steps")]
    if not senders:
        return None
    top = max(senders, key=lambda s: (s["last_in_steps"], str(s.get("sender"))))
    return f"{top['sender']} last in {top['last_in_steps']} of {section.get('steps')} steps"


def explain_arrivals(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, str] | None:
    """``(item, sentence)`` naming what changed in the arrivals of two runs' summaries (None:
    neither run had arrivals, or nothing moved beyond ``NOISE_S``)."""
    b, a = before.get("arrivals"), after.get("arrivals")
    if not b and not a:
        return None
    if not b or not a:
        which = "this run" if a else "the run before"
        return ITEM, (f"only {which} received data from outside Dask (scattered or external "
                      "tasks): the runs are not the same job")
    pace = _delta(_get(b, "step_interval_s"), _get(a, "step_interval_s"))
    spread = _delta(_get(b, "max_spread_s"), _get(a, "max_spread_s"))
    lag = _delta(_get(b, "lag_s", "mean"), _get(a, "lag_s", "mean"))
    waited = _delta(_get(b, "wait_external_s"), _get(a, "wait_external_s"))
    sim = max((abs(x) for x in (pace, spread) if x is not None), default=0.0)
    analytics = abs(lag) if lag is not None else 0.0
    if max(sim, analytics) < NOISE_S:
        return None
    facts = []
    if pace is not None:
        facts.append(f"steps' last arrivals every {_get(b, 'step_interval_s'):.3f} s → "
                     f"{_get(a, 'step_interval_s'):.3f} s ({pace:+.3f} s a step)")
    if spread is not None:
        facts.append(f"largest spread of a step's arrivals across senders "
                     f"{_get(b, 'max_spread_s'):.3f} s → {_get(a, 'max_spread_s'):.3f} s")
    last = _last_sender(a)
    if last:
        facts.append(last)
    if waited is not None:
        facts.append(f"the analytics waited {waited:+.3f} s longer on them in all")
    if lag is not None:
        lag_text = (f"the analytics' lag after a step's last arrival "
                    f"{_get(b, 'lag_s', 'mean'):.3f} s → {_get(a, 'lag_s', 'mean'):.3f} s "
                    f"on average")
    else:
        lag_text = "the analytics' lag is unknown (no task used the arrivals in a run)"
    if sim >= analytics:
        return ITEM, ("the data from outside Dask (the simulation) changed, not the "
                      "analytics: " + "; ".join(facts) + f"; {lag_text}")
    return ITEM, (f"the analytics changed, not the data from outside Dask: {lag_text}; "
                  + "; ".join(facts))
