"""The Markdown report of the sample run (samples/run-v1) matches tests/golden/report.md.

Regenerate after an intended change (and review the diff):

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/reports/test_reports_golden.py

The golden file's figures are checked against independently derived values by
test_golden_figures.py, so a regenerated file cannot bless a bug in them.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import os
import re
from pathlib import Path

import polars as pl
import pytest

from correlate.cli import main
from correlate.reports import write_reports
from correlate.reports.fmt import human_bytes, seconds

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "run-v1"
GOLDEN = REPO / "tests" / "golden" / "report.md"


@pytest.fixture(scope="module")
def sample_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SAMPLE.exists():
        pytest.skip("samples/run-v1 is absent")
    out = tmp_path_factory.mktemp("sample") / "correlated"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # the terminal summary, as a user reads it
        assert main(["run", str(SAMPLE), "-o", str(out)]) == 0  # writes the reports too
    (out.parent / "terminal.txt").write_text(printed.getvalue())
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
    assert not (sample_out / "arrivals.parquet").exists()
    assert not (sample_out / "arrival_steps.parquet").exists()
    assert "arrivals" not in json.loads((sample_out / "summary.json").read_text())
    assert "outside Dask" not in (sample_out / "report.md").read_text()
    assert '"arrivals":null' in (sample_out / "report.html").read_text()


def _md_rows(md: str, heading: str) -> list[list[str]]:
    """The cells of the first table under the report.md heading that starts with ``heading``."""
    part = md.split("\n## " + heading, 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in part.splitlines()
            if line.startswith("| ") and not line.startswith("| ---")]
    return [[c.strip().strip("`") for c in r] for r in rows[1:]]  # (the header left out)


def _html_data(out: Path) -> dict:
    html = (out / "report.html").read_text()
    return json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)'
                                r"</script>", html, re.S).group(1))


def test_every_list_shown_twice_is_the_same_in_every_output(sample_out: Path) -> None:
    """The busiest files, the CPU outside tasks per worker and the attributed share, as the
    terminal, report.md, report.html and summary.json show them, are one list each."""
    summary = json.loads((sample_out / "summary.json").read_text())
    md = (sample_out / "report.md").read_text()
    data = _html_data(sample_out)
    term = (sample_out.parent / "terminal.txt").read_text().splitlines()
    # busiest files: the same files in the same order, the same bytes and distinct tasks
    # (keys, counted here from task_files)
    files = pl.read_parquet(sample_out / "task_files.parquet")
    keys = dict(files.group_by("path").agg(pl.col("key").n_unique()).rows())
    in_md = _md_rows(md, "Busiest files")
    start = next(i for i, line in enumerate(term) if line.startswith("Busiest files")) + 3
    in_term = [[c.strip() for c in line.split("│")] for line in term[start:start + len(in_md)]]
    assert len(in_md) == 10 and len(data["files"]) > len(in_md)
    for m, h, t in zip(in_md, data["files"], in_term, strict=False):
        assert m[0] == h["path"] and t[0] == h["path"], (m, h["path"], t)
        assert m[1:3] == [human_bytes(h["read_bytes"]), human_bytes(h["write_bytes"])]
        assert t[1] == human_bytes(h["read_bytes"] + h["write_bytes"])
        assert int(m[-1]) == int(t[4]) == h["tasks"] == keys.get(h["path"], 0)
    # CPU outside tasks: summary.json's per worker, in the terminal, report.md and report.html
    per = {w["worker"]: w for w in summary["cpu"]["per_worker"]}
    assert per and all(w["outside_tasks_cpu_s"] > 0 for w in per.values())
    line = next(x for x in term if x.startswith("CPU outside tasks"))
    got = dict((w, (float(a), float(b))) for w, a, b in
               re.findall(r"(\S+) ([\d.]+) of ([\d.]+) s", line))
    assert got == {w: (round(v["outside_tasks_cpu_s"], 2), round(v["process_cpu_s"], 2))
                   for w, v in per.items()}
    in_md = {r[0]: r[1:] for r in _md_rows(md, "Unattributed I/O and CPU")
             if r[0] in per}
    assert in_md == {w: [seconds(v["process_cpu_s"]), seconds(v["task_cpu_s"]),
                         seconds(v["outside_tasks_cpu_s"])] for w, v in per.items()}
    assert "not in the output tables" not in md
    assert {w["worker"]: w["outside_tasks_cpu_s"] for w in data["cpu_outside"]} == {
        w: v["outside_tasks_cpu_s"] for w, v in per.items()}
    # the share of the bytes attributed to tasks
    pct = f"{summary['io']['attributed_bytes_share']:.1%}"
    assert f"attributed to tasks: {pct}" in term[1]
    assert f"({pct} of bytes)" in md
    assert data["headline"]["io"]["attributed_bytes_share"] == summary["io"][
        "attributed_bytes_share"]
