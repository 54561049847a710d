"""The I/O attribution gives the same tables whether processes share a partition or each has
its own (``correlate.attribution.driver``: small processes are grouped up to a row budget)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from correlate.attribution import driver
from correlate.engine import correlate_frames
from correlate.frames.mappers import local_map
from correlate.sources import detect, run_folder
from testing.synthetic import without_thread_ids, write_run


def _correlated(frames, monkeypatch, rows: int) -> tuple[dict, int]:
    """Every output table and the summary, with partitions of at most ``rows`` rows; and how
    many partitions ran."""
    monkeypatch.setattr(driver, "PARTITION_ROWS", rows)
    ran = []

    def counting(fn, items, at_once=2):  # type: ignore[no-untyped-def]
        if items and isinstance(items[0], driver.Partition):
            ran.append(len(items))
        return local_map(fn, items, at_once)

    result = correlate_frames(frames, mapper=counting)
    return {**result.tables, "summary": result.summary}, sum(ran)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """Five workers on two hosts, a scheduler; every worker did I/O."""
    folder = tmp_path_factory.mktemp("partitions") / "run"
    write_run(folder, workers=5, threads=2, hosts=2, executions=300, segments=3000, seed=3,
              profile="off")
    return folder


def _no_markers(frames):  # Darshan's clock found by containment, process by process
    return replace(frames, clock_markers=frames.clock_markers.clear())


def _no_recorded_threads(frames):  # every execution's thread inferred from the DXT thread ids
    return replace(frames, executions=frames.executions.with_columns(
        thread_id=pl.lit(None, frames.executions.schema["thread_id"])))


@pytest.mark.parametrize("variant", ["markers", "containment", "inferred-threads",
                                     "threadless", "segments-kept", "segments-read-up-front"])
def test_a_partition_of_several_processes_gives_what_one_per_process_gives(
        run: Path, tmp_path: Path, monkeypatch, variant: str) -> None:
    # GIVEN the run's frames, read as correlate RUN reads them: segments left in the logs
    # (each partition reads its processes' logs), or kept from the logs' first read (a small
    # run's), or read up front
    folder = without_thread_ids(run, tmp_path / "v1") if variant == "threadless" else run
    if variant != "segments-kept":
        monkeypatch.setattr(run_folder, "KEEP_SEGMENTS", 0)
    frames = detect.load(folder, lazy=variant != "segments-read-up-front").conformed()
    assert isinstance(frames.io_segments, pl.LazyFrame) == (variant not in (
        "segments-kept", "segments-read-up-front"))
    frames = {"containment": _no_markers,
              "inferred-threads": _no_recorded_threads}.get(variant, lambda f: f)(frames)
    # WHEN it is correlated with a partition per process, with a few processes in each and
    # with all of them in one
    alone, partitions = _correlated(frames, monkeypatch, rows=0)
    assert partitions == 6  # (the scheduler wrote segments too)
    for rows, expected in ((1500, range(2, 6)), (10**9, range(1, 2))):
        together, fewer = _correlated(frames, monkeypatch, rows=rows)
        assert fewer in expected
        # THEN every table is the same, row for row, and so is the summary
        assert alone.keys() == together.keys()
        for name, table in alone.items():
            if name == "summary":
                assert table == together[name]
            else:
                assert table.equals(together[name]), (rows, name)
    segments = together["segments"]
    assert segments.height == 3000 and segments["attributed_weight"].sum() > 0
    if variant == "inferred-threads":
        assert together["summary"]["thread_inference"]["executions_inferred"] > 0
    if variant == "containment":  # (every worker's; the scheduler ran no task to fit into)
        assert together["clocks"].filter(pl.col("domain") == "darshan").height == 5
