"""compare's judgement of findings (correlate/findings/compare.py) over literal summaries: a
change is said only beyond the runs' spread and 25% of the cost; a finding near the threshold
that comes and goes is within noise. The real runs' check is in tests/engine/test_findings.py."""

from __future__ import annotations

from correlate.findings.compare import changes, lines


def _run(window_s: float, *found: tuple[str, str, float]) -> dict:
    return {"critical_path": {"window_s": window_s},
            "findings": [{"kind": k, "prefixes": [p], "cost_s": c} for k, p, c in found]}


def _names(c: dict, kind: str) -> list[str]:
    return [r["name"] for r in c[kind]]


def test_a_finding_far_above_the_threshold_appears_and_goes_away():
    # GIVEN a 2 s window (threshold 0.1 s) without, then with, a 0.75 s straggler
    clean, slow = _run(2.0), _run(2.0, ("straggler", "short", 0.75))
    # THEN it appeared one way and went away the other
    assert _names(changes([clean], [slow]), "appeared") == ["straggler (short)"]
    assert _names(changes([slow], [clean]), "went_away") == ["straggler (short)"]
    assert lines([clean], [slow]) == [
        "appeared: straggler (short): below its threshold (0.100 s at most) → 0.750 s"]


def test_a_finding_near_the_threshold_that_comes_and_goes_is_within_noise():
    # GIVEN one run per side: 0.12 s found after a run that had it below its 0.1 s threshold
    c = changes([_run(2.0)], [_run(2.0, ("idle-threads", "short", 0.12))])
    # THEN it may have moved by 0.02 s only: not told as appearing
    assert c["appeared"] == [] and _names(c, "within_noise") == ["idle-threads (short)"]


def test_a_cost_change_is_told_only_beyond_the_runs_spread():
    # GIVEN two runs per side: 1.0 and 1.6 s before, 1.2 and 1.3 s after (spread 0.6 s)
    before = [_run(4.0, ("spill", "hold", 1.0)), _run(4.0, ("spill", "hold", 1.6))]
    after = [_run(4.0, ("spill", "hold", 1.2)), _run(4.0, ("spill", "hold", 1.3))]
    assert _names(changes(before, after), "within_noise") == ["spill (hold)"]
    # a change to 3.0 s in both runs is beyond that spread and beyond 25% of the cost
    after = [_run(4.0, ("spill", "hold", 3.0)), _run(4.0, ("spill", "hold", 3.0))]
    c = changes(before, after)
    assert _names(c, "changed") == ["spill (hold)"] and c["changed"][0]["before_s"] == 1.3


def test_outputs_made_before_findings_existed_are_not_compared():
    assert changes([{"critical_path": {"window_s": 1.0}}], [_run(1.0)]) is None
    assert lines([_run(1.0)], [_run(1.0)]) == ["no finding above the threshold on either side"]
