"""The sink in a run folder that fills up or turns read-only (a real small tmpfs): a failed
write leaves no temp file and keeps its rows for the next flush; what cannot be kept or written
by the close is counted in closed.json per table and reason; closed.json is written even in a
full folder (into space reserved at start)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.sink import ProcessSink
from correlate.schema import Column, Table
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


def rows_on_disk(folder: Path) -> list[int]:
    return sorted(read_proc(folder, TABLE)["n"].to_list())


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


def test_rows_of_a_write_into_a_full_folder_are_written_once_space_returns(small):
    sink = ProcessSink(small.path / "proc", {"t": TABLE}, max_rows=1000)
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
    closed = json.loads((sink.proc_dir / "closed.json").read_text())
    assert closed["rows"] == {"t": 400} and closed["dropped"] == {}
    assert closed["write_errors"] == {"no space": 2}


def test_rows_beyond_the_bound_while_writes_fail_are_counted_with_the_reason(small):
    sink = ProcessSink(small.path / "proc", {"t": TABLE}, max_rows=100)
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
    closed = json.loads((sink.proc_dir / "closed.json").read_text())
    assert closed["dropped"] == {"t": {"no space": 60}}
    assert 60 + closed["rows"]["t"] == 160


def test_a_folder_full_for_good_still_gets_closed_json_counting_every_row(small):
    sink = ProcessSink(small.path / "proc", {"t": TABLE}, max_rows=1000)
    for n in range(50):
        sink.append("t", (n, "x"))
    sink.flush()
    small.fill()
    for n in range(50, 120):  # more than the free end of the stream's last page holds
        sink.append("t", (n, "x" * 100))
    sink.close()
    closed = json.loads((sink.proc_dir / "closed.json").read_text())
    assert closed["rows"] == {"t": 50}
    assert closed["dropped"] == {"t": {"no space": 70}}
    assert leftovers(small.path) == []


def test_a_folder_made_read_only_partway_counts_the_reason(small):
    sink = ProcessSink(small.path / "proc", {"t": TABLE}, max_rows=1000)
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
