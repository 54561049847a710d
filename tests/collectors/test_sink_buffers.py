"""The sink's flat row buffers: rows added by many threads while the flush thread takes them
are each written once, whole and in their own columns; a buffered row holds no object the
garbage collector tracks; rows past the bound are counted as dropped."""

from __future__ import annotations

import gc
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest

from collectors.sink import ProcessSink, take
from correlate.schema import Column, Table
from testing.raw_parts import read_proc

TABLE = Table("t", "", (Column("writer", "Int64", "", nullable=False),
                        Column("n", "Int64", "", nullable=False),
                        Column("text", "String", "", nullable=False),
                        Column("half", "Float64", "")))


def written(folder: Path) -> pl.DataFrame:
    return read_proc(folder, TABLE).drop("file")


def test_rows_added_while_the_flush_takes_them_are_each_written_once_and_whole(tmp_path):
    sink = ProcessSink(tmp_path, {"t": TABLE})
    writers, rows = 4, 20_000
    stop = threading.Event()

    def add(w: int) -> None:
        for n in range(rows):
            sink.append("t", (w, n, f"{w}:{n}", n / 2 if n % 3 else None))
            if n % 500 == 0:
                time.sleep(0)  # let the flush thread in

    def flush() -> None:
        while not stop.is_set():
            sink.flush()

    threads = [threading.Thread(target=add, args=(w,)) for w in range(writers)]
    flusher = threading.Thread(target=flush)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two bytecodes, often
    try:
        flusher.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        flusher.join()
    finally:
        sys.setswitchinterval(interval)
    sink.flush()
    df = written(tmp_path)
    assert sink.batches >= 2  # the flush did take rows while they were being added
    assert df.height == writers * rows == sink.written["t"]
    assert df.select(pl.struct("writer", "n").is_unique().all()).item()
    assert df.select((pl.col("text") == pl.format("{}:{}", "writer", "n")).all()).item()
    halves = df.filter(pl.col("n") % 3 != 0)
    assert (halves["half"] == halves["n"] / 2).all()
    assert df.filter(pl.col("n") % 3 == 0)["half"].null_count() == df.height - halves.height
    # each writer's rows keep their order
    assert df.group_by("writer", maintain_order=True).agg(
        pl.col("n").diff().drop_nulls().min())["n"].to_list() == [1] * writers


def test_a_buffered_row_holds_no_object_the_garbage_collector_tracks(tmp_path):
    sink = ProcessSink(tmp_path, {"t": TABLE})
    gc.collect()
    before = len(gc.get_objects())
    for n in range(10_000):
        sink.append("t", (1, n, "x", 0.5))
    assert len(gc.get_objects()) - before < 10


def test_rows_beyond_the_bound_are_counted_as_dropped(tmp_path):
    sink = ProcessSink(tmp_path, {"t": TABLE}, max_rows=5)
    for n in range(8):
        sink.append("t", (1, n, "x", None))
    sink.write_columns("t", [[2] * 7, list(range(7)), ["y"] * 7, [None] * 7])
    sink.flush()
    assert sink.dropped["t"] == {"buffer full": 3 + 2}
    assert written(tmp_path).height == 10 == sink.written["t"]


def test_take_leaves_an_incomplete_row_behind():
    buf = [1, "a", 2, "b", 3]
    assert take(buf, 2) == [[1, 2], ["a", "b"]]
    assert buf == [3]
    assert take(buf, 2) is None


def test_a_row_of_the_wrong_width_is_refused_and_the_others_stay_aligned(tmp_path):
    sink = ProcessSink(tmp_path, {"t": TABLE})
    sink.append("t", (1, 1, "a", None))
    with pytest.raises(ValueError, match="3 values, expected 4"):
        sink.append("t", (2, 2, "b"))
    sink.append("t", (3, 3, "c", 1.5))
    sink.flush()
    assert written(tmp_path).rows() == [(1, 1, "a", None), (3, 3, "c", 1.5)]


def test_a_raw_buffer_is_bounded_between_flushes_and_counts_what_it_refuses(tmp_path):
    sink = ProcessSink(tmp_path, {"t": TABLE}, max_rows=5)
    buf, add = sink.raw("t", 2)
    for n in range(9):
        add((n, "x"))
    assert len(buf) == 10
    assert sink.dropped["t"] == {"buffer full": 4}
