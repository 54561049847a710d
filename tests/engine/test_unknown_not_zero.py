"""Every output of a run says what each figure is: what was not measured is null / "-" /
"unknown" / "not captured", never 0.

A real job (``unknown_job.py``: CPU, sleeping, ``async def`` and file-writing tasks on a
LocalCluster of 2 processes × 2 threads) recorded by ``collect --darshan off``: its I/O is
unknown. Every output is walked: summary.json, the parquet tables, the terminal summary,
report.md, report.html (its embedded data, and as Chromium draws it), prefixes.png's series
and trace.json. The labels are checked on the same run: a sleep is not CPU, the event loop is
not an executor thread, sampler counts are samples. And runs whose source records no CPU (the
MiniApp fixture) show CPU as not captured.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from correlate.reports import aggregate as agg

pytestmark = pytest.mark.cluster
HERE = Path(__file__).resolve().parent
NAPS, NAP_S = 4, 0.3


@pytest.fixture(scope="module")
def no_darshan(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The output folder of the job recorded without Darshan, and what correlate printed."""
    tmp = tmp_path_factory.mktemp("unknown")
    (tmp / "data").mkdir()
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(tmp / "run"), "--darshan",
           "off", "--", sys.executable, str(HERE / "unknown_job.py"), str(tmp / "data")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp / "out"
    shown = subprocess.run([sys.executable, "-m", "correlate.cli", str(tmp / "run"), "-o",
                            str(out)], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    return out, shown.stdout


def _leaves(value: object, path: str = ""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def test_summary_json_has_no_zero_for_unknown_io(no_darshan):
    out, _ = no_darshan
    s = json.loads((out / "summary.json").read_text())
    assert s["io"]["captured"] is False
    # every I/O figure, spill figure read from Darshan, and per-prefix I/O figure is unknown
    unknown = [(p, v) for p, v in _leaves({"io": s["io"], "spill": s["spill"],
                                           "top": s["top_prefixes_by_wall"]})
               if re.search(r"bytes|ops|io_time|spill_write|unspill|keys_spilled", p)
               and ".source." not in p]
    assert unknown and all(v is None for _, v in unknown), [u for u in unknown if u[1] is not None]
    # the fact is a warning too, not only a headline
    assert any("not captured" in w for w in s["warnings"])
    assert s["darshan_runtime_versions"] == []
    # CPU was measured for every execution: known figures stay numbers
    assert s["cpu"]["executions_with_cpu"] == s["executions"] and s["cpu"]["task_cpu_s"] > 0


def test_tables_hold_null_for_unknown_io(no_darshan):
    out, _ = no_darshan
    tasks = pl.read_parquet(out / "tasks.parquet")
    for col in ("read_bytes", "write_bytes", "io_time_s", "spilled_bytes", "spill_write_s",
                "unspilled_bytes"):
        assert tasks[col].null_count() == tasks.height, col
    assert tasks["cpu_s"].null_count() == 0
    assert pl.read_parquet(out / "task_files.parquet").is_empty()


def test_terminal_and_markdown_print_no_zero_for_unknowns(no_darshan):
    out, printed = no_darshan
    md = (out / "report.md").read_text()
    for text in (printed, md):
        assert not re.search(r"(?<![\d.])0 B\b", text)
        assert "I/O in DXT" not in text
    assert "I/O: unknown (not captured)" in printed
    assert "Darshan runtime none" in md
    # I/O time, read, written, and the reads and writes with their mean size
    prefixes = [line for line in md.splitlines() if line.startswith("| `save`")]
    assert prefixes and prefixes[0].count("unknown") == 5
    assert "Their requests" not in printed  # no request was counted: none is listed as 0


def test_html_data_and_page_show_no_zero_for_unknowns(no_darshan, tmp_path):
    out, _ = no_darshan
    html = (out / "report.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert all(p[k] is None for p in data["prefixes"] for k in (
        "io_s", "read_bytes", "write_bytes", "read_ops", "write_ops", "read_mean_bytes",
        "write_mean_bytes"))
    assert all(w["io_s"] is None and w["other_includes_io"] for w in data["workers"])
    assert data["headline"]["io"]["total"]["bytes"] is None
    from tests.reports.cdp import CHROMIUM, Browser
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium absent: the drawn page is not checked (CI installs it)")
    with Browser(tmp_path / "profile") as page:
        page.open((out / "report.html").as_uri())
        assert page.console_errors() == []
        shown = page.evaluate("document.body.innerText")
        assert "not captured" in shown
        assert not re.search(r"(?<![\d.])0 B\b", shown)
        # the I/O series of the charts are not drawn at all (no bar of 0)
        assert page.evaluate("document.getElementById('prefix-chart').dataset.drawn") == str(
            2 * min(20, len(data["prefixes"])))


def test_figures_and_trace_draw_no_unmeasured_series(no_darshan):
    out, _ = no_darshan
    from correlate.reports.figures import _measured
    from correlate.reports.load import load_outputs

    pre = agg.prefixes(load_outputs(out)["tasks"])
    drawn = _measured([("wall", pre["wall_s"], ""), ("CPU", pre["cpu_s"], ""),
                       ("I/O", pre["io_s"], ""), ("read", pre["read_bytes"], "")])
    assert [name for name, *_ in drawn] == ["wall", "CPU"]
    trace = json.loads((out / "trace.json").read_text())
    counters = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "C"}
    assert counters == {"task CPU s (cumulative)"}  # no I/O counter at 0


