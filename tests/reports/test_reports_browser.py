"""report.html in headless Chromium from file://: no console errors, timeline and charts
drawn, a screenshot that is not blank, hostile keys shown as text without changing the page."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from .cdp import CHROMIUM, Browser
from .literal_run import HOSTILE_KEYS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium absent (CI installs "
                       "Debian's chromium package; locally: apt-get install -y chromium)"),
]


def pixels(png: bytes) -> np.ndarray:
    from matplotlib.image import imread

    return imread(io.BytesIO(png), format="png")


@pytest.fixture(scope="module")
def page(literal_reports: Path, tmp_path_factory: pytest.TempPathFactory):
    with Browser(tmp_path_factory.mktemp("chromium-profile")) as browser:
        browser.open((literal_reports / "report.html").as_uri())
        yield browser


def test_page_loads_without_console_errors(page: Browser) -> None:
    assert page.evaluate("document.body.dataset.ready") == "1"
    assert page.console_errors() == []


def test_timeline_and_charts_are_drawn(page: Browser) -> None:
    drawn = page.evaluate("""[...document.querySelectorAll('canvas')]
        .map(c => [c.id, Number(c.dataset.drawn || 0), c.width, c.height])""")
    by_id = {name: (n, w, h) for name, n, w, h in drawn}
    assert by_id["timeline"][0] == 8  # every execution of the literal run
    assert by_id["prefix-chart"][0] > 0 and by_id["budget"][0] > 0
    assert all(w > 0 and h > 0 for _, w, h in by_id.values())


def test_hostile_keys_are_text_and_inject_nothing(page: Browser) -> None:
    cells = page.evaluate("[...document.querySelectorAll('#top-tasks td')].map(td => "
                          "td.textContent)")
    assert set(HOSTILE_KEYS) <= set(cells)
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.scripts.length") == 2
    assert page.evaluate("window.__pwned === undefined")


def test_hover_shows_the_key_as_text(page: Browser) -> None:
    # lane 3 is worker 2's thread 22, whose first task (2–60 ms of 120 ms) has the img key
    box = page.evaluate("""(() => { const r = document.getElementById('timeline')
        .getBoundingClientRect(); return [r.left, r.top, r.width]; })()""")
    left, top, width = box
    x = left + 330 + (width - 330 - 8) * (20 / 120)
    y = top + 24 + 3 * 22 + 8
    page.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session=True)
    tip = page.evaluate("document.getElementById('tooltip').textContent")
    assert HOSTILE_KEYS[0] in tip
    assert page.evaluate("document.querySelectorAll('#tooltip *').length") == page.evaluate(
        "document.querySelectorAll('#tooltip div').length")


def test_screenshot_is_not_blank(page: Browser, tmp_path: Path) -> None:
    png = page.screenshot()
    (tmp_path / "report.png").write_bytes(png)
    img = pixels(png)
    assert img.shape[0] > 500 and img.shape[1] > 500
    assert float(img[..., :3].std()) > 0.05
    # the timeline region holds several distinct colours (prefixes, I/O)
    colours = {tuple(np.round(px, 2)) for px in img[..., :3].reshape(-1, 3)[::97]}
    assert len(colours) > 10


def test_problems_that_change_the_numbers_are_under_the_headline(
        literal_reports: Path, tmp_path: Path) -> None:
    import json
    import shutil

    from correlate.reports import write_reports

    out = shutil.copytree(literal_reports, tmp_path / "out")
    summary = json.loads((out / "summary.json").read_text())
    summary["io"]["captured"] = False
    summary["headline"] = ["I/O was not captured (no Darshan logs; Darshan: --darshan off)"]
    (out / "summary.json").write_text(json.dumps(summary))
    write_reports(out, kinds=("html",))
    with Browser(tmp_path / "profile") as browser:
        browser.open((out / "report.html").as_uri())
        assert "I/O not captured" in browser.evaluate("document.getElementById('headline')"
                                                       ".textContent")
        assert browser.evaluate("[...document.querySelectorAll('#headline-problems li')]"
                                ".map(li => li.textContent)") == summary["headline"]
        assert browser.console_errors() == []
