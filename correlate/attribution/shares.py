"""How the bytes a Darshan counter record moved between its first and last call are shared
among the task windows that ran then (the counters say how much, not when in between)."""

from __future__ import annotations

import numpy as np


def time_shares(first: int, last: int, starts: np.ndarray, stops: np.ndarray,
                bins: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Each window's share of the bytes a record moved between ``first`` and ``last``: the span
    cut at every window edge; a piece's weight is its bytes by the bins (``(starts, stops,
    bytes)`` of consecutive bins, bytes spread evenly within a bin; even in time without bins,
    or when the bins hold no bytes in the span), shared equally among the windows covering it.
    The shares sum to the part of the span some window covers (≤ 1)."""
    last = max(last, first + 1)  # one call: a 1 ns span
    cut = np.unique(np.clip(np.concatenate([[first, last], starts, stops]), first, last))
    if bins is not None and len(bins[0]):
        # the process's cumulative bytes over time, linear within a bin
        edges = np.append(bins[0], bins[1][-1]).astype(np.float64)
        cum = np.concatenate([[0.0], np.cumsum(bins[2])])
        heat = np.diff(np.interp(cut.astype(np.float64), edges, cum))
    else:
        heat = np.zeros(len(cut) - 1)
    weight = heat if heat.sum() > 0 else np.diff(cut).astype(np.float64)
    weight = weight / weight.sum()
    # windows covering each piece: those started at or before its start, minus those stopped
    lo = cut[:-1]
    n = (np.searchsorted(np.sort(starts), lo, side="right")
         - np.searchsorted(np.sort(stops), lo, side="right"))
    per_piece = np.where(n > 0, weight / np.maximum(n, 1), 0.0)
    acc = np.concatenate([[0.0], np.cumsum(per_piece)])
    # a window's share: the pieces between its clipped edges (each edge is a cut point)
    i0 = np.searchsorted(cut, np.clip(starts, first, last))
    i1 = np.searchsorted(cut, np.clip(stops, first, last))
    return acc[i1] - acc[i0]