def test_sleep_is_not_compute_and_the_event_loop_is_not_a_thread(no_darshan):
    out, _ = no_darshan
    from correlate.reports.load import load_outputs

    outputs = load_outputs(out)
    tasks = outputs["tasks"]
    budget = agg.worker_budget(tasks)
    naps = tasks.filter(pl.col("prefix") == "nap")
    # the naps' wall time is "other" (not CPU): at least their sleeps, beside little CPU
    assert naps["cpu_s"].sum() < 0.1 * NAPS * NAP_S
    assert budget["other_s"].sum() >= 0.95 * NAPS * NAP_S
    # 2 executor threads per worker, whichever ran coroutines; their time is a line of its own
    assert budget["threads"].to_list() == [2, 2], (  # (CI at 65682f4 saw [3, 3] once)
        tasks.group_by("worker", "thread_id", "prefix").agg(
            pl.len(), coroutine=agg.is_coroutine().sum()).sort("worker", "thread_id").rows())
    assert budget["coroutines"].sum() == 4 and budget["coroutine_s"].sum() >= 4 * 0.05
    lanes = agg.lanes(tasks)
    loops = lanes.filter(pl.col("label").str.ends_with("event loop"))
    assert loops.height >= 1 and loops["thread_id"].is_not_null().all()
    assert not lanes["label"].str.contains(r"\d{6,}").any()  # no raw thread ids as labels
    # the default profile is the sampler: its counts are samples, and say so
    md = (out / "report.md").read_text()
    assert "| function | where | exclusive | inclusive | samples |" in md
    assert "| calls |" not in md
    kinds = pl.read_parquet(out / "task_functions.parquet")["ncall_kind"]
    assert kinds.n_unique() == 1 and kinds[0] == "samples"


@pytest.mark.fixtures
def test_a_source_without_cpu_shows_cpu_as_not_captured(correlated_fixture):
    from correlate.reports.load import load_outputs

    out = correlated_fixture("recup-miniapp-20240215")
    s = json.loads((out / "summary.json").read_text())
    assert s["cpu"]["executions_with_cpu"] == 0 and s["cpu"]["task_cpu_s"] is None
    assert all(p["cpu_s"] is None for p in s["top_prefixes_by_wall"])
    md = (out / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| `map_read_frame`"))
    assert "not captured" in row
    assert "CPU: not captured inside task executions" in md
    budget = agg.worker_budget(load_outputs(out)["tasks"])
    assert budget["cpu_s"].is_null().all() and budget["other_s"].is_null().all()
    html = (out / "report.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert data["headline"]["cpu"]["task_cpu_s"] is None
    assert all(p["cpu_s"] is None for p in data["prefixes"])


def test_compare_of_runs_without_io_says_unknown(no_darshan, tmp_path):
    """compare of two runs without Darshan: the I/O deltas are unknown, not 0, and the rest of
    a task's time is not called "neither CPU nor I/O"."""
    out, _ = no_darshan
    shown = subprocess.run([sys.executable, "-m", "correlate.cli", "compare", str(out),
                            str(out), "-o", str(tmp_path / "cmp")], capture_output=True,
                           text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    md = (tmp_path / "cmp" / "compare.md").read_text()
    rows = [line.split(" | ") for line in md.splitlines() if line.startswith("| 1 | `")]
    assert rows and rows[0][7:9] == ["unknown", "unknown"], rows  # Δ I/O time, Δ bytes
    assert "neither CPU nor I/O" not in md and "CPU or I/O" not in md
    diff = pl.read_parquet(tmp_path / "cmp" / "compare_prefix.parquet")
    assert diff["io_time_s_delta"].null_count() == diff.height
