"""Spans and annotations on a real LocalCluster (``spans_job.py``: nested spans and a custom
annotation, recorded by ``collect``): every task carries its span path and annotations, each
span's figures are the sums over its subtree's tasks, our per-span thread CPU agrees with
Dask's own per-span thread-cpu, and every output shows the breakdown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

pytestmark = pytest.mark.cluster
HERE = Path(__file__).resolve().parent
#: our thread CPU per span against Dask's execute thread-cpu: both read the executing thread's
#: CPU clock around the task, ours at the executor hook and Dask's a few calls inside it
CPU_TOLERANCE = (0.05, 0.010)  # 5% of Dask's, plus 10 ms


def _record(run: Path, *job_args: str) -> None:
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(run), "--darshan",
           "off", "--profile", "off", "--flush-interval", "1", "--", sys.executable,
           str(HERE / "spans_job.py"), *job_args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("spans")
    _record(tmp / "run")
    shown = subprocess.run([sys.executable, "-m", "correlate.cli", str(tmp / "run"), "-o",
                            str(tmp / "out"), "--group-by", "stage"],
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    (tmp / "out" / "printed.txt").write_text(shown.stdout)
    return tmp / "out"


def test_every_task_carries_its_span_and_annotations(out):
    tasks = pl.read_parquet(out / "tasks.parquet")
    spans = dict(zip(tasks["key"], tasks["span"], strict=True))
    notes = dict(zip(tasks["key"], tasks["annotations"], strict=True))
    for i in range(10):
        assert spans[f"load-{i}"] == "etl / load"
        assert json.loads(notes[f"load-{i}"]) == {"stage": "read"}
    for i in range(20):
        assert spans[f"train-{i}"] == "etl / train"
        assert json.loads(notes[f"train-{i}"]) == {"priority": 5, "stage": "fit"}
    for i in range(5):  # outside any span: Dask's default one, no annotation
        assert spans[f"nap-{i}"] == "default" and notes[f"nap-{i}"] is None


def test_span_totals_are_the_sums_of_their_subtrees_and_agree_with_dask(out):
    tasks = pl.read_parquet(out / "tasks.parquet")
    s = json.loads((out / "summary.json").read_text())
    rows = {r["span"]: r for r in s["spans"]}
    assert set(rows) == {"default", "etl", "etl / load", "etl / train"}
    assert (rows["etl"]["depth"], rows["etl / load"]["depth"]) == (0, 1)
    for span, members in (("etl", ["etl / load", "etl / train"]), ("etl / load", ["etl / load"]),
                          ("default", ["default"])):
        own = tasks.filter(pl.col("span").is_in(members))
        assert rows[span]["executions"] == own.height
        assert rows[span]["cpu_s"] == pytest.approx(own["cpu_s"].sum(), abs=1e-8)
        assert rows[span]["wall_s"] == pytest.approx(own["duration_s"].sum(), abs=1e-8)
    rel, absolute = CPU_TOLERANCE
    for span in ("etl", "etl / load", "etl / train"):
        dask = rows[span]["dask_thread_cpu_s"]
        assert dask is not None and dask > 0.05
        assert abs(rows[span]["cpu_s"] - dask) <= rel * dask + absolute, (span, rows[span])
    groups = {r["value"]: r for r in s["groups"]["stage"]}
    assert groups['"fit"']["executions"] == 20 and groups['"read"']["executions"] == 10
    assert groups[None]["executions"] == 5


def test_terminal_reports_and_trace_show_the_spans(out):
    printed = (out / "printed.txt").read_text()
    assert "By span" in printed and "By annotation 'stage'" in printed
    md = (out / "report.md").read_text()
    assert "## By span" in md and "| `etl / train` | 20 |" in md
    assert "## By annotation `stage`" in md
    html = (out / "report.html").read_text()
    assert '"span":"etl / load"' in html
    trace = json.loads((out / "trace.json").read_text())
    spans = {e["args"]["span"] for e in trace["traceEvents"] if e.get("ph") == "X"
             and "span" in e.get("args", {})}
    assert {"etl / load", "etl / train", "default"} <= spans


def test_a_run_without_spans_has_no_span_section(tmp_path):
    """Runs whose tasks are all in Dask's default span keep today's outputs."""
    from correlate.engine import correlate_to
    from correlate.sources.run_folder import load

    sample = Path(__file__).resolve().parents[2] / "samples" / "run-v1"
    out = tmp_path / "out"
    result = correlate_to(load(sample), out)
    assert "spans" not in result.summary and "groups" not in result.summary


def test_compare_by_span_names_the_span_that_changed(out, tmp_path):
    """Two runs with the same spans, the train span's tasks doing 4 times the work in the
    second: compared by span, ``etl / train`` is named first, by its CPU."""
    _record(tmp_path / "after", "4")
    shown = subprocess.run([sys.executable, "-m", "correlate.cli", "compare", str(out.parent /
                            "run"), str(tmp_path / "after"), "--by", "span", "-o",
                            str(tmp_path / "cmp")], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    md = (tmp_path / "cmp" / "compare.md").read_text()
    rows = [line for line in md.split("## By span", 1)[1].splitlines()
            if line.startswith("| 1 |")]
    assert rows and "`etl / train`" in rows[0], md
    lines = [line for line in md.splitlines() if "etl / train" in line and "CPU" in line]
    assert lines, md


def test_a_group_by_key_no_task_carries_is_an_error_listing_the_keys(out, tmp_path):
    """``--group-by stgae`` (a typo of ``stage``) stops before correlating, with one line that
    names the missing key and the keys the tasks carry; nothing is written."""
    shown = subprocess.run([sys.executable, "-m", "correlate.cli", str(out.parent / "run"),
                            "-o", str(tmp_path / "typo"), "--group-by", "stage", "--group-by",
                            "stgae"], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 1, shown.stderr[-3000:]
    lines = shown.stderr.strip().splitlines()
    assert lines[-1].endswith("--group-by stgae: no task carries this annotation key; keys "
                              "present: priority, stage"), lines
    assert len([ln for ln in lines if "correlate:" in ln]) == 1
    assert not (tmp_path / "typo").exists()
