"""``correlate.console.Progress``: stages on a terminal's progress bar (partitions done/total,
rows/s) and in the stage log (time, peak RSS); nothing without either."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
from rich.progress import Progress as Bar

from correlate.console import Progress
from correlate.frames.mappers import local_map


def test_a_terminal_shows_each_stage_its_partitions_and_rows_per_second() -> None:
    screen = io.StringIO()
    term = Console(file=screen, force_terminal=True, width=120)
    with Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
             TextColumn("{task.fields[rate]}"), console=term) as bar:
        stages = Progress(bar)
        stages.begin("events", rows=5_000)
        mapped = stages.mapped(local_map, "attribution partitions", rows=len)
        got = list(mapped(lambda n: [0] * n, [10, 20, 30]))
        stages.end()
    shown = screen.getvalue()
    assert got == [[0] * 10, [0] * 20, [0] * 30]
    assert "events" in shown and "attribution partitions" in shown
    assert "3/3" in shown and "rows/s" in shown


def test_the_stage_log_has_each_stage_with_its_time_and_peak(tmp_path: Path) -> None:
    log = tmp_path / "stages.jsonl"
    stages = Progress(None, str(log))
    stages.begin("small")
    stages.begin("big")
    held = bytearray(200 << 20)
    held[::4096] = b"\1" * len(held[::4096])  # touch every page
    stages.end()
    del held
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [s["stage"] for s in lines] == ["small", "big"]
    small, big = lines
    # the peak is each stage's own (reset at its start): the big one held 200 MB more
    assert big["peak_rss_mb"] - small["peak_rss_mb"] > 150
    assert all(s["wall_s"] >= 0 for s in lines)


def test_without_a_terminal_or_a_log_nothing_is_shown(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    stages = Progress()
    stages.begin("events", rows=10)
    assert list(stages.mapped(local_map, "parts")(str, [1, 2])) == ["1", "2"]
    stages.end()
    out = capsys.readouterr()
    assert out.out == out.err == ""
