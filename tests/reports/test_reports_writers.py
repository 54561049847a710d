"""Every report writer over the literal run and the empty run: files, determinism, escaping,
sampling of large timelines."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from correlate.errors import InputError
from correlate.reports import KINDS, write_reports
from correlate.reports.html import build_data
from correlate.reports.load import load_outputs
from correlate.reports.page import embed_json
from correlate.reports.timeline import io_bars, sample_bars, task_bars
from correlate.sources.frames import RunFrames

from .literal_run import HOSTILE_KEYS, XSS_IMG, literal_frames, write_run

EXPECTED = {"markdown": ["report.md", "figures/timeline.png", "figures/prefixes.png"],
            "html": ["report.html"], "trace": ["trace.json"]}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_writes_its_files(literal_out: Path, tmp_path: Path, kind: str) -> None:
    out = shutil.copytree(literal_out, tmp_path / "out")
    written = write_reports(out, kinds=[kind])
    assert sorted(p.relative_to(out).as_posix() for p in written) == sorted(EXPECTED[kind])
    assert all(p.stat().st_size > 0 for p in written)


def test_empty_run_renders_every_kind(tmp_path: Path) -> None:
    # GIVEN a run with no executions and no I/O
    out = write_run(RunFrames(), tmp_path / "out")
    # WHEN every report is written THEN nothing fails and the page says so
    written = write_reports(out)
    assert {p.name for p in written} == {"report.md", "report.html", "trace.json"}
    assert "No task executions were recorded." in (out / "report.md").read_text()
    assert json.loads((out / "trace.json").read_text())["traceEvents"] == []


def test_reports_are_byte_identical_when_regenerated(literal_reports: Path,
                                                     tmp_path: Path) -> None:
    again = write_run(literal_frames(), tmp_path / "again")
    write_reports(again)
    for rel in ("report.md", "report.html", "trace.json", "figures/timeline.png",
                "figures/prefixes.png"):
        assert (again / rel).read_bytes() == (literal_reports / rel).read_bytes(), rel


def test_not_an_output_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a correlate output folder"):
        write_reports(tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_an_unreadable_table_is_named_in_one_error(literal_out: Path, tmp_path: Path,
                                                    kind: str) -> None:
    out = shutil.copytree(literal_out, tmp_path / "out")
    (out / "segments.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="cannot read table segments") as err:
        write_reports(out, kinds=[kind])
    assert err.value.path == str(out / "segments.parquet")


def test_markdown_shows_hostile_keys_only_inside_code_spans(literal_reports: Path) -> None:
    md = (literal_reports / "report.md").read_text()
    assert f"`{HOSTILE_KEYS[0]}`" in md and f"`{HOSTILE_KEYS[1]}`" in md
    outside_code = re.sub(r"`+[^`]*`+", "", md)
    assert "<" not in outside_code.replace("<br>", "")
    assert "worker clock &lt;unknown&gt; for one process" in md
    assert "rejected 2 record(s) from darshan" in md
    assert "did not close cleanly" in md


def test_markdown_has_every_section(literal_reports: Path) -> None:
    md = (literal_reports / "report.md").read_text()
    for heading in ("## Run", "## Where time went", "## Heaviest task prefixes",
                    "### By CPU", "### By I/O bytes", "## Busiest files",
                    "## Top functions per heavy prefix", "## Unattributed I/O and CPU",
                    "## Data quality"):
        assert heading in md, heading
    assert "![Task timeline per worker thread](figures/timeline.png)" in md
    assert "| `/tmp/event-loop.log` |" in md


def test_html_embeds_data_without_markup_characters(literal_reports: Path) -> None:
    page = (literal_reports / "report.html").read_text()
    block = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page,
                      re.S)
    assert block is not None
    raw = block.group(1)
    assert not set("<>&") & set(raw)
    # the page has exactly its own two script elements; no key closed one
    assert page.count("</script>") == 2 and XSS_IMG not in page
    data = json.loads(raw)
    assert data == json.loads(embed_json(build_data(load_outputs(literal_reports))))
    assert set(HOSTILE_KEYS) <= set(data["timeline"]["tasks"]["key"])
    assert "http://" not in page and "https://" not in page  # nothing loaded from a network


def test_sample_bars_keeps_longest_and_says_so() -> None:
    n = 1000
    bars = pl.DataFrame({"execution_id": range(n), "lane": [i % 4 for i in range(n)],
                         "start": [i * 10 for i in range(n)],
                         "stop": [i * 10 + (500 if i == 777 else 5) for i in range(n)]})
    s = sample_bars(bars, 100)
    assert s.frame.height <= 100 and s.total == n
    assert 777 in s.frame["execution_id"].to_list()
    assert "showing" in s.note and "of 1,000" in s.note


def test_io_bars_merge_into_bins_above_the_limit(literal_out: Path) -> None:
    out = load_outputs(literal_out)
    from correlate.reports.aggregate import lanes, run_window

    t0, t1 = run_window(out["tasks"])
    ln = lanes(out["tasks"])
    bars = task_bars(out["tasks"], ln, t0)
    exact = io_bars(out["segments"], ln, bars, t0, t1, 1000)
    merged = io_bars(out["segments"], ln, bars, t0, t1, 2)
    assert exact.note == "" and merged.note.startswith(f"{exact.total} I/O segments merged")
    assert merged.frame["bytes"].sum() == pytest.approx(exact.frame["bytes"].sum())
    assert merged.frame["ops"].sum() == exact.frame["ops"].sum()


def test_report_command_regenerates_from_an_output_folder(literal_out: Path,
                                                           tmp_path: Path) -> None:
    import argparse

    from correlate.commands import report

    out = shutil.copytree(literal_out, tmp_path / "out")
    parser = argparse.ArgumentParser()
    report.add_arguments(parser)
    assert report.run(parser.parse_args([str(out), "--kinds", "html", "trace"])) == 0
    assert (out / "report.html").exists() and (out / "trace.json").exists()
    assert not (out / "report.md").exists()


def test_top_functions_sums_do_not_depend_on_the_order_rows_are_added() -> None:
    """Float sums taken in another order differ in their last bits ((0.1 + 0.2) + 0.3 is not
    0.1 + (0.2 + 0.3)); the streaming group-by adds rows in no fixed order, so the sums are
    taken exactly, in integer nanoseconds."""
    from correlate.reports.aggregate import top_functions

    times = [0.1, 0.2, 0.3, 1e-9, 2.5e-7]
    rows = pl.DataFrame({"execution_id": list(range(len(times))), "module": "m", "name": "f",
                         "file": "m.py", "line": 1, "clock": "wall", "ncall_kind": "calls",
                         "tsub_s": times,
                         "ttot_s": times, "ncall": 1})
    tasks = pl.DataFrame({"execution_id": list(range(len(times))), "prefix": "p"})
    got = [top_functions(order, tasks, ["p"], 5) for order in (rows, rows.reverse())]
    assert got[0].equals(got[1])
    exact = sum(round(t * 1e9) for t in times) / 1e9
    assert got[0].row(0, named=True)["tsub_s"] == exact
    assert got[0].row(0, named=True)["executions"] == len(times)


def test_top_functions_are_summed_per_listed_prefix_only() -> None:
    """Each execution's functions count under its own prefix (carried through the join as an
    index into the listed prefixes); a prefix not listed, and a null one, are left out."""
    from correlate.reports.aggregate import top_functions

    tasks = pl.DataFrame({"execution_id": [0, 1, 2, 3, 4],
                          "prefix": ["b", "a", "b", "c", None]})
    rows = pl.DataFrame({"execution_id": [0, 0, 1, 2, 3, 4], "module": "m",
                         "name": ["f", "g", "f", "f", "f", "f"], "file": "m.py", "line": 1,
                         "clock": "wall", "ncall_kind": "calls",
                         "tsub_s": [1.0, 5.0, 2.0, 3.0, 7.0, 11.0],
                         "ttot_s": [1.0, 5.0, 2.0, 3.0, 7.0, 11.0], "ncall": [1, 2, 3, 4, 5, 6]})
    got = top_functions(rows.lazy(), tasks, ["a", "b", None], 5)
    assert got.select("prefix", "name", "tsub_s", "ncall", "executions").rows() == [
        ("a", "f", 2.0, 3, 1), ("b", "g", 5.0, 2, 1), ("b", "f", 4.0, 5, 2)]
