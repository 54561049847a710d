"""``correlate compare`` outputs over two output folders of the literal run: every file written,
byte-identical when regenerated, hostile prefixes and paths escaped in compare.md and
compare.html; the page in headless Chromium: no console errors, chart drawn, hostile names shown
as text, sortable tables."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from correlate.cli import main

from .cdp import CHROMIUM, Browser
from .literal_run import XSS_IMG, XSS_SCRIPT

SLOW = f"read-{XSS_SCRIPT}"  # a prefix whose executions take 4× as long in "after"
FILES = ["compare_prefix.parquet", "compare_file.parquet", "compare_function.parquet",
         "figures/compare.png", "compare.md", "compare.html"]


def _variant(literal_out: Path, dest: Path, slower: float) -> Path:
    """A copy of the literal output folder with hostile prefixes; ``SLOW`` and ``XSS_IMG``
    executions take ``slower`` times as long, the rest of the time not CPU or I/O, and spill
    ``slower - 1`` MiB each (a count: named although the literal run has too few executions
    for a rank test of its timings)."""
    out = shutil.copytree(literal_out, dest)
    tasks = pl.read_parquet(out / "tasks.parquet").with_columns(
        prefix=pl.col("prefix").replace({"read-a": SLOW, "img": XSS_IMG}))
    tasks = tasks.with_columns(duration_s=pl.when(pl.col("prefix").is_in([SLOW, XSS_IMG]))
                               .then(pl.col("duration_s") * slower)
                               .otherwise(pl.col("duration_s")),
                               spilled_bytes=pl.when(pl.col("prefix").is_in([SLOW, XSS_IMG]))
                               .then((slower - 1) * 2.0**20).otherwise(pl.col("spilled_bytes")))
    tasks.write_parquet(out / "tasks.parquet")
    return out


@pytest.fixture(scope="module")
def compared(literal_out: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("compare-html")
    before = _variant(literal_out, tmp / "before", 1.0)
    after = _variant(literal_out, tmp / "after", 4.0)
    assert main(["compare", str(before), str(after), "-o", str(tmp / "diff")]) == 0
    return tmp / "diff"


def _embedded(page: str) -> str:
    return page.split('<script type="application/json" id="compare-data">', 1)[1].split(
        "</script>", 1)[0]


def test_every_output_is_written_and_regenerates_identically(compared: Path,
                                                             tmp_path: Path) -> None:
    assert all((compared / f).stat().st_size > 0 for f in FILES)
    again = tmp_path / "again"
    args = ["compare", str(compared.parent / "before"), str(compared.parent / "after")]
    assert main([*args, "-o", str(again)]) == 0
    for f in FILES:
        assert (again / f).read_bytes() == (compared / f).read_bytes(), f


def test_the_page_embeds_the_comparison_with_markup_escaped(compared: Path) -> None:
    page = (compared / "compare.html").read_text()
    block = _embedded(page)
    assert "<" not in block and ">" not in block and "&" not in block
    data = json.loads(block)
    assert [e["item"] for e in data["explained"]] == [SLOW, XSS_IMG]
    assert "none of it is CPU or I/O" in data["explained"][0]["why"]
    assert {r["item"] for r in data["dimensions"]["prefix"]["rows"]} >= {SLOW, XSS_IMG}
    assert any(XSS_IMG in r["item"] for r in data["dimensions"]["file"]["rows"])
    # outside the data block no run-provided string appears at all
    rest = page.replace(block, "")
    assert XSS_IMG not in rest and "__pwned" not in rest
    assert page.count("<script") == 2 and "http://" not in page and "https://" not in page


def test_markdown_keeps_hostile_names_inside_code_spans(compared: Path) -> None:
    md = (compared / "compare.md").read_text()
    assert f"- `{SLOW}`: job span share " in md and f"- `{XSS_IMG}`: job span share " in md
    outside = re.sub(r"(`+).*?\1", "", md)
    assert "<" not in outside and "__pwned" not in outside


@pytest.fixture(scope="module")
def page(compared: Path, tmp_path_factory: pytest.TempPathFactory):
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium absent (CI installs Debian's chromium package; "
                    "locally: apt-get install -y chromium)")
    with Browser(tmp_path_factory.mktemp("chromium-profile")) as browser:
        browser.open((compared / "compare.html").as_uri())
        yield browser


@pytest.mark.browser
def test_page_renders_without_errors_and_draws_the_chart(page: Browser) -> None:
    assert page.evaluate("document.body.dataset.ready") == "1"
    assert page.console_errors() == []
    chart = page.evaluate("[document.getElementById('change-chart').dataset.drawn, "
                          "document.getElementById('change-chart').width]")
    assert chart[0] == "5" and chart[1] > 0  # every prefix of the literal run


@pytest.mark.browser
def test_hostile_names_are_text_and_inject_nothing(page: Browser) -> None:
    changes = page.evaluate("[...document.querySelectorAll('#changes code')]"
                            ".map(c => c.textContent)")
    assert changes == [SLOW, XSS_IMG]
    cells = page.evaluate("[...document.querySelectorAll('#prefix-table td')]"
                          ".map(td => td.textContent)")
    assert {SLOW, XSS_IMG} <= set(cells)
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.scripts.length") == 2
    assert page.evaluate("window.__pwned === undefined")


@pytest.mark.browser
def test_tables_sort_and_mark_significant_rows(page: Browser) -> None:
    first = "document.querySelector('#prefix-table tbody tr td:nth-child(2)').textContent"
    assert page.evaluate(first) == SLOW  # rank order: the largest change first
    assert page.evaluate("document.querySelectorAll('#prefix-table tr.sig').length") == 2
    page.evaluate("document.querySelector('#prefix-table th[data-key=\"item\"]').click()")
    assert page.evaluate("document.querySelector('#prefix-table th[data-key=\"item\"]')"
                         ".classList.contains('sorted-asc')")
    assert page.evaluate("""(() => { const n = [...document.querySelectorAll(
        '#prefix-table tbody tr')].map(tr => tr.children[1].textContent);
        return JSON.stringify(n) === JSON.stringify(n.slice().sort((a, b) =>
        a.localeCompare(b))); })()""")


@pytest.mark.browser
def test_names_are_never_broken_inside_a_word(page: Browser) -> None:
    # every name (explanations' code spans, the tables' name cells) keeps to one line: a long
    # one scrolls its table instead of wrapping mid-word ("make_i/nput")
    styles = page.evaluate("""[...document.querySelectorAll('#changes code, td.text')].map(e => {
        const s = getComputedStyle(e); return [s.whiteSpace, s.wordBreak, s.overflowWrap]; })""")
    assert styles and all(s == ["nowrap", "normal", "normal"] for s in styles), styles
    heights = page.evaluate("""[...document.querySelectorAll('#prefix-table td.text')].map(
        e => e.getClientRects().length)""")
    assert heights and all(n == 1 for n in heights)
