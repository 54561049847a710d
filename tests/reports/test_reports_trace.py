"""trace.json is valid Chrome trace-event JSON: event types and fields, monotonic timestamps
per track, proper nesting, every execution present; large runs aggregate and say so."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from correlate.reports import perfetto, write_reports

REQUIRED = {"M": {"name", "ph", "pid", "tid", "args"},
            "X": {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"},
            "C": {"name", "ph", "ts", "pid", "args"},
            "i": {"name", "ph", "ts", "pid", "tid", "s"}}


def validate(trace: dict, tasks: pl.DataFrame) -> list[dict]:
    events = trace["traceEvents"]
    assert trace["displayTimeUnit"] == "ms"
    for ev in events:
        assert ev["ph"] in REQUIRED, ev
        assert REQUIRED[ev["ph"]] <= set(ev), ev
        if "ts" in ev:
            assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0
        if ev["ph"] == "X":
            assert ev["dur"] >= 0
        if ev["ph"] == "i":
            assert ev["s"] in ("g", "p", "t")
    # metadata first, then timed events in non-decreasing ts per (pid, tid)
    phases = [ev["ph"] for ev in events]
    assert phases == sorted(phases, key=lambda p: p != "M")
    last: dict[tuple, float] = {}
    for ev in events:
        if ev["ph"] in "Xi":
            track = (ev["pid"], ev["tid"])
            assert ev["ts"] >= last.get(track, 0.0), ev
            last[track] = ev["ts"]
    # slices on one track nest: no partial overlap
    stacks: dict[tuple, list[float]] = defaultdict(list)
    for ev in (e for e in events if e["ph"] == "X"):
        stack = stacks[(ev["pid"], ev["tid"])]
        while stack and stack[-1] <= ev["ts"] + 1e-6:  # µs with ns resolution
            stack.pop()
        end = round(ev["ts"] + ev["dur"], 3)
        assert not stack or end <= stack[-1] + 1e-6, ev
        stack.append(end)
    slices = [e for e in events if e["ph"] == "X" and "key" in e["args"]]
    assert sorted(e["args"]["execution_id"] for e in slices) == sorted(
        tasks["execution_id"].to_list())
    names = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in slices} <= names
    return events


def test_trace_of_the_literal_run_is_valid(literal_reports: Path) -> None:
    trace = json.loads((literal_reports / "trace.json").read_text())
    tasks = pl.read_parquet(literal_reports / "tasks.parquet")
    events = validate(trace, tasks)
    kinds = {e["ph"] for e in events}
    assert kinds == {"M", "X", "C", "i"}
    io = [e for e in events if e["ph"] == "X" and e["cat"] == "io"]
    assert len(io) == pl.read_parquet(literal_reports / "segments.parquet").height
    # nested I/O sits inside its task slice; the straddling write is clipped to it
    task_by_id = {e["args"]["execution_id"]: e for e in events
                  if e["ph"] == "X" and "key" in e["args"]}
    for seg in (e for e in io if e["args"]["execution_id"] is not None):
        parent = task_by_id[seg["args"]["execution_id"]]
        if (parent["pid"], parent["tid"]) == (seg["pid"], seg["tid"]):
            assert parent["ts"] <= seg["ts"] <= seg["ts"] + seg["dur"] <= (
                parent["ts"] + parent["dur"] + 1e-6)
    assert {e["name"] for e in events if e["ph"] == "C"} == {
        "I/O bytes (cumulative)", "task CPU s (cumulative)"}
    assert trace["otherData"]["notes"] == []


def test_many_segments_are_aggregated_per_execution_and_file(
        literal_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = shutil.copytree(literal_out, tmp_path / "out")
    monkeypatch.setattr(perfetto, "SEGMENT_LIMIT", 3)
    monkeypatch.setattr(perfetto, "EVENT_LIMIT", 5)
    write_reports(out, kinds=["trace"])
    trace = json.loads((out / "trace.json").read_text())
    events = validate(trace, pl.read_parquet(out / "tasks.parquet"))
    notes = " ".join(trace["otherData"]["notes"])
    assert "merged per execution × file × operation" in notes
    assert "scheduler transitions: one in" in notes
    io = [e for e in events if e["ph"] == "X" and e["cat"] == "io"]
    segs = pl.read_parquet(out / "segments.parquet")
    assert sum(e["args"]["ops"] for e in io) == segs.height
    assert sum(e["args"]["bytes"] for e in io) == segs["length"].sum()
    assert len([e for e in events if e["ph"] == "i"]) <= 5


def test_trace_written_in_slices_is_the_same_file(
        literal_reports: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = shutil.copytree(literal_reports, tmp_path / "out")
    monkeypatch.setattr(perfetto, "WRITE_ROWS", 2)
    write_reports(out, kinds=["trace"])
    sliced = (out / "trace.json").read_bytes()
    assert sliced == (literal_reports / "trace.json").read_bytes()
    assert len(json.loads(sliced)["traceEvents"]) > 2 * 2  # several slices were written
