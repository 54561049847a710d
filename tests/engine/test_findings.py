"""The critical path and the findings on real LocalCluster jobs (2 workers × 2 threads) with
one planted problem each (``findings_job.py``), recorded under ``collect``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from correlate.engine import correlate_frames
from correlate.sources.run_folder import load

pytestmark = pytest.mark.cluster

HERE = Path(__file__).resolve().parent


def _record(tmp: Path, variant: str) -> tuple[Path, dict]:
    run, truth = tmp / variant, tmp / f"{variant}.json"
    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "-o", str(run),
                           "--darshan", "off", "--profile", "off", "--", sys.executable,
                           "findings_job.py", variant, str(truth)],
                          capture_output=True, text=True, timeout=300, cwd=HERE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run, json.loads(truth.read_text())


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    run, truth = _record(tmp_path_factory.mktemp("findings"), "chain")
    return correlate_frames(load(run)), truth


def _window_s(tasks: pl.DataFrame) -> float:
    return (tasks["stop_ns"].max() - tasks["start_ns"].min()) / 1e9


def test_the_critical_path_is_the_chain_that_set_the_span(chain):
    result, truth = chain
    path = result.tables["critical_path"]
    assert path["key"].to_list() == truth["chain"]
    assert path["gate"].to_list() == ["first"] + ["dependency"] * (len(truth["chain"]) - 1)
    # the links and the waits between them add up to the task window
    assert (path["duration_s"].sum() + path["wait_s"].sum()
            == pytest.approx(_window_s(result.tables["tasks"]), abs=1e-6))
    s = result.summary["critical_path"]
    assert s["keys"] == truth["chain"] and s["by_prefix"][0]["prefix"] == "chain"
    # CPU is measured; I/O was not captured (no Darshan): unknown, not 0
    assert s["cpu_s"] > 0 and s["io_time_s"] is None and path["other_s"].null_count() == 4
