"""The statistics behind ``correlate compare``: a rank test of two samples, a run-to-run
check, and each execution's share of the job's span. numpy only (no scipy at run time).

- ``rank_test(x, y)``: the two-sided Mann-Whitney U test (normal approximation with the tie
  correction and a continuity correction) and the sign of the shift. It judges a timing from
  its own spread: 1,000 executions that each take 5% longer are certain, 2 executions that
  take 40% longer are not.
- ``runs_apart(b, a)``: with several runs per side, a change counts only when every run of one
  side lies beyond every run of the other and the means differ by half the run-to-run range
  (run-to-run variance decides, not a fixed share).
- ``span_shares(start, stop)``: every instant of the job's span (first start to last stop) is
  shared equally by the executions running at that instant; an execution's share is the sum of
  its slices. Summed per prefix, the shares plus the idle time (no execution running) equal the
  span, so a prefix's share change is its contribution to what the user waits for.
"""

from __future__ import annotations

import math

import numpy as np

#: fewer executions than this on either side: a timing is not judged ("too few executions")
MIN_EXECUTIONS = 5
#: the rank test's level: a timing changed when its p-value is below it
ALPHA = 0.01
#: a timing change per execution smaller than this share of the row's own time per execution
#: is not named (immaterial: a 0.1 ms shift of a 100 ms task is real, but nobody waits for it)
MATERIAL = 0.05
#: a count (bytes, operations, executions, …) that moved by more than this share changed
COUNT_TOLERANCE = 0.02


def _average_ranks(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks with ties averaged, and the size of each group of ties."""
    uniq, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # 0-based rank of each distinct value's first copy
    return (first + (counts + 1) / 2.0)[inverse], counts


def rank_test(before: np.ndarray, after: np.ndarray) -> tuple[float, int] | None:
    """``(p, direction)`` of the two-sided Mann-Whitney U test: ``direction`` is +1 when
    ``after`` tends to be larger, -1 when smaller, 0 when neither. ``None`` when either side
    has fewer than ``MIN_EXECUTIONS`` values."""
    x = np.asarray(before, dtype=float)
    y = np.asarray(after, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    n1, n2 = x.size, y.size
    if n1 < MIN_EXECUTIONS or n2 < MIN_EXECUTIONS:
        return None
    ranks, ties = _average_ranks(np.concatenate([x, y]))
    u_after = float(ranks[n1:].sum()) - n2 * (n2 + 1) / 2.0
    mu = n1 * n2 / 2.0
    n = n1 + n2
    tie_term = float((ties.astype(float) ** 3 - ties).sum()) / (n * (n - 1))
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term))
    if sigma == 0:  # every value equal on both sides
        return 1.0, 0
    z = max(abs(u_after - mu) - 0.5, 0.0) / sigma
    direction = 0 if u_after == mu else (1 if u_after > mu else -1)
    return math.erfc(z / math.sqrt(2.0)), direction


def runs_apart(before: list[float], after: list[float]) -> bool | None:
    """With at least two runs per side: True when all runs of one side lie beyond all runs of
    the other and the means differ by at least half the larger run-to-run range of a side (the
    runs of one side differ among themselves less than the sides do); None with one run on
    either side (run-to-run variance unknown)."""
    if len(before) < 2 or len(after) < 2:
        return None
    spread = max(max(before) - min(before), max(after) - min(after))
    apart = min(after) > max(before) or max(after) < min(before)
    shift = abs(sum(after) / len(after) - sum(before) / len(before))
    return apart and shift >= 0.5 * spread


def span_shares(start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, float]:
    """Each execution's share of the job span, and the span (first start to last stop).
    Executions without a start or stop get NaN and are left out of the sweep."""
    start = np.asarray(start, dtype=float)
    stop = np.asarray(stop, dtype=float)
    ok = np.isfinite(start) & np.isfinite(stop) & (stop >= start)
    shares = np.full(start.shape, np.nan)
    if not ok.any():
        return shares, float("nan")
    s, e = start[ok], stop[ok]
    bounds = np.unique(np.concatenate([s, e]))
    # executions running in each slice [bounds[i], bounds[i+1]): started at or before, not ended
    running = (np.searchsorted(np.sort(s), bounds[:-1], side="right")
               - np.searchsorted(np.sort(e), bounds[:-1], side="right"))
    weight = np.where(running > 0, np.diff(bounds) / np.maximum(running, 1), 0.0)
    cum = np.concatenate([[0.0], np.cumsum(weight)])
    shares[ok] = cum[np.searchsorted(bounds, e)] - cum[np.searchsorted(bounds, s)]
    return shares, float(bounds[-1] - bounds[0])
