"""trace.json is valid Chrome trace-event JSON: event types and fields, monotonic timestamps
per track, proper nesting, every execution present; large runs aggregate and say so."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from correlate.reports import write_reports
from correlate.reports.trace import perfetto
from correlate.reports.trace.critical_path_track import LINKS_TID, PATH_PID

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


def _slices(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and "key" in e["args"]]


def test_a_large_run_draws_its_first_executions_and_says_so_on_the_first_track(
        literal_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = shutil.copytree(literal_out, tmp_path / "out")
    tasks = pl.read_parquet(out / "tasks.parquet").sort("start_ns", "execution_id")
    assert tasks.height >= 4
    monkeypatch.setattr(perfetto, "TASK_LIMIT", 2)
    monkeypatch.setattr(perfetto, "LONGEST_LIMIT", 1)
    write_reports(out, kinds=["trace"])
    trace = json.loads((out / "trace.json").read_text())
    first = tasks.filter(pl.col("start_ns") < tasks["start_ns"][2])
    # beside the window, whole: the critical path's later executions and the longest other
    rest = tasks.join(first, on="execution_id", how="anti")
    path = pl.read_parquet(out / "critical_path.parquet")["execution_id"]
    on_path = rest.filter(pl.col("execution_id").is_in(path.implode()))
    longest = (rest.filter(~pl.col("execution_id").is_in(path.implode()))
               .with_columns(d=pl.col("stop_ns") - pl.col("start_ns"))
               .sort("d", "execution_id", descending=[True, False]).head(1))
    assert on_path.height + longest.height > 0  # (the fixture shows something beside)
    drawn = pl.concat([first, on_path, longest.drop("d")])
    validate(trace, drawn)  # nesting, order, fields; exactly these executions drawn
    segs = pl.read_parquet(out / "segments.parquet")
    io = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "io"]
    assert {e["args"]["execution_id"] for e in io} <= set(drawn["execution_id"].to_list()) | {None}
    # each drawn execution's I/O whole; the others' left out
    own = segs.filter(pl.col("execution_id").is_in(drawn["execution_id"].implode()))
    assert sum(e["args"]["ops"] for e in io if e["args"]["execution_id"] is not None) == own.height
    assert sum(e["args"]["ops"] for e in io) < segs.height
    # the counters sum the window's executions only (those beside it would make them jump)
    cpu: dict[int, float] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "C" and e["name"] == "task CPU s (cumulative)":
            cpu[e["pid"]] = max(cpu.get(e["pid"], 0.0), e["args"]["cpu_s"])
    assert sum(cpu.values()) == pytest.approx(first["cpu_s"].sum())
    # the critical path's track holds every link, not only the window's
    links = [e for e in trace["traceEvents"] if e["pid"] == PATH_PID and e["ph"] == "X"
             and e["tid"] == LINKS_TID]
    assert len(links) == path.len()
    # the first track (sorted first) says what was left out and how to see the rest
    notes_pid = perfetto.NOTES_PID
    sort_index = {e["pid"]: e["args"]["sort_index"] for e in trace["traceEvents"]
                  if e["name"] == "process_sort_index"}
    assert min(sort_index, key=sort_index.__getitem__) == notes_pid
    note = [e for e in trace["traceEvents"] if e["pid"] == notes_pid and e["ph"] == "X"]
    assert len(note) == 1
    text = note[0]["args"]["note"]
    assert f"showing the {first.height:,} of {tasks.height:,} task executions" in text
    assert "--trace-window" in text and str(out) in text
    assert (f"the {on_path.height:,} later executions of the critical path and the "
            f"{longest.height:,} longest") in text
    assert trace["otherData"]["executions_in_run"] == tasks.height


def test_trace_window_draws_the_executions_starting_in_it(
        literal_out: Path, tmp_path: Path) -> None:
    out = shutil.copytree(literal_out, tmp_path / "out")
    tasks = pl.read_parquet(out / "tasks.parquet")
    first = tasks["start_ns"].min()
    # a window from the second execution's start on: the first is left out
    second = tasks["start_ns"].drop_nulls().unique().sort()[1]
    start_s = (second - first) / 1e9
    write_reports(out, kinds=["trace"], trace_window=(start_s, None))
    trace = json.loads((out / "trace.json").read_text())
    shown = tasks.filter(pl.col("start_ns") >= second)
    assert 0 < shown.height < tasks.height
    validate(trace, shown)
    assert f"showing the {shown.height:,} of {tasks.height:,} task executions" in (
        trace["otherData"]["notes"][0])
    # 0: draws every execution, like the default for a small run
    write_reports(out, kinds=["trace"], trace_window=(0.0, None))
    validate(json.loads((out / "trace.json").read_text()), tasks)


def test_trace_window_option_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    from correlate.commands.report import trace_window

    assert trace_window("1.5:3") == (1.5, 3.0)
    assert trace_window("120:") == (120.0, None)
    for bad in ("3", "3:1", "a:b", "-1:2"):
        with pytest.raises(Exception, match="START:END"):
            trace_window(bad)


def test_a_long_critical_path_is_drawn_beside_the_window_by_its_longest_links(
        literal_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = shutil.copytree(literal_out, tmp_path / "out")
    tasks = pl.read_parquet(out / "tasks.parquet").sort("start_ns", "execution_id")
    path = pl.read_parquet(out / "critical_path.parquet")
    monkeypatch.setattr(perfetto, "TASK_LIMIT", 1)
    monkeypatch.setattr(perfetto, "PATH_LIMIT", 1)
    monkeypatch.setattr(perfetto, "LONGEST_LIMIT", 0)
    write_reports(out, kinds=["trace"])
    trace = json.loads((out / "trace.json").read_text())
    timed = tasks.drop_nulls(["start_ns", "stop_ns"])
    first = timed.filter(pl.col("start_ns") < timed["start_ns"][1])
    later = path.join(first, on="execution_id", how="anti").with_columns(
        d=pl.col("stop_ns") - pl.col("start_ns")).sort("d", "execution_id",
                                                         descending=[True, False])
    assert later.height >= 2  # (the fixture's path is longer than the limit)
    drawn = first["execution_id"].to_list() + later["execution_id"].head(1).to_list()
    assert sorted(e["args"]["execution_id"] for e in _slices(trace)) == sorted(drawn)
    # the path's track: the window's links and the one drawn beside it
    links = [e["args"]["position"] for e in trace["traceEvents"]
             if e["pid"] == PATH_PID and e["ph"] == "X" and e["tid"] == LINKS_TID]
    assert sorted(links) == sorted(path.filter(pl.col("execution_id").is_in(drawn))[
        "position"].to_list())
    note = " · ".join(trace["otherData"]["notes"])
    assert f"the 1 longest of the critical path's {later.height:,} later executions" in note
