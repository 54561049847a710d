"""Run format 3: a table whose rows ride on another's (``CARRIED``: a worker's Darshan clock
markers on its clock samples) or are written in another's stream as rows of their own
(``IN_FILE_OF``: coroutine slices with the executions), one stream fewer per worker, reads
back as its own table, the same as from a folder that wrote it as a stream of its own."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import polars as pl
import pytest

from collectors.sink import ProcessSink, proc_json, process_dir
from correlate.schema import run as schema
from correlate.sources.detect import load
from testing.raw_parts import read_table


def _worker(run: Path, pid: int, carried: bool) -> list[tuple]:
    """A worker folder written by the collectors' sink: 6 clock samples over 2 flushes, a
    marker after every other one; the markers' rows."""
    proc = process_dir(run, "worker", "h", pid)
    tables = ([schema.CLOCK_SAMPLES_3] if carried
              else [schema.CLOCK_SAMPLES_RAW, schema.CLOCK_MARKERS_RAW])
    sink = ProcessSink(proc, {t.name: t for t in tables})
    proc_json(proc, pid=pid, host="h", role="worker", address=f"tcp://127.0.0.1:{pid}", name=str(pid),
              nthreads=1, main_thread_id=threading.get_ident())
    markers, marker = [], f"{run}/darshan/markers/h-{pid}"
    base = time.time_ns()
    for i in range(6):
        sample = (base + i * 10**9, 1000 * i, 0.001 * i, 0.002, 0.5 * i)
        mark = ((base + i * 10**9 + 5000, marker, 64 * (i // 2), 64) if i % 2 == 0
                else (None, None, None, None))
        if carried:
            sink.append("worker_clock_samples", (*sample, *mark))
        else:
            sink.append("worker_clock_samples", sample)
            if mark[0] is not None:
                sink.append("worker_clock_markers", mark)
        if mark[0] is not None:
            markers.append(mark)
        if i == 2:
            sink.flush()
    sink.close()
    return markers


def test_markers_carried_on_clock_samples_read_as_their_own_table(tmp_path):
    run = tmp_path / "run"
    carried = _worker(run, 1001, carried=True)
    separate = _worker(run, 1002, carried=False)
    assert len(carried) == len(separate) == 3
    new, old = run / "procs" / "worker-h-1001", run / "procs" / "worker-h-1002"
    assert not (new / "worker_clock_markers.arrows").exists()
    assert (old / "worker_clock_markers.arrows").exists()

    frames = load(run)
    assert frames.rejects.is_empty(), frames.rejects
    columns = ["local_time_ns", "path", "offset", "length"]
    markers = frames.table("clock_markers")
    for pid, expected in ((1001, carried), (1002, separate)):
        got = markers.filter(pl.col("pid") == pid).sort("local_time_ns")
        assert got.select(columns).rows() == expected
        assert got["host"].unique().to_list() == ["h"]
    samples = frames.table("clock_samples")
    assert samples.group_by("pid").len().sort("pid").rows() == [(1001, 6), (1002, 6)]
    assert not any(c.startswith("marker_") for c in samples.columns)
    # the per-folder reader of the tests and tools too
    ((_path, own),) = read_table(new, schema.CLOCK_MARKERS_RAW)
    assert own.select(columns).rows() == carried


def _coroutine_worker(run: Path, pid: int, own_stream: bool, monkeypatch) -> list[tuple]:
    """A worker folder written by the collectors' sink: 3 executions, the 2nd and 3rd coroutine
    tasks with 2 and 3 active slices, over 2 flushes; ``own_stream``: the slices in a stream
    of their own, as older collectors wrote them. The slices' rows."""
    with monkeypatch.context() as m:
        if own_stream:
            m.setattr("collectors.sink.IN_FILE_OF", {})
        proc = process_dir(run, "worker", "h", pid)
        tables = (schema.EXECUTIONS_RAW, schema.COROUTINE_SLICES_RAW)
        sink = ProcessSink(proc, {t.name: t for t in tables})
    proc_json(proc, pid=pid, host="h", role="worker", address=f"tcp://127.0.0.1:{pid}",
              name=str(pid), nthreads=1, main_thread_id=threading.get_ident())
    base, slices = time.time_ns(), []
    for seq in (1, 2, 3):
        start = base + seq * 10**9
        for i in range(seq if seq > 1 else 0):
            row = (seq, start + 1000 * i, start + 1000 * i + 500, 400)
            sink.append("coroutine_slices", row)
            slices.append(row)
        sink.append("task_executions", (seq, f"k-{seq}", 7, 70, start, start + 10**6,
                                        1200, "ok"))
        if seq == 2:
            sink.flush()
    sink.close()
    return slices


def test_coroutine_slices_written_with_the_executions_read_as_their_own_table(tmp_path,
                                                                              monkeypatch):
    run = tmp_path / "run"
    shared = _coroutine_worker(run, 1001, own_stream=False, monkeypatch=monkeypatch)
    separate = _coroutine_worker(run, 1002, own_stream=True, monkeypatch=monkeypatch)
    new, old = run / "procs" / "worker-h-1001", run / "procs" / "worker-h-1002"
    assert not (new / "coroutine_slices.arrows").exists()
    assert (old / "coroutine_slices.arrows").exists()
    from collectors.sink import closing_record

    assert closing_record(new)["rows"] == {"task_executions": 3, "coroutine_slices": 5}

    frames = load(run)
    assert frames.rejects.is_empty(), frames.rejects
    columns = ["execution_seq", "local_start_ns", "local_stop_ns", "thread_cpu_ns"]
    slices = frames.table("execution_slices")
    for pid, expected in ((1001, shared), (1002, separate)):
        got = slices.filter(pl.col("pid") == pid).sort("local_start_ns")
        assert got.select(columns[:3]).rows() == [r[:3] for r in expected]
        assert got["cpu_s"].to_list() == pytest.approx([r[3] / 1e9 for r in expected])
        executions = frames.executions.filter(pl.col("pid") == pid)
        assert executions["key"].sort().to_list() == ["k-1", "k-2", "k-3"]
    # the per-folder reader of the tests and tools too
    ((_path, own),) = read_table(new, schema.COROUTINE_SLICES_RAW)
    assert own.select(columns).rows() == shared
    ((_path, executions),) = read_table(new, schema.EXECUTIONS_RAW)
    assert executions["key"].to_list() == ["k-1", "k-2", "k-3"]


def _scheduler(run: Path, pid: int, own_files: bool, monkeypatch) -> dict[str, list[tuple]]:
    """A scheduler folder written by the collectors' sink: cluster events and sender notes
    over 2 flushes, the spans and their metrics as snapshots replaced at each (the second
    with more); ``own_files``: each table in files of its own, as older collectors wrote them.
    The rows each table should read."""
    with monkeypatch.context() as m:
        if own_files:
            m.setattr("collectors.sink.IN_FILE_OF", {})
        proc = process_dir(run, "scheduler", "h", pid)
        tables = (schema.CLUSTER_EVENTS, schema.SENDER_NOTES, schema.SPANS_RAW,
                  schema.SPAN_METRICS_RAW)
        sink = ProcessSink(proc, {t.name: t for t in tables})
    proc_json(proc, pid=pid, host="h", role="scheduler", address=f"tcp://127.0.0.1:{pid}")
    base = time.time_ns()
    events = [(base + i, "add_worker", f"tcp://10.0.0.{i}:1", str(i), f"n{i}", 100 + i, 2,
               2**30) for i in range(3)]
    notes = [(base + 10 + i, "Client-1", 0, None if i == 0 else f"x-{i}",
              None if i == 0 else "load", None if i == 0 else 0.01 * i) for i in range(3)]
    spans = [("s1", '["default"]', None), ("s2", '["etl"]', None), ("s3", '["etl", "x"]', "s2")]
    metrics = [("s2", "execute", "inc", "thread-cpu", "seconds", 0.5 * i) for i in range(1, 3)]
    for half in (slice(0, 2), slice(2, 3)):
        for row in events[half]:
            sink.append("cluster_events", row)
        for row in notes[half]:
            sink.append("sender_notes", row)
        sink.flush()
        n = half.stop
        sink.write_snapshots({"spans": spans[:n], "span_metrics": metrics[:n - 1]})
    sink.close()
    return {"cluster_events": events, "sender_notes": notes, "spans": spans,
            "span_metrics": metrics}


def test_sender_notes_and_span_metrics_written_in_other_tables_files_read_as_their_own(
        tmp_path, monkeypatch):
    shared = _scheduler(tmp_path / "new", 1001, own_files=False, monkeypatch=monkeypatch)
    separate = _scheduler(tmp_path / "old", 1002, own_files=True, monkeypatch=monkeypatch)
    new, old = tmp_path / "new/procs/scheduler-h-1001", tmp_path / "old/procs/scheduler-h-1002"
    assert sorted(p.name for p in new.iterdir()) == [
        "cluster_events.arrows", "proc.json", "spans.snapshot.arrow"]
    assert {"sender_notes.arrows", "span_metrics.snapshot.arrow"} <= {p.name for p in
                                                                      old.iterdir()}
    from collectors.sink import closing_record

    record = closing_record(new)
    assert record["rows"] == {"cluster_events": 3, "sender_notes": 3, "spans": 3,
                              "span_metrics": 2}
    assert record["dropped"] == {}
    for proc, expected in ((new, shared), (old, separate)):  # the per-folder reader
        for table in (schema.CLUSTER_EVENTS, schema.SENDER_NOTES, schema.SPANS_RAW,
                      schema.SPAN_METRICS_RAW):
            got = pl.concat([f for _p, f in read_table(proc, table)])
            assert sorted(got.rows(), key=str) == sorted(expected[table.name], key=str), (
                proc.name, table.name)
    read = {}
    for name in ("new", "old"):
        frames = load(tmp_path / name)
        assert frames.rejects.is_empty(), frames.rejects
        read[name] = {t: frames.table(t).drop("pid", strict=False).sort(pl.all())
                      for t in ("senders", "span_tree", "span_dask_metrics")}
        senders = frames.table("senders").select(schema.SENDER_NOTES.names)
        notes = shared if name == "new" else separate
        assert sorted(senders.rows(), key=str) == sorted(notes["sender_notes"], key=str)
    assert read["new"]["span_tree"].height == 3
    assert read["new"]["span_dask_metrics"].height == 2
    for table in ("span_tree", "span_dask_metrics"):
        assert read["new"][table].equals(read["old"][table]), table
