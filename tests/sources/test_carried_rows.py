"""Run format 3: a table whose rows ride on another's (``CARRIED``: a worker's Darshan clock
markers on its clock samples, one stream fewer per worker) reads back as its own table, the
same as from a folder that wrote it as a stream of its own."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import polars as pl

from collectors.sink import ProcessSink, proc_json, process_dir
from correlate.schema import run as schema
from correlate.sources.detect import load
from correlate.sources.run_streams import read_table


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
