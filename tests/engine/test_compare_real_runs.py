"""``correlate compare`` on two real runs of one workload (compare_job.py under ``collect`` on a
LocalCluster, 2 worker processes × 2 threads), the second slowed down on purpose in two known
ways: every ``nap`` task sleeps 0.3 s more, every ``load`` task reads twice the bytes from
throttled storage. The comparison must rank exactly those two prefixes first, blame sleeping
(time no source explains) for ``nap`` and I/O with twice the bytes for ``load``; a run compared
with itself must show no change and say so.

The Darshan logs are always written through ``testing.darshan_writer`` from the calls the tasks
recorded (never a real darshan-runtime: the storage throttle is a sleep inside each recorded
call, which a real LD_PRELOAD would not count as I/O time), so every byte is known.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import compare_job as job
import polars as pl
import pytest

from correlate.cli import main
from testing.darshan_writer import write_logs_from_truth

HERE = Path(__file__).parent
pytestmark = pytest.mark.cluster


def _record(tmp: Path, mode: str) -> tuple[Path, list[dict]]:
    run, truth = tmp / mode, tmp / f"truth-{mode}.json"
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(run), "--darshan", "off",
           "--flush-interval", "0.5", "--", sys.executable, "compare_job.py", mode, str(truth),
           str(tmp / "data")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=HERE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = json.loads(truth.read_text())
    write_logs_from_truth(run, records)
    return run, records


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare-real")
    (before, truth_b), (after, truth_a) = (_record(tmp, m) for m in ("before", "after"))
    assert main(["compare", str(before), str(after), "-o", str(tmp / "diff")]) == 0
    return tmp / "diff", before, after, truth_b, truth_a


def _read_bytes(truth: list[dict], prefix: str) -> float:
    return float(sum(n for t in truth if t["key"].startswith(prefix + "-")
                     for op, _o, n, *_ in t["ops"] if op == "read"))


def _read_time(truth: list[dict], prefix: str) -> float:
    """Seconds the tasks of ``prefix`` spent inside their read calls, as they recorded them."""
    return sum(b - a for t in truth if t["key"].startswith(prefix + "-")
               for op, _o, _n, a, b in t["ops"] if op == "read")


def _changed(md: str) -> list[str]:
    """The bullet lines of compare.md's "What changed" section."""
    section = md.split("## What changed\n\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- ")]


def test_the_two_injected_causes_rank_first_with_the_right_resource(compared):
    out, _before, _after, truth_b, truth_a = compared
    d = pl.read_parquet(out / "compare_prefix.parquet")
    top = d.head(2).rows_by_key("item", named=True, unique=True)
    # which of the two is larger depends on the machine's load (sleep overshoot); both lead
    assert set(top) == {"nap", "load"}, d.select("rank", "item", "wall_s_delta")
    assert all(r["significant"] for r in top.values())
    nap, load = top["nap"], top["load"]
    # nap: 0.3 s more sleep in each of 8 executions; no CPU, no I/O
    assert 0.7 * 8 * job.EXTRA_NAP_S < nap["wall_s_delta"] < 1.5 * 8 * job.EXTRA_NAP_S
    assert abs(nap["cpu_s_delta"]) < 0.05 and nap["io_time_s_delta"] == 0
    assert nap["read_bytes_delta"] == 0 == nap["write_bytes_delta"]
    # load: exactly twice the bytes read (those the tasks made), exactly the I/O time the
    # tasks spent in their reads (about twice as long: throttled storage, but each sleep
    # overshoots by what the machine's load makes it), and the I/O time carries the wall change
    assert load["read_bytes_before"] == _read_bytes(truth_b, "load") == 8 * job.INPUT_BYTES
    assert load["read_bytes_after"] == _read_bytes(truth_a, "load") == 16 * job.INPUT_BYTES
    assert load["io_time_s_before"] == pytest.approx(_read_time(truth_b, "load"), abs=1e-6)
    assert load["io_time_s_after"] == pytest.approx(_read_time(truth_a, "load"), abs=1e-6)
    assert load["io_time_s_rel"] > 0.6
    assert load["io_time_s_delta"] > 0.8 * load["wall_s_delta"] > 0
    assert abs(load["cpu_s_delta"]) < 0.2 * load["wall_s_delta"]
    # the plain-language lines: these two first, each blaming its own resource
    changed = _changed((out / "compare.md").read_text())
    lines = dict(line[2:].split(": ", 1) for line in changed[:2])
    assert set(lines) == {"`nap`", "`load`"}, changed
    assert "no source explains (sleeping" in lines["`nap`"]
    assert "I/O time" not in lines["`nap`"] and "CPU per" not in lines["`nap`"]
    assert "with bytes +100% (16.0 MiB → 32.0 MiB)" in lines["`load`"]
    assert "no source explains" not in lines["`load`"] and "CPU" not in lines["`load`"]
    md = (out / "compare.md").read_text()
    # the two jobs ran with different arguments: the only setup difference
    setup = md.split("## Setup differences")[1].split("##")[0].strip().splitlines()
    assert len(setup) == 1 and setup[0].startswith("- command: … before "), setup
    assert " → … after " in setup[0], setup


def test_the_html_page_holds_the_same_comparison(compared):
    out, *_ = compared
    page = (out / "compare.html").read_text()
    data = json.loads(page.split('<script type="application/json" id="compare-data">', 1)[1]
                      .split("</script>", 1)[0])
    assert {e["item"] for e in data["explained"][:2]} == {"nap", "load"}
    assert data["dimensions"]["prefix"]["total"] == 4
    assert "http://" not in page and "https://" not in page and "src=" not in page


def test_each_input_file_shows_its_doubled_reads(compared, tmp_path):
    out, before, after, *_ = compared
    d = pl.read_parquet(out / "compare_file.parquet")
    inputs = d.filter(pl.col("item").str.contains("/input-"))
    outputs = d.filter(pl.col("item").str.contains("/out-"))
    assert inputs.height == job.N_TASKS and outputs.height == job.N_TASKS // 2
    assert (inputs["read_bytes_before"] == job.INPUT_BYTES).all()
    assert (inputs["read_bytes_rel"] == 1.0).all() and inputs["significant"].all()
    assert set(d.head(job.N_TASKS)["item"]) == set(inputs["item"])
    assert (outputs["write_bytes_delta"] == 0).all() and not outputs["significant"].any()
    # --by file: the plain-language lines name the input files and their doubled bytes
    assert main(["compare", str(before), str(after), "-o", str(tmp_path / "by-file"),
                 "--by", "file"]) == 0
    changed = _changed((tmp_path / "by-file" / "compare.md").read_text())
    assert 1 <= len(changed) <= 5 and all("/input-" in line for line in changed), changed
    assert all("with bytes +100% (2.0 MiB → 4.0 MiB)" in line for line in changed), changed


def test_a_run_compared_with_itself_shows_no_change_and_says_so(compared, tmp_path):
    _out, before, *_ = compared
    assert main(["compare", str(before), str(before), "-o", str(tmp_path / "same")]) == 0
    d = pl.read_parquet(tmp_path / "same" / "compare_prefix.parquet")
    assert not d["significant"].any() and (d["wall_s_delta"] == 0).all()
    md = (tmp_path / "same" / "compare.md").read_text()
    assert _changed(md) == [
        "- no change beyond noise: no prefix changed by more than 10% of its own time and more "
        f"than {0.03 * d['wall_s_before'].sum():.3f} s (3% of the total task wall time)"]
    assert "(+0.000 s, +0%); executions 28 → 28." in md
