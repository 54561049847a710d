"""A worker paused at its memory limit starts no task, whatever its free threads: the waits of
tasks that were ready then are memory's, not the threads' (issue 62). A real LocalCluster job
(tests/collectors/jobs.py pause_job: 1 worker x 2 threads, 400 MB limit, pausing at 60%): one
task holds 300 MiB for 2.5 s, another sleeps 1 s, and eight short tasks ready on the worker
wait through the pause with a thread free. Truth: Dask's own events of the worker's status and
its worker-side transition log."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
from collect_job import record

from correlate.cli import main as correlate_main
from correlate.engine import correlate_frames
from correlate.sources.run_folder import load
from tests.engine.key_parts import assert_same, correlated

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def paused(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pause")
    run, truth, _lib = record(tmp, "pause", darshan="off")
    frames = load(run)
    return frames, correlate_frames(frames), json.loads(truth.read_text()), run


def _dask_pauses(truth: dict) -> list[tuple[float, float]]:
    spans, start = [], None
    for t, msg in truth["events"]:
        if msg["status"] == "paused":
            start = t
        elif msg["prev-status"] == "paused" and start is not None:
            spans.append((start, t))
            start = None
    return spans


def test_the_workers_pauses_are_dasks_own(paused):
    frames, _result, truth, _run = paused
    dask = _dask_pauses(truth)
    assert len(dask) >= 1  # the job did pause its worker
    got = frames.worker_pauses
    assert got["worker"].to_list() == [truth["worker"]] * len(dask)
    for (start, stop), (s_ns, e_ns) in zip(dask, got.select("start_ns", "stop_ns").iter_rows(),
                                           strict=True):
        assert abs(s_ns / 1e9 - start) < 0.05 and abs(e_ns / 1e9 - stop) < 0.05


def test_waits_while_paused_are_memorys_not_the_threads(paused):
    _frames, result, truth, _run = paused
    dask = _dask_pauses(truth)
    ready: dict[str, float] = {}
    expected: dict[str, tuple[float, float]] = {}  # key -> (paused part, the whole wait)
    for key, finish, ts in truth["log"]:
        if finish == "ready":
            ready.setdefault(key, ts)
        elif key in ready and key not in expected:
            whole = ts - ready[key]
            part = sum(max(0.0, min(ts, e) - max(ready[key], s)) for s, e in dask)
            expected[key] = (part, whole)
    tasks = result.tables["tasks"].filter(pl.col("key").str.starts_with("inc-"))
    assert tasks.height == 8
    for r in tasks.iter_rows(named=True):
        part, whole = expected[r["key"]]
        assert part > 1.0, r["key"]  # each waited while the worker was paused
        assert abs((r["wait_paused_s"] or 0.0) - part) < 0.06, (r["key"], r["wait_paused_s"], part)
        assert abs(r["wait_thread_s"] + (r["wait_paused_s"] or 0.0) - whole) < 0.01
    hold = result.tables["tasks"].filter(pl.col("key") == "hold-memory")
    assert hold["wait_paused_s"].to_list() == [None]  # it started before the pause


def test_the_report_says_the_wait_was_memorys(paused, tmp_path):
    frames, _result, truth, run = paused
    out = tmp_path / "out"
    assert correlate_main([str(run), "-o", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "waiting while the worker was paused (memory)" in text
    assert "memory, not threads, held it" in text
    # the pauses are drawn: summary.json holds them (Dask's own, as the frames read them) ...
    pauses = frames.worker_pauses.select("start_ns", "stop_ns").rows()
    summary = json.loads((out / "summary.json").read_text())
    assert [(p["worker"], p["start_ns"], p["stop_ns"]) for p in summary["worker_pauses"]] == [
        (truth["worker"], s, e) for s, e in pauses]
    # ... report.html's timeline shades each of them behind every lane of the worker ...
    html = (out / "report.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    tl = data["timeline"]
    lanes = [i for i, label in enumerate(tl["lanes"]) if label.startswith(truth["worker"])]
    t0 = pl.read_parquet(out / "tasks.parquet")["start_ns"].min()
    want = sorted((lane, round((s - t0) / 1e6, 4), round((e - s) / 1e6, 4))
                  for lane in lanes for s, e in pauses)
    st = tl["states"]
    got = sorted(zip(st["lane"], st["start"], st["dur"], strict=True))
    assert [g[0] for g in got] == [w[0] for w in want]
    assert [x for g in got for x in g[1:]] == pytest.approx([x for w in want for x in w[1:]],
                                                            abs=2e-4)
    assert set(st["died"]) == {0}
    # ... timeline.png draws them (the shading's colour covers some of the figure) ...
    from PIL import Image

    from correlate.reports.figures import PAUSED_COLOUR
    png = Image.open(out / "figures" / "timeline.png").convert("RGB")
    shade = tuple(int(PAUSED_COLOUR[i:i + 2], 16) for i in (1, 3, 5))
    assert {c: n for n, c in png.getcolors(1 << 20)}.get(shade, 0) > 1000
    # ... and the trace has them as slices on the worker's "memory and life" track
    trace = json.loads((out / "trace.json").read_text())
    other, events = trace["otherData"], trace["traceEvents"]
    track = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M"
             and e["name"] == "thread_name" and e["args"]["name"] == "memory and life"}
    drawn = sorted((e["ts"], e["dur"]) for e in events
                   if e.get("name") == "paused (memory)" and (e["pid"], e["tid"]) in track)
    assert [x for d in drawn for x in d] == pytest.approx(
        [x for s, e in pauses for x in ((s - other["t0_ns"]) / 1e3, (e - s) / 1e3)], abs=2e-3)


def test_the_critical_path_says_its_waits_on_the_paused_worker(paused):
    """The job's path ends with the short tasks that waited for the resume: their wait before
    they ran is the pause's on the path too, not 'other'. (How much of it is on the path
    depends on when the memory monitor resumed the worker, about when the holder ended or
    later, and on which thread the short tasks ran after it.)"""
    _frames, result, truth, _run = paused
    waits = result.summary["critical_path"]["waits"]
    pause_s = sum(e - s for s, e in _dask_pauses(truth))
    assert 0 < waits["paused"] <= pause_s + 0.05
    # a link whose task waited through the pause has none of it left as 'other'
    links = result.tables["critical_path"].join(
        result.tables["tasks"].select("key", task_paused="wait_paused_s"), on="key")
    waited = links.filter(pl.col("task_paused") > 0)
    assert waited.height >= 1
    assert (waited["wait_other_s"].fill_null(0.0) < 0.01).all(), waited


def test_the_pause_is_a_memory_pressure_finding(paused):
    from correlate.findings.context import MIN_COST_S, MIN_COST_SHARE

    _frames, result, truth, _run = paused
    found = [f for f in result.summary["findings"] if f["kind"] == "memory-pressure"]
    tasks, path = result.tables["tasks"], result.tables["critical_path"]
    window = (tasks["stop_ns"].max() - tasks["start_ns"].min()) / 1e9
    on_path = path["wait_paused_s"].sum()
    if on_path < max(MIN_COST_S, MIN_COST_SHARE * window):
        # (whether the path runs through the paused waits depends on the run's scheduling:
        # when it ends at hold-memory, the pause cost the span nothing to find)
        assert not found, found
        return
    assert len(found) == 1, result.summary["findings"]
    f = found[0]
    assert f["prefixes"][0] == "inc" and set(f["keys"]) <= {f"inc-{i}" for i in range(8)}
    assert "paused worker" in f["evidence"] and "recomputed" not in f["evidence"]
    # the cost is at most the paused waits on the critical path (less where the busy time
    # shared by the threads bounds the window), so at most the worker's pauses
    paused_s = sum(e - s for s, e in _dask_pauses(truth))
    assert 0.3 < f["cost_s"] <= on_path + 1e-9 and on_path <= paused_s + 0.05
    # the pauses held the job back: no finding says its waits were the threads'
    assert not [g for g in result.summary["findings"] if g["kind"] == "idle-threads"]


def test_the_paused_waits_read_in_parts_are_those_read_whole(paused, monkeypatch):
    """A big run's transitions are read a part of the keys at a time, the workers' clocks
    known only after the last: the waits through a pause are measured from what each part
    kept of them, and every table is the same as read whole."""
    frames, result, _truth, _run = paused
    whole = {**result.tables, "summary": result.summary}
    assert whole["tasks"]["wait_paused_s"].drop_nulls().sum() > 0.3
    rows = frames.transitions.lazy().select(pl.len()).collect().item()
    in_parts, _ = correlated(frames, monkeypatch, rows // 4,
                             spilled=False)
    assert_same(whole, in_parts)
