"""The sink's file rules without a cluster: proc.json's closing record (a new file, or the bytes
reserved for it where the folder was moved away), in-place rewrites, a writer's own folder,
the streams' file mode, and a flush thread that stops when told."""

from __future__ import annotations

import errno
import json
import os

import pytest

from collectors.sink import (
    CLOSING_RESERVE,
    ProcessSink,
    StreamFile,
    Strings,
    close_proc_json,
    closing_record,
    fitting,
    proc_json,
    process_dir,
    rewrite_in_place,
)
from correlate.schema import Column, Table

TABLE = Table("t", "", (Column("n", "Int64", "", nullable=False),))
CLOSING = {"closed_ns": 7, "rows": {"t": 3}}


def test_a_rewrite_in_place_keeps_the_file_s_size_and_refuses_what_does_not_fit(tmp_path):
    path = tmp_path / "f.json"
    path.write_text(" " * 200)
    assert rewrite_in_place(path, {"a": 1})
    assert path.stat().st_size == 200 and json.loads(path.read_text()) == {"a": 1}
    assert not rewrite_in_place(path, {"b": "x" * 300})
    assert json.loads(path.read_text()) == {"a": 1}


@pytest.mark.parametrize("before", [None, '{"pid": ', "[1, 2]"])
def test_the_closing_record_is_written_whatever_proc_json_held(tmp_path, before):
    # no proc.json yet, one cut short, one that is not an object: the record still lands
    if before is not None:
        (tmp_path / "proc.json").write_text(before)
    close_proc_json(tmp_path, CLOSING)
    assert closing_record(tmp_path) == CLOSING


def test_a_folder_moved_away_gets_its_record_in_the_reserved_bytes(tmp_path):
    proc = tmp_path / "worker-h-1"
    proc.mkdir()
    proc_json(proc, role="worker")
    size = (proc / "proc.json").stat().st_size
    folder = os.open(proc, os.O_RDONLY)
    try:
        moved = proc.rename(tmp_path / "moved")  # a new proc.json cannot be put at proc/
        close_proc_json(proc, CLOSING, folder)
    finally:
        os.close(folder)
    assert closing_record(moved) == CLOSING
    assert (moved / "proc.json").stat().st_size == size  # inside the reserve: no new block
    assert json.loads((moved / "proc.json").read_text())["role"] == "worker"


def test_a_record_larger_than_the_reserve_is_refused_and_proc_json_left_whole(tmp_path):
    proc = tmp_path / "worker-h-2"
    proc.mkdir()
    proc_json(proc, role="worker")
    before = (proc / "proc.json").read_bytes()
    folder = os.open(proc, os.O_RDONLY)
    try:
        moved = proc.rename(tmp_path / "moved")
        with pytest.raises(OSError) as err:
            close_proc_json(proc, {"rows": {"t": "x" * CLOSING_RESERVE}}, folder)
    finally:
        os.close(folder)
    assert err.value.errno == errno.ENOSPC
    assert (moved / "proc.json").read_bytes() == before and closing_record(moved) is None


def test_writers_of_one_process_with_the_same_name_get_folders_of_their_own(tmp_path):
    first = process_dir(tmp_path, "worker", "h", 1234)
    second = process_dir(tmp_path, "worker", "h", 1234)
    assert (first.name, second.name) == ("worker-h-1234", "worker-h-1234.2")
    assert first.is_dir() and second.is_dir()


def test_streams_are_readable_by_everyone_the_umask_allows(tmp_path):
    stream = StreamFile(tmp_path / "t.arrows", ["n"], ["int64"])
    stream.append([[1, 2]])
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "t.arrows").stat().st_mode & 0o777 == 0o644 & ~umask


def test_stop_returns_once_the_flush_thread_has_ended_and_a_bad_snapshot_never_raises(
        tmp_path):
    import threading
    import time

    sink = ProcessSink(tmp_path, {"t": TABLE}, interval=0.01)
    assert sink.write_snapshots({"no such table": [(1,)]}) is None  # counted, not raised
    inside = threading.Event()

    def slow_hook() -> None:  # the thread is inside a flush when stop is called
        inside.set()
        time.sleep(0.5)
    sink.before_flush.append(slow_hook)
    sink.append("t", (1,))
    sink.start()
    assert inside.wait(10)
    sink.stop()
    assert not sink._thread.is_alive()
    sink.before_flush.clear()
    sink.close()


def test_raw_rows_a_failing_hook_never_turned_into_rows_are_counted_as_dropped(tmp_path):
    sink = ProcessSink(tmp_path, {"t": TABLE}, interval=60)
    _buf, add = sink.raw("t", 2)
    for i in range(3):
        add((i, i))

    def failing() -> None:
        raise RuntimeError("the plugin's hook failed")
    sink.before_flush.append(failing)
    sink.close()
    assert closing_record(tmp_path)["dropped"]["t"] == {"not flushed (hook error)": 3}


def test_repeated_values_that_are_not_text_get_ids_of_their_text():
    # a Dask key may be a tuple: its text is what is stored
    strings = Strings()
    ids = strings.encode([("x", 1), "y", ("x", 1), None])
    assert ids[0] == ids[2] and ids[3] is None and len({ids[0], ids[1]}) == 2
    assert dict(zip(strings.new_ids, strings.new_texts, strict=True)) == {
        ids[0]: "('x', 1)", ids[1]: "y"}


def test_rows_a_column_cannot_hold_are_left_out_and_counted():
    kept, left_out = fitting(["int64", "utf8", "double"],
                             [[1, 2.5, 3, None], ["a", "b", "c", "d"], [0.5, 1.5, "x", 2.0]])
    assert (kept, left_out) == ([[1, None], ["a", "d"], [0.5, 2.0]], 2)
