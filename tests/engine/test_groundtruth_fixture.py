"""The engine on a real Dask run under a real Darshan runtime (DXT v2 with pthread ids), checked
against what every task measured itself (../shared/fixtures/dask-dxt-v2-groundtruth)."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import fixture_path

from correlate.engine import correlate_frames
from correlate.sources import task_stream


@pytest.fixture(scope="module")
def result():
    folder = fixture_path("dask-dxt-v2-groundtruth")
    truth = pl.read_parquet(folder / "truth.parquet")
    return correlate_frames(task_stream.load(folder)), truth


@pytest.mark.fixtures
def test_every_task_gets_exactly_its_own_bytes_and_ops(result):
    res, truth = result
    tasks = res.tables["tasks"]
    assert tasks.height == truth.height == 44
    got = tasks.select("key", "read_bytes", "write_bytes", "read_ops", "write_ops", "attribution")
    both = truth.join(got, on="key", suffix="_got")
    assert both.height == 44
    assert set(both["attribution"]) == {"exact-thread"}
    for col in ("read_bytes", "write_bytes", "read_ops", "write_ops"):
        bad = both.filter(pl.col(col).cast(pl.Float64) != pl.col(f"{col}_got"))
        assert bad.is_empty(), f"{col} differs:\n{bad.select('key', col, f'{col}_got')}"


@pytest.mark.fixtures
def test_io_is_conserved_and_task_bytes_are_the_known_total(result):
    res, _ = result
    io = res.summary["io"]
    assert io["attributed"]["bytes"] + io["unattributed"]["bytes"] == pytest.approx(
        io["total"]["bytes"], abs=1e-6)
    assert io["attributed"]["ops"] + io["unattributed"]["ops"] == pytest.approx(
        io["total"]["ops"], abs=1e-6)
    assert res.tables["task_files"]["bytes"].sum() == 34_111_488
