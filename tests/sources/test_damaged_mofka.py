"""Damaged copies of a Mofka-Dask CSV folder (PMDA R1): times that are not finite numbers end
in named rejections, and the run still correlates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import fixture_path

from correlate.cli import main


def _set_last_field(path: Path, line: int, value: str) -> None:
    """Replace the last field (the time) of data line ``line`` (1 = first after the header)."""
    lines = path.read_text().splitlines(keepends=True)
    head, _sep, _old = lines[line].rstrip("\n").rpartition(",")
    lines[line] = f"{head},{value}\n"
    path.write_text("".join(lines))


@pytest.mark.fixtures
@pytest.mark.parametrize("file,value", [("scheduler_transition.csv", "1e400"),
                                        ("worker_transition.csv", "-1e400"),
                                        ("scheduler_transition.csv", "nan"),
                                        ("graph.csv", "nan"), ("graph.csv", "1e400")])
def test_a_time_that_is_not_a_finite_number_is_a_named_rejection(tmp_path, capsys, file, value):
    run = Path(shutil.copytree(fixture_path("xpdamoda-pmda-r1"), tmp_path / "run"))
    _set_last_field(run / file, 1, value)
    assert main([str(run), "-o", str(tmp_path / "out"), "--no-reports"]) == 0
    assert "internal error" not in capsys.readouterr().err
    rejects = json.loads((tmp_path / "out" / "summary.json").read_text())["rejects"]
    assert any((r["file"] or "").endswith(f"/{file}") and r["count"] >= 1 for r in rejects), rejects
