"""Correlating a run with its transitions read whole and read in parts by key must give the
same tables and summary (``correlate.frames.spill``, ``correlate.timeline.pipeline``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from correlate import sinks
from correlate.engine import correlate_frames
from correlate.frames import spill
from correlate.sources import detect
from correlate.sources.frames import RunFrames


def correlated(run: Path | RunFrames, monkeypatch: Any, rows_per_part: int | None = None,
               spilled: bool = True) -> tuple[dict[str, Any], int]:
    """Every output table and the summary of ``run`` (a run folder, or its frames loaded),
    its keyed tables in parts of at most ``rows_per_part`` rows (None: as ``correlate``
    would), split by the load when ``spilled`` (else filtered by the timeline); and how many
    parts the load spilled."""
    with monkeypatch.context() as m:
        if rows_per_part is not None and spilled:
            m.setattr(spill, "KEYED_ROWS_PER_PART", rows_per_part)
        frames = detect.load(run, lazy=True) if isinstance(run, Path) else run
        if rows_per_part is not None:
            m.setattr(spill, "KEYED_ROWS_PER_PART", rows_per_part)
            m.setattr(sinks, "RANGE_ROWS", max(1, rows_per_part // 3))  # several ranges
        result = correlate_frames(frames)
    return {**result.tables, "summary": result.summary}, len(frames.transitions_in_parts)


def assert_same(whole: dict[str, Any], parts: dict[str, Any]) -> None:
    assert whole.keys() == parts.keys()
    for name, table in whole.items():
        if isinstance(table, pl.DataFrame):
            assert table.equals(parts[name]), name
        else:
            assert table == parts[name], name
