"""The Markdown report of the sample run (samples/run-v1) matches tests/golden/report.md.

Regenerate after an intended change (and review the diff):

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/reports/test_reports_golden.py

The golden file's figures are checked against independently derived values by
test_golden_figures.py, so a regenerated file cannot bless a bug in them.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from correlate.cli import main
from correlate.reports import write_reports

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "run-v1"
GOLDEN = REPO / "tests" / "golden" / "report.md"


@pytest.fixture(scope="module")
def sample_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SAMPLE.exists():
        pytest.skip("samples/run-v1 is absent")
    out = tmp_path_factory.mktemp("sample") / "correlated"
    assert main(["run", str(SAMPLE), "-o", str(out)]) == 0  # writes the reports too
    return out


def test_run_writes_every_report_unless_told_not_to(sample_out: Path, tmp_path: Path) -> None:
    for name in ("report.md", "report.html", "trace.json", "figures/timeline.png",
                 "figures/prefixes.png"):
        assert (sample_out / name).stat().st_size > 0, name
    bare = tmp_path / "bare"
    assert main(["run", str(SAMPLE), "-o", str(bare), "--no-reports"]) == 0
    assert (bare / "tasks.parquet").exists()
    assert not list(bare.glob("report*")) and not (bare / "trace.json").exists()
    assert main(["report", str(bare), "--kinds", "markdown"]) == 0
    assert (bare / "report.md").read_text() == (sample_out / "report.md").read_text()


def test_sample_report_matches_golden(sample_out: Path) -> None:
    got = (sample_out / "report.md").read_text(encoding="utf-8")
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(got, encoding="utf-8")
    want = GOLDEN.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                        "tests/golden/report.md", "generated"))
    assert got == want, ("report.md of the sample run changed; if intended, regenerate with "
                         "UPDATE_GOLDEN=1 .venv/bin/python -m pytest "
                         "tests/reports/test_reports_golden.py\n" + diff[:6000])


def test_sample_report_regenerates_identically(sample_out: Path) -> None:
    first = {p: p.read_bytes() for p in sorted(sample_out.rglob("*")) if p.is_file()}
    write_reports(sample_out, kinds=["markdown"])
    assert first == {p: p.read_bytes() for p in sorted(sample_out.rglob("*")) if p.is_file()}


def test_a_run_without_data_from_outside_dask_has_no_arrivals_outputs(sample_out: Path
                                                                      ) -> None:
    import json

    assert not (sample_out / "arrivals.parquet").exists()
    assert not (sample_out / "arrival_steps.parquet").exists()
    assert "arrivals" not in json.loads((sample_out / "summary.json").read_text())
    assert "outside Dask" not in (sample_out / "report.md").read_text()
    assert '"arrivals":null' in (sample_out / "report.html").read_text()
