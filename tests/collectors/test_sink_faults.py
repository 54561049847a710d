"""The sink in a run folder that fills up or turns read-only (a real small tmpfs): a failed
write leaves no temp file and keeps its rows for the next flush; what cannot be kept or written
by the close is counted in the closing record per table and reason; the closing record reaches
proc.json even in a full folder (into space proc.json reserved at start), and a process killed
while it writes it there leaves proc.json readable."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from collectors.sink import ProcessSink, closing_record, proc_json
from correlate.schema import Column, Table
from correlate.sources.detect import load
from testing.faults import mount_error, tmpfs
from testing.raw_parts import read_proc

TABLE = Table("t", "", (Column("n", "Int64", "", nullable=False),
                        Column("text", "String", "", nullable=False)))


@pytest.fixture
def small(tmp_path):
    if (why := mount_error(tmp_path / "probe")) is not None:
        pytest.skip(why)
    with tmpfs(tmp_path / "fs", "256k") as fs:
        yield fs


def sink_in(folder: Path, max_rows: int) -> ProcessSink:
    """A sink and its proc.json, as the plugins start them."""
    sink = ProcessSink(folder, {"t": TABLE}, max_rows=max_rows)
    proc_json(folder, role="worker", address="tcp://127.0.0.1:1", name="w", nthreads=1)
    return sink


def closed(folder: Path) -> dict:
    record = closing_record(folder)
    assert record is not None
    return record


def rows_on_disk(folder: Path) -> list[int]:
    return sorted(read_proc(folder, TABLE)["n"].to_list())


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


def test_rows_of_a_write_into_a_full_folder_are_written_once_space_returns(small):
    sink = sink_in(small.path / "proc", 1000)
    for n in range(300):
        sink.append("t", (n, "x" * 20))
    small.fill()
    sink.flush()
    assert sink.write_errors == {"no space": 1}
    assert leftovers(small.path) == [] and rows_on_disk(sink.proc_dir) == []
    for n in range(300, 400):
        sink.append("t", (n, "y"))
    sink.flush()  # still full: kept again
    small.free()
    sink.close()
    assert rows_on_disk(sink.proc_dir) == list(range(400))
    record = closed(sink.proc_dir)
    assert record["rows"] == {"t": 400} and record["dropped"] == {}
    assert record["write_errors"] == {"no space": 2}


def test_rows_beyond_the_bound_while_writes_fail_are_counted_with_the_reason(small):
    sink = sink_in(small.path / "proc", 100)
    small.fill()
    for n in range(80):
        sink.append("t", (n, "a"))
    sink.flush()  # 80 kept
    for n in range(80, 160):
        sink.append("t", (n, "b"))
    sink.flush()  # 160 taken, 100 kept, the 60 oldest dropped
    assert sink.dropped["t"] == {"no space": 60}
    small.free()
    sink.close()
    assert rows_on_disk(sink.proc_dir) == list(range(60, 160))
    record = closed(sink.proc_dir)
    assert record["dropped"] == {"t": {"no space": 60}}
    assert 60 + record["rows"]["t"] == 160


def test_a_folder_full_for_good_still_gets_its_closing_record_counting_every_row(small):
    sink = sink_in(small.path / "proc", 1000)
    started = json.loads((sink.proc_dir / "proc.json").read_text())
    for n in range(50):
        sink.append("t", (n, "x"))
    sink.flush()
    small.fill()
    for n in range(50, 120):  # more than the free end of the stream's last page holds
        sink.append("t", (n, "x" * 100))
    sink.close()
    info = json.loads((sink.proc_dir / "proc.json").read_text())  # (one JSON object)
    record = info.pop("closed")
    assert info == started
    assert record["rows"] == {"t": 50}
    assert record["dropped"] == {"t": {"no space": 70}}
    assert leftovers(small.path) == []


def test_a_process_killed_while_it_closes_into_a_full_folder_leaves_proc_json_readable(
        small, monkeypatch):
    """In a full folder the record is written after proc.json's object, then the object's
    brace turned into a comma: killed in between, proc.json is the object and ignored bytes;
    correlate reads the process (not closed cleanly) and its rows."""
    folder = small.path / "run" / "procs" / "worker-h-1"
    sink = sink_in(folder, 1000)
    for n in range(20):
        sink.append("t", (n, "x"))
    sink.flush()
    small.fill()
    writes = []

    def killed_after_one(fd: int, data: bytes, at: int) -> int:
        if writes:
            raise KeyboardInterrupt  # (the process ends here)
        writes.append(data)
        return real(fd, data, at)

    real = os.pwrite
    monkeypatch.setattr(os, "pwrite", killed_after_one)
    ended_by: list[type] = []  # (the close writes from a thread of its own)
    monkeypatch.setattr(threading, "excepthook", lambda args: ended_by.append(args.exc_type))
    sink.close()
    monkeypatch.undo()
    assert ended_by == [KeyboardInterrupt]
    assert writes and b'"closed"' in writes[0]
    assert closing_record(folder) is None
    frames = load(small.path / "run")
    assert any("proc.json: " in w and "after its JSON object ignored" in w
               for w in frames.warnings), frames.warnings
    assert any("worker-h-1 did not close cleanly" in w or "worker-h-1 has not closed" in w
               for w in frames.warnings), frames.warnings
    assert frames.processes["pid"].to_list() == [os.getpid()]


def test_a_folder_made_read_only_partway_counts_the_reason(small):
    sink = sink_in(small.path / "proc", 1000)
    for n in range(10):
        sink.append("t", (n, "x"))
    sink.flush()
    small.read_only()
    for n in range(10, 30):
        sink.append("t", (n, "x"))
    sink.flush()
    assert sink.write_errors == {"read-only file system": 1}
    small.read_only(False)
    sink.close()
    assert rows_on_disk(sink.proc_dir) == list(range(30))


def test_a_write_that_never_returns_does_not_hold_the_close(tmp_path, monkeypatch):
    """A run folder whose file system stopped answering: the flush thread is inside a write that
    does not return. The close (the server's stop, the process's exit) still returns within its
    bound, and the closing record counts the rows the stuck flush held."""
    import time

    from collectors import sink as sink_module

    folder = tmp_path / "proc"
    sink = sink_in(folder, 1000)
    inside, hung = threading.Event(), threading.Event()
    write = sink_module.ProcessSink._write

    def stuck_write(self, name, columns):
        if threading.current_thread().name == "dask-correlate-flush":
            inside.set()
            hung.wait(30)  # a write into a file system that stopped answering
        return write(self, name, columns)

    monkeypatch.setattr(sink_module.ProcessSink, "_write", stuck_write)
    sink.interval = 0.05
    for n in range(40):
        sink.append("t", (n, "x"))
    sink.start()
    assert inside.wait(10)
    for n in range(40, 50):  # appended while the flush thread is stuck
        sink.append("t", (n, "y"))
    t0 = time.monotonic()
    sink.close(join_timeout=0.3)
    assert time.monotonic() - t0 < 3
    record = closed(folder)
    assert record["dropped"]["t"] == {sink_module.STUCK: 10}
    hung.set()
