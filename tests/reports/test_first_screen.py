"""report.html's first screen holds the findings and the critical path, and long tables are
collapsed (issue 59): the document order and the folding checked in the HTML itself, and the
layout in headless Chromium at 1400 × 900 (skipped without it). The sample run's report, and
the same with five findings (its two, repeated), as a report with more findings than the first
screen shows."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest

from correlate.cli import main as correlate_main
from correlate.reports import write_reports
from correlate.reports.findings_html import FINDINGS_FIRST, LINKS_FIRST, LINKS_FOLDED

from .cdp import CHROMIUM, Browser

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"
ORDER = ("findings-section", "critical-path-section", "run", "timeline-section",
         "workers-section", "prefixes-section", "tasks-section", "files-section")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sample's output folder with its reports (``sample``), and a copy whose summary
    holds five findings (``five``)."""
    tmp = tmp_path_factory.mktemp("first-screen")
    assert correlate_main([str(SAMPLE), "-o", str(tmp / "sample")]) == 0
    five = Path(shutil.copytree(tmp / "sample", tmp / "five"))
    summary = json.loads((five / "summary.json").read_text())
    found = summary["findings"]
    assert 1 <= len(found) < 5
    summary["findings"] = [{**found[i % len(found)], "rank": i + 1} for i in range(5)]
    (five / "summary.json").write_text(json.dumps(summary))
    write_reports(five)
    return {"sample": tmp / "sample", "five": five, "long": _long_path(tmp)}


def _long_path(tmp: Path) -> Path:
    """A copy of the sample's output whose critical path has 500 links more than the report
    shows (the sample's links repeated), each with its own time and, every third, no wait."""
    import polars as pl

    long = Path(shutil.copytree(tmp / "sample", tmp / "long"))
    path = pl.read_parquet(long / "critical_path.parquet")
    n = LINKS_FIRST + LINKS_FOLDED + 500
    rows = path.select(pl.all().gather(pl.int_range(n) % path.height)).with_columns(
        position=pl.int_range(n, dtype=path.schema["position"]),
        duration_s=(pl.int_range(n) * 7919 % n).cast(pl.Float64) / 1000,
        wait_s=pl.when(pl.int_range(n) % 3 == 0).then(None).otherwise(pl.lit(0.2505)))
    rows.write_parquet(long / "critical_path.parquet")
    write_reports(long)
    return long


def _html(out: Path) -> str:
    return (out / "report.html").read_text(encoding="utf-8")


def test_the_findings_and_the_path_come_first_and_the_rest_is_folded(reports):
    html = _html(reports["sample"])
    at = [html.index(f'<section id="{name}"') for name in ORDER]
    assert at == sorted(at)
    # the path's links after the first LINKS_FIRST are folded in a <details>
    links = len(json.loads((reports["sample"] / "summary.json").read_text())
                ["critical_path"]["keys"])
    path = html[at[1]:at[2]]
    shown, folded = path.split("<details>", 1) if links > LINKS_FIRST else (path, "")
    assert shown.count("<tr><td class=\"num\">") == min(links, LINKS_FIRST)
    assert folded.count("<tr><td class=\"num\">") == max(0, links - LINKS_FIRST)
    # five findings: the first FINDINGS_FIRST in the table, the rest folded
    five = _html(reports["five"])
    section = five[five.index('<section id="findings-section"'):
                   five.index('<section id="critical-path-section"')]
    first, rest = section.split('<details id="more-findings">', 1)
    assert first.count("<tr><td class=\"num\">") == FINDINGS_FIRST
    assert rest.count("<tr><td class=\"num\">") == 5 - FINDINGS_FIRST
    assert f"{5 - FINDINGS_FIRST} more finding(s)" in rest


def test_a_long_path_folds_the_links_that_held_the_most_of_the_span_in_path_order(reports):
    import polars as pl

    html = _html(reports["long"])
    section = html[html.index('<section id="critical-path-section"'):
                   html.index('<section id="run"')]
    first, folded = section.split("<details>", 1)
    positions = [int(p) for p in re.findall(r'<tr><td class="num">(\d+)</td>', folded)]
    assert len(positions) == LINKS_FOLDED and positions == sorted(positions)
    path = pl.read_parquet(reports["long"] / "critical_path.parquet").slice(LINKS_FIRST)
    held = path.select("position", held=pl.col("duration_s") + pl.col("wait_s").fill_null(0))
    assert set(positions) == set(held.top_k(LINKS_FOLDED, by="held")["position"])
    assert first.count('<tr><td class="num">') == LINKS_FIRST
    assert (f"{path.height:,} more link(s): the {LINKS_FOLDED:,} that held the most of the span"
            in folded) and "every link is in critical_path.parquet" in folded


needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium absent (CI installs Debian's chromium "
    "package; locally: apt-get install -y chromium)")


@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize("which", ["sample", "five"])
def test_the_first_screen_at_1400_by_900_shows_the_findings_and_the_path(
        reports, which, tmp_path_factory):
    from matplotlib.image import imread

    with Browser(tmp_path_factory.mktemp("chromium-profile")) as page:
        page.open((reports[which] / "report.html").as_uri(), width=1400, height=900)
        assert page.evaluate("document.body.dataset.ready") == "1"
        box = page.evaluate("""(() => {
            const r = (q) => { const b = document.querySelector(q).getBoundingClientRect();
                               return [b.top, b.bottom]; };
            return {findings: r('#findings-section'), path: r('#critical-path-section h2'),
                    sentence: r('#critical-path-section p'),
                    links: r('#critical-path-section table.path tbody tr')}; })()""")
        png = page.screenshot()
    # the findings whole, and the path's heading, sentence and first link, above 900 px
    assert box["findings"][1] <= 900, box
    assert box["sentence"][1] <= 900 and box["links"][1] <= 900, box
    shot = imread(io.BytesIO(png), format="png")
    assert shot.shape[:2] == (900, 1400)
    (tmp_path_factory.mktemp("shots") / f"{which}.png").write_bytes(png)


@pytest.mark.browser
@needs_chromium
def test_long_tables_are_collapsed_until_asked(reports, tmp_path_factory):
    with Browser(tmp_path_factory.mktemp("chromium-profile")) as page:
        page.open((reports["sample"] / "report.html").as_uri(), width=1400, height=900)
        rows = "document.querySelectorAll('#top-tasks tbody tr').length"
        button = "document.querySelector('#top-tasks button.more-rows')"
        assert page.evaluate(rows) == 15
        label = page.evaluate(f"{button}.textContent")
        total = int(re.fullmatch(r"show all ([\d,]+) rows", label).group(1).replace(",", ""))
        assert total > 15
        page.evaluate(f"{button}.click()")
        assert page.evaluate(rows) == total
        assert page.evaluate(f"{button}.textContent") == "show the first 15 rows"
        assert page.console_errors() == []
