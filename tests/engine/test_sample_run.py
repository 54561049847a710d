"""The committed sample run (samples/run-v1, recorded under real darshan-runtime) end to end."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from correlate.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "correlated"
    assert main(["run", str(SAMPLE), "-o", str(out), "--no-reports"]) == 0
    return out


def test_cpu_outside_tasks_is_reported_per_worker(out: Path) -> None:
    summary = json.loads((out / "summary.json").read_text())
    tasks = pl.read_parquet(out / "tasks.parquet")
    per_worker = summary["cpu"]["per_worker"]
    assert {w["worker"] for w in per_worker} == set(tasks["worker"].unique())
    for w in per_worker:
        mine = tasks.filter(pl.col("pid") == w["pid"])["cpu_s"].sum()
        assert w["task_cpu_s"] == pytest.approx(mine, abs=1e-6)
        # the whole process burnt more than its tasks (imports, event loop, comms)
        assert w["process_cpu_s"] > w["task_cpu_s"] > 0
        assert w["outside_tasks_cpu_s"] == pytest.approx(w["process_cpu_s"] - w["task_cpu_s"],
                                                         abs=1e-6)


def test_all_data_io_goes_to_tasks_by_thread(out: Path) -> None:
    summary = json.loads((out / "summary.json").read_text())
    io = summary["io"]
    assert io["attributed"]["bytes"] + io["unattributed"]["bytes"] == pytest.approx(
        io["total"]["bytes"])
    files = pl.read_parquet(out / "task_files.parquet")
    assert set(files["attribution"].unique()) == {"exact-thread"}
    assert files.filter(pl.col("path").str.contains(r"/image-\d+\.raw$"))["bytes"].sum() == (
        16 * 2 * 512 * 512 * 4)  # 16 images written once and read once
