"""The tables the run folder's load holds until it makes the canonical frames are conformed
as each is read (``run_folder.CONFORMED``): the load holds none of the columns no stage reads,
and gives the same frames as when every table is conformed at the end."""

from __future__ import annotations

import dataclasses
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from correlate.schema import TABLES
from correlate.sources import run_folder
from correlate.sources.frames import RunFrames


def _loaded(run: Any, monkeypatch: Any) -> tuple[RunFrames, dict[str, Any]]:
    """The run's frames, and the raw tables ``_canonical`` was given."""
    given: dict[str, Any] = {}
    canonical = run_folder._canonical

    def spy(tables: dict[str, Any], *args: Any) -> dict[str, Any]:
        given.update(tables)
        return canonical(tables, *args)

    with monkeypatch.context() as m:
        m.setattr(run_folder, "_canonical", spy)
        return run_folder.load(run), given


@pytest.mark.cluster
def test_held_tables_are_conformed_as_read_and_give_the_same_frames(
        io_run: Any, monkeypatch: Any) -> None:
    early, given = _loaded(io_run.run, monkeypatch)
    held = {raw: frame for raw, frame in given.items()
            if raw in run_folder.CONFORMED and frame is not None}
    # (the io run has each kind a big run holds: startstops, edges, clocks, files opened)
    assert {"task_startstops", "task_dependencies", "worker_clock_samples",
            "task_file_opens"} <= set(held)
    for raw, frame in held.items():
        assert frame.columns == list(TABLES[run_folder.CONFORMED[raw]].names), raw
    monkeypatch.setattr(run_folder, "_held", lambda name, frame: frame)
    late, given = _loaded(io_run.run, monkeypatch)
    assert given["task_startstops"].columns != held["task_startstops"].columns  # (raw: more)
    for field in dataclasses.fields(early):
        a, b = getattr(early, field.name), getattr(late, field.name)
        if isinstance(a, pl.LazyFrame):
            a, b = a.collect(), b.collect()
        if isinstance(a, pl.DataFrame):
            assert_frame_equal(a, b, categorical_as_str=True)
        elif field.name not in ("lazy_parts",):
            assert a == b, field.name
